"""The floor of a tap's answer, as its own process: a bare python-telegram-bot application whose
one handler answers every tap at once (no database, nothing of ours), long polling.

`python -m bench.ptb_floor_app API_URL TOKEN FIRST COUNT TEXT CONCURRENT [TRANSPORT]` sends users
FIRST … a card with one button TEXT each, prints `READY`, then answers taps, CONCURRENT updates at
a time (PTB's concurrent_updates), until SIGTERM. TRANSPORT `aiohttp`: on manzoori's Bot API
transport (bot.telegram.transport) rather than PTB's default, httpx."""

from __future__ import annotations

import asyncio
import signal
import sys

from telegram import InlineKeyboardButton, InlineKeyboardMarkup, Update
from telegram.ext import Application, CallbackQueryHandler, ContextTypes

from bot.telegram.transport import AiohttpRequest

LONG_POLL = 1


async def _answer(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    assert update.callback_query is not None
    await update.callback_query.answer("ok")


async def main(
    url: str, token: str, first: int, count: int, text: str, concurrent: int, transport: str
) -> None:
    builder = (
        Application.builder()
        .token(token)
        .base_url(f"{url}/bot")
        .base_file_url(f"{url}/file/bot")
        .concurrent_updates(concurrent)
    )
    if transport == "aiohttp":
        builder = builder.request(AiohttpRequest()).get_updates_request(AiohttpRequest(1))
    app = builder.build()
    app.add_handler(CallbackQueryHandler(_answer))
    button = InlineKeyboardMarkup([[InlineKeyboardButton(text, callback_data="a")]])
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    async with app:
        for user_id in range(first, first + count):
            await app.bot.send_message(user_id, "card", reply_markup=button)
        await app.start()
        assert app.updater is not None
        await app.updater.start_polling(poll_interval=0, timeout=LONG_POLL)
        print("READY", flush=True)
        await stop.wait()
        await app.updater.stop()
        await app.stop()


if __name__ == "__main__":
    api, token, first, count, text, concurrent = sys.argv[1:7]
    transport = sys.argv[7] if len(sys.argv) > 7 else "httpx"
    asyncio.run(main(api, token, int(first), int(count), text, int(concurrent), transport))

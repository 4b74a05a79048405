"""The library floor: what the libraries manzoori is built on cost on this machine with none of
manzoori in the way, beside the targets they bound.

- Taps: a python-telegram-bot application whose one handler answers every tap at once (no
  database, no signing, nothing of ours), against the same Bot API emulator in the same process,
  100 taps at once: the same p50 / p99 / max as "Tap to answer", and the CPU its event loop
  spends per tap. No bot answers faster than this one.
- E-mail: a PO's e-mail built with the stdlib (body and CSV attachment, the 7-bit SMTP policy
  bot.outbox.emails uses) and sent with aiosmtplib over one reused connection to the bench's
  SMTP server in another process: CPU ms per message of the thread that renders and sends.
- Statements: one prebuilt SELECT by key through SQLAlchemy's async engine (manzoori's
  make_engine, its SQLite driver), CPU µs per statement.
- A lifecycle's floor: one e-mail and LIFECYCLE_STATEMENTS statements, against the target of
  CPU per lifecycle (its commits, state checks, sealing and audit not counted).
"""

from __future__ import annotations

import asyncio
import email.policy
import email.utils
import time
from email.message import EmailMessage

import aiosmtplib
from sqlalchemy import bindparam, text
from telegram import InlineKeyboardButton, InlineKeyboardMarkup, Update
from telegram.ext import Application, CallbackQueryHandler, ContextTypes

from bench.bot_harness import LONG_POLL, median, percentile
from bench.common import Context, Result
from bench.databases import migrated, sqlite_database
from bench.smtp_server import SinkProcess
from bot.dev.botapi import EmulatedUser, Emulator
from store.engine import make_engine

SECTION = "Library floor"
TAPS = 100  # as many at once as "Tap to answer"
ROUNDS = 3  # bursts; the figures are of the last (the first ones warm the connections up)
QUICK_TAPS = 20
MESSAGES, QUICK_MESSAGES = 1_000, 50
STATEMENTS, QUICK_STATEMENTS = 5_000, 200
POLICY = email.policy.SMTP.clone(cte_type="7bit")  # as bot.outbox.emails
# The fewest statements a lifecycle row has measured (29.1, PostgreSQL, docs/benchmarks.md).
LIFECYCLE_STATEMENTS = 29


async def run(ctx: Context) -> list[Result]:
    """The four rows."""
    taps = await _taps(QUICK_TAPS if ctx.quick else TAPS)
    mail_ms, mail = await _mail(QUICK_MESSAGES if ctx.quick else MESSAGES)
    statement_us, statement = await _statements(ctx, QUICK_STATEMENTS if ctx.quick else STATEMENTS)
    floor_ms = mail_ms + LIFECYCLE_STATEMENTS * statement_us / 1000
    lifecycle = Result(
        SECTION,
        f"a lifecycle: one e-mail and {LIFECYCLE_STATEMENTS} statements",
        {"CPU ms each": f"{floor_ms:.2f}"},
        target="bounds CPU ≤ 4 ms per lifecycle",
        met=floor_ms <= 4.0,
        notes="the two rows above added up; commits, checks, sealing and audit not counted",
    )
    return [taps, mail, statement, lifecycle]


async def _answer(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    assert update.callback_query is not None
    await update.callback_query.answer("ok")


async def _taps(count: int) -> Result:
    """Bursts of `count` taps on a bare python-telegram-bot application."""
    emulator = Emulator().start()
    try:
        base = f"http://127.0.0.1:{emulator.port}/bot"
        app = (
            Application.builder()
            .token(emulator.token)
            .base_url(base)
            .base_file_url(f"http://127.0.0.1:{emulator.port}/file/bot")
            .concurrent_updates(256)
            .build()
        )
        app.add_handler(CallbackQueryHandler(_answer))
        users = [emulator.user(30_001 + n, f"Tapper {n}", started=True) for n in range(count)]
        button = InlineKeyboardMarkup([[InlineKeyboardButton("Approve", callback_data="a")]])
        async with app:
            cards = [
                (
                    user,
                    (await app.bot.send_message(user.id, "card", reply_markup=button)).message_id,
                )
                for user in users
            ]
            await app.start()
            assert app.updater is not None
            await app.updater.start_polling(poll_interval=0, timeout=int(LONG_POLL))
            try:
                for _ in range(ROUNDS):
                    latencies, cpu_ms = await _burst(emulator, cards)
                    await asyncio.sleep(0.2)
            finally:
                await app.updater.stop()
                await app.stop()
    finally:
        await asyncio.to_thread(emulator.stop)
    return Result(
        SECTION,
        f"python-telegram-bot alone, {count} taps at once",
        {
            "p50 ms": f"{median(latencies):.1f}",
            "p99 ms": f"{percentile(latencies, 99):.1f}",
            "max ms": f"{max(latencies):.1f}",
            "CPU ms each": f"{cpu_ms:.2f}",
        },
        target="bounds tap p99 ≤ 50 ms",
        met=percentile(latencies, 99) <= 50.0,
        notes="a handler that only answers; CPU: the event loop's thread (getUpdates, "
        "dispatch, answerCallbackQuery over HTTP), the emulator's threads not included",
    )


async def _burst(
    emulator: Emulator, cards: list[tuple[EmulatedUser, int]]
) -> tuple[list[float], float]:
    """Every user taps at once: ms from each update handed out to its answer, and the CPU ms
    of this thread (the bot's event loop) per tap."""
    cpu = time.thread_time()
    queries = [user.tap(message_id, "Approve") for user, message_id in cards]
    await emulator.wait_for(
        lambda: all(emulator.callback_answer(q) for q in queries), 60, interval=0.005
    )
    cpu_ms = (time.thread_time() - cpu) * 1000 / len(cards)
    latencies = []
    for query_id in queries:
        query = emulator.callback_query(query_id)
        out = emulator.handed_out(query.update_id)
        assert query.answer is not None and out is not None
        latencies.append((query.answer.at - out) * 1000)
    return latencies, cpu_ms


def _po_mail(n: int) -> EmailMessage:
    """An e-mail of the size and shape of a one-line PO's."""
    message = EmailMessage(policy=POLICY)
    message["From"] = "Manzoori <po@shop.example>"
    message["To"] = "orders@bench.example"
    message["Subject"] = f"Purchase order PO-2026-{n:05d} from Shop"
    message["Date"] = email.utils.format_datetime(email.utils.localtime())
    message["Message-ID"] = f"<send-po.PO-2026-{n:05d}.v1@shop.example>"
    message["Idempotency-Key"] = f"send-po:PO-2026-{n:05d}:v1:0123456789ab"
    body = "Dear supplier,\n\nPlease supply:\n 1. SKU-00001 Item × 5 @ 10.00 = 50.00 PKR\n"
    message.set_content(body, charset="utf-8")
    csv = "sku,description,quantity,unit_price_pkr\nSKU-00001,Item,5,10.00\n"
    message.add_attachment(csv, subtype="csv", charset="utf-8", filename=f"PO-{n}.csv")
    return message


async def _mail(count: int) -> tuple[float, Result]:
    """Render `count` e-mails, then send them over one connection."""
    async with SinkProcess() as sink:
        client = aiosmtplib.SMTP(hostname=sink.host, port=sink.port)
        await client.connect()
        try:
            cpu = time.thread_time()
            messages = [_po_mail(n) for n in range(count)]
            rendered = time.thread_time() - cpu
            cpu = time.thread_time()
            for message in messages:
                await client.send_message(message)
            sent = time.thread_time() - cpu
        finally:
            await client.quit()
        accepted = await sink.accepted()
    render_ms, send_ms = rendered * 1000 / count, sent * 1000 / count
    return render_ms + send_ms, Result(
        SECTION,
        "stdlib e-mail and aiosmtplib, one connection",
        {
            "render ms": f"{render_ms:.2f}",
            "send ms": f"{send_ms:.2f}",
            "CPU ms each": f"{render_ms + send_ms:.2f}",
        },
        notes=f"{accepted.messages} of {count} messages accepted",
    )


async def _statements(ctx: Context, count: int) -> tuple[float, Result]:
    """A prebuilt SELECT by key, `count` times, each in its own read transaction."""
    db = sqlite_database(ctx.sqlite_dir, "stack")
    await (await migrated(db)).dispose()
    engine = make_engine(db.url)
    select = text("SELECT state FROM jobs WHERE id = :id").bindparams(bindparam("id"))
    try:
        async with engine.connect() as conn:
            for _ in range(20):  # warm: the statement cached, the connection open
                await conn.execute(select, {"id": "none"})
            await conn.rollback()
            cpu = time.thread_time()
            for _ in range(count):
                await conn.execute(select, {"id": "none"})
            each_us = (time.thread_time() - cpu) * 1e6 / count
            await conn.rollback()
    finally:
        await engine.dispose()
    return each_us, Result(
        SECTION,
        "SQLAlchemy async, one prebuilt SELECT, SQLite",
        {"CPU µs each": f"{each_us:.0f}"},
        notes="manzoori's engine and SQLite driver, one connection",
    )

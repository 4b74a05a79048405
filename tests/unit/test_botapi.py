"""The Bot API emulator, driven by python-telegram-bot's real Bot and Application."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dtm
import hashlib
import hmac
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs, parse_qsl

import pytest
import telegram
import tornado.httpserver
import tornado.web
from telegram import InlineKeyboardButton, InlineKeyboardMarkup, Update, WebAppInfo
from telegram.error import (
    BadRequest,
    Conflict,
    EndPointNotFound,
    Forbidden,
    InvalidToken,
    NetworkError,
    RetryAfter,
    TimedOut,
)
from telegram.ext import Application, CallbackQueryHandler, CommandHandler, ContextTypes
from telegram.request import HTTPXRequest

from bot.dev.botapi import (
    NOT_MODIFIED,
    QUERY_TOO_OLD,
    EntityParseError,
    parse_html,
    parse_markdown_v2,
)
from tests.helpers.botapi import botapi_fixture  # noqa: F401 - provides `botapi`
from tests.helpers.net import free_port

ALICE = 1001


def keyboard(*buttons: tuple[str, str]) -> InlineKeyboardMarkup:
    """One row of callback buttons."""
    return InlineKeyboardMarkup([[InlineKeyboardButton(t, callback_data=d) for t, d in buttons]])


@pytest.fixture
async def bot(botapi) -> AsyncIterator[telegram.Bot]:
    """PTB's Bot, initialized against the emulator (initialize calls getMe)."""
    async with botapi.ptb_bot() as bot:
        yield bot


@contextlib.asynccontextmanager
async def running(app: Application, **webhook: Any) -> AsyncIterator[Application]:
    """Initialize and start the app and its updater (polling, or a webhook if given); stop all."""
    async with app:
        await app.start()
        if webhook:
            await app.updater.start_webhook(**webhook)
        else:
            await app.updater.start_polling(timeout=1)
        try:
            yield app
        finally:
            await app.updater.stop()
            await app.stop()


# -- the parsers, alone -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("html", "error"),
    [
        ("a < b", 'Unsupported start tag "" at byte offset 2'),
        ("Total: <foo>5</foo>", 'Unsupported start tag "foo" at byte offset 7'),
        ("ñ <br/>", 'Unsupported start tag "br/" at byte offset 3'),  # offsets count bytes
        ("<b>x", 'Can\'t find end tag corresponding to start tag "b"'),
        ("<b><i>x</b></i>", 'Unmatched end tag at byte offset 7, expected "</i>", found "</b>"'),
        ("x</b>", "Unexpected end tag at byte offset 1"),
        ("x <b", "Unclosed start tag at byte offset 2"),
        ("<b>x</b", "Unclosed end tag at byte offset 4"),
        ("<span>x</span>", 'Tag "span" must have class "tg-spoiler" at byte offset 0'),
        ('<a href="x"', "Unclosed start tag at byte offset 0"),
        ("<a href=x/>y</a>", "Unexpected end of name token at byte offset 8"),
        ("AT&T", 'Character "&" at byte offset 2 starts no entity'),
    ],
)
def test_html_errors_are_tdlibs(html: str, error: str) -> None:
    with pytest.raises(EntityParseError) as caught:
        parse_html(html)
    assert str(caught.value).startswith(error)


def test_html_entities_use_utf16_offsets_and_decode_references() -> None:
    text, entities = parse_html(
        '😀 <b>PO&#45;7</b> &lt;<a href="https://x.test/?a=1&amp;b=2">link</a>&gt; '
        '<pre><code class="language-python">x</code></pre><tg-spoiler>s</tg-spoiler>'
    )
    assert text == "😀 PO-7 <link> xs"
    assert entities == [
        {"type": "bold", "offset": 3, "length": 4},
        {"type": "text_link", "offset": 9, "length": 4, "url": "https://x.test/?a=1&b=2"},
        {"type": "pre", "offset": 15, "length": 1, "language": "python"},
        {"type": "spoiler", "offset": 16, "length": 1},
    ]
    assert parse_html("AT&T", strict_ampersand=False) == ("AT&T", [])  # Telegram's own leniency


def test_markdown_v2_needs_escapes() -> None:
    assert parse_markdown_v2(r"*PO\-7* costs _12\.50_") == (
        "PO-7 costs 12.50",
        [
            {"type": "bold", "offset": 0, "length": 4},
            {"type": "italic", "offset": 11, "length": 5},
        ],
    )
    with pytest.raises(EntityParseError, match=r"Character '\.' is reserved"):
        parse_markdown_v2("Total 12.50")
    with pytest.raises(EntityParseError, match=r"Can't find end of Bold entity at byte offset 0"):
        parse_markdown_v2("*open")


# -- identity, tokens, methods ----------------------------------------------------------------


async def test_get_me_and_tokens(botapi, bot: telegram.Bot) -> None:
    me = await bot.get_me()
    assert (me.id, me.username, me.is_bot) == (botapi.bot_id, botapi.bot_username, True)

    wrong = telegram.Bot(
        f"{botapi.bot_id}:{'x' * 35}", base_url=botapi.base_url, base_file_url=botapi.base_file_url
    )
    with pytest.raises(InvalidToken, match=r"was rejected by the server"):
        await wrong.initialize()
    assert botapi.calls[-1].status == 401
    assert botapi.calls[-1].description == "Unauthorized"

    malformed = telegram.Bot(
        "not-a-token", base_url=botapi.base_url, base_file_url=botapi.base_file_url
    )
    with pytest.raises(InvalidToken):
        await malformed.initialize()
    assert botapi.calls[-1].status == 404

    with pytest.raises(EndPointNotFound):
        await bot.do_api_request("sendPigeon", api_kwargs={"chat_id": ALICE})
    assert botapi.unimplemented_calls == ["sendPigeon"]
    botapi.clear_unimplemented_calls()  # called on purpose: keep the fixture's check quiet


# -- getUpdates -------------------------------------------------------------------------------


async def test_long_poll_waits_until_an_update_arrives(botapi, bot: telegram.Bot) -> None:
    alice = botapi.user(ALICE, "Alice", "alice")
    started = time.monotonic()
    poll = asyncio.create_task(bot.get_updates(timeout=5))
    await asyncio.sleep(0.3)
    assert not poll.done()  # really waiting: nothing to return yet
    alice.send_text("/start hello")
    updates = await asyncio.wait_for(poll, 2)
    elapsed = time.monotonic() - started
    assert 0.3 <= elapsed < 1.5
    assert updates[0].message.text == "/start hello"
    assert updates[0].message.entities[0].type == "bot_command"
    assert alice.started

    started = time.monotonic()
    assert await bot.get_updates(offset=updates[-1].update_id + 1, timeout=0.4) == ()
    assert time.monotonic() - started >= 0.4  # an empty answer only after the timeout


async def test_offset_confirms_and_limit_cuts(botapi, bot: telegram.Bot) -> None:
    alice = botapi.user(ALICE, "Alice")
    for text in ("/start", "one", "two"):
        alice.send_text(text)
    first = await bot.get_updates()
    assert [u.message.text for u in first] == ["/start", "one", "two"]
    assert [u.message.text for u in await bot.get_updates()] == ["/start", "one", "two"]
    # An offset confirms every update below it: they are gone for good.
    rest = await bot.get_updates(offset=first[1].update_id)
    assert [u.message.text for u in rest] == ["one", "two"]
    assert [u.message.text for u in await bot.get_updates(limit=1)] == ["one"]
    assert await bot.get_updates(offset=first[-1].update_id + 1) == ()
    assert botapi.pending_update_ids == []


async def test_allowed_updates_and_redelivery(botapi, bot: telegram.Bot) -> None:
    alice = botapi.user(ALICE, "Alice", started=True)
    sent = await bot.send_message(ALICE, "Approve?", reply_markup=keyboard(("Yes", "y")))
    assert await bot.get_updates(allowed_updates=["callback_query"]) == ()
    text = alice.send_text("ignored")  # not created at all: the bot did not ask for messages
    query_id = alice.tap(sent.message_id, "Yes")
    updates = await bot.get_updates()
    assert [u.callback_query.id for u in updates] == [query_id]
    assert botapi.dropped_update_ids == [text.update_id]

    # A duplicate delivery carries the same update_id, even after the offset confirmed it.
    await bot.get_updates(offset=updates[0].update_id + 1)
    botapi.redeliver(updates[0].update_id)
    again = await bot.get_updates(offset=updates[0].update_id + 1)
    assert [u.update_id for u in again] == [updates[0].update_id]


async def test_an_update_is_stamped_when_it_first_goes_out(botapi, bot: telegram.Bot) -> None:
    alice = botapi.user(ALICE, "Alice", started=True)
    sent = await bot.send_message(ALICE, "Approve?", reply_markup=keyboard(("Yes", "y")))
    query_id = alice.tap(sent.message_id, "Yes")
    update_id = botapi.callback_query(query_id).update_id
    assert botapi.handed_out(update_id) is None  # queued, not yet taken by the bot
    await asyncio.sleep(0.05)
    before = time.monotonic()
    (update,) = await bot.get_updates()
    first = botapi.handed_out(update_id)
    assert first is not None and before <= first <= time.monotonic()
    assert update.update_id == update_id
    # Handed out again (not confirmed yet): the first hand-out stands.
    await bot.get_updates()
    assert botapi.handed_out(update_id) == first
    await update.callback_query.answer("ok")
    assert botapi.callback_answer(query_id).at >= first


async def test_second_bot_instance_ends_the_first_poll(botapi, bot: telegram.Bot) -> None:
    # Two Bot objects, as two processes: one Bot queues its own getUpdates calls (pool of one).
    first = asyncio.create_task(bot.get_updates(timeout=5))
    await asyncio.sleep(0.2)
    async with botapi.ptb_bot() as other:
        second = asyncio.create_task(other.get_updates(timeout=0.3))
        with pytest.raises(Conflict) as caught:
            await asyncio.wait_for(first, 1)
        assert await second == ()
    assert str(caught.value) == (
        "Conflict: terminated by other getUpdates request; "
        "make sure that only one bot instance is running"
    )


async def test_stopping_during_a_long_poll_drops_the_connection(botapi, bot: telegram.Bot) -> None:
    poll = asyncio.create_task(bot.get_updates(timeout=5))
    await asyncio.sleep(0.2)
    await asyncio.to_thread(botapi.stop)
    # A disconnect, as from a server going away, not a malformed answer.
    with pytest.raises(NetworkError, match="Server disconnected without sending a response"):
        await poll


# -- sending, formatting, keyboards -----------------------------------------------------------


async def test_html_is_checked_like_telegram(botapi, bot: telegram.Bot) -> None:
    botapi.user(ALICE, "Alice").send_text("/start")
    sent = await bot.send_message(ALICE, "<b>PO-7</b> &amp; co", parse_mode="HTML")
    assert sent.text == "PO-7 & co"
    assert sent.entities[0].type == "bold"
    stored = botapi.last_message(ALICE)
    assert (stored.text, stored.raw, stored.parse_mode) == ("PO-7 & co", sent.text_html, "HTML")

    with pytest.raises(BadRequest) as caught:
        await bot.send_message(ALICE, "Total: <foo>5</foo>", parse_mode="HTML")
    # PTB strips "Bad Request: " and capitalizes, which lower-cases the rest.
    assert (
        str(caught.value) == 'Can\'t parse entities: unsupported start tag "foo" at byte offset 7'
    )
    assert botapi.calls[-1].description == (
        'Bad Request: can\'t parse entities: Unsupported start tag "foo" at byte offset 7'
    )
    with pytest.raises(BadRequest, match=r"can't find end tag corresponding to start tag"):
        await bot.send_message(ALICE, "<b>unclosed", parse_mode="HTML")

    # The 4096 limit counts the text after entity parsing, in code points.
    await bot.send_message(ALICE, "<b>" + "é" * 4096 + "</b>", parse_mode="HTML")
    with pytest.raises(BadRequest, match=r"^Message is too long$"):
        await bot.send_message(ALICE, "é" * 4097)
    with pytest.raises(BadRequest, match=r"^Message text is empty$"):
        await bot.send_message(ALICE, "<b> </b>", parse_mode="HTML")
    assert len(botapi.messages(ALICE)) == 2


async def test_keyboards_are_checked(botapi, bot: telegram.Bot) -> None:
    botapi.user(ALICE, "Alice").send_text("/start")
    ok = "é" * 32  # 64 bytes: the limit counts UTF-8 bytes
    await bot.send_message(ALICE, "fits", reply_markup=keyboard(("A", ok)))
    with pytest.raises(BadRequest, match=r"^Button_data_invalid$"):
        await bot.send_message(ALICE, "too long", reply_markup=keyboard(("A", "x" * 65)))
    assert botapi.calls[-1].description == "Bad Request: BUTTON_DATA_INVALID"
    bare = InlineKeyboardMarkup([[InlineKeyboardButton("no action")]])
    with pytest.raises(BadRequest, match=r"text buttons are unallowed in the inline keyboard"):
        await bot.send_message(ALICE, "bare", reply_markup=bare)
    assert [m.text for m in botapi.messages(ALICE)] == ["fits"]


@pytest.mark.parametrize(
    ("url", "taken"),
    [
        ("https://po.example/app/po/PO-1", True),  # https: what Telegram wants
        ("http://127.0.0.1:8080/app/po/PO-1", True),  # loopback over http: the emulator's leeway
        ("http://localhost:8080/app", True),  # the same, by name
        ("http://[::1]:8080/app", True),  # and over IPv6
        ("http://po.example/app/po/PO-1", False),  # plain http elsewhere: refused
        ("ftp://po.example/app", False),  # not a web page at all
        ("https:///no-host", False),  # https without a host
    ],
)
async def test_web_app_buttons_want_https(botapi, bot: telegram.Bot, url: str, taken: bool):
    botapi.user(ALICE, "Alice").send_text("/start")
    markup = InlineKeyboardMarkup([[InlineKeyboardButton("Open", web_app=WebAppInfo(url))]])
    if taken:
        await bot.send_message(ALICE, "page", reply_markup=markup)
        assert botapi.last_message(ALICE).button("Open").web_app == url
        return
    with pytest.raises(BadRequest, match=r"web app url .* is invalid: only https links"):
        await bot.send_message(ALICE, "page", reply_markup=markup)
    assert botapi.calls[-1].description == (
        f"Bad Request: inline keyboard button Web App URL '{url}' is invalid: "
        "Only HTTPS links are allowed"
    )


async def test_opening_a_web_app_hands_the_page_signed_init_data(botapi, bot: telegram.Bot):
    alice = botapi.user(ALICE, "Alice", username="alice")
    alice.send_text("/start")
    markup = InlineKeyboardMarkup(
        [[InlineKeyboardButton("Open", web_app=WebAppInfo("https://po.example/app/po/PO-1"))]]
    )
    message = await bot.send_message(ALICE, "page", reply_markup=markup)
    url = alice.open_web_app(message.message_id, "Open")
    page, fragment = url.split("#", 1)
    assert page == "https://po.example/app/po/PO-1"
    [data] = parse_qs(fragment)["tgWebAppData"]
    fields = dict(parse_qsl(data))
    secret = hmac.new(b"WebAppData", botapi.token.encode(), hashlib.sha256).digest()
    check = "\n".join(f"{k}={v}" for k, v in sorted(fields.items()) if k != "hash")
    assert fields["hash"] == hmac.new(secret, check.encode(), hashlib.sha256).hexdigest()
    user = json.loads(fields["user"])
    assert (user["id"], user["first_name"], user["username"]) == (ALICE, "Alice", "alice")
    assert "is_bot" not in user and fields["chat_type"] == "private"
    assert abs(int(fields["auth_date"]) - time.time()) < 5
    with pytest.raises(LookupError, match="opens no Mini App"):
        alice.open_web_app(
            (await bot.send_message(ALICE, "x", reply_markup=keyboard(("B", "b")))).message_id, "B"
        )


async def test_who_may_be_written_to(botapi, bot: telegram.Bot) -> None:
    alice = botapi.user(ALICE, "Alice")
    with pytest.raises(
        Forbidden, match=r"^Forbidden: bot can't initiate conversation with a user$"
    ):
        await bot.send_message(ALICE, "hello")
    with pytest.raises(Forbidden, match=r"bot can't initiate conversation"):
        await bot.send_document(ALICE, b"x", filename="a.txt")
    with pytest.raises(BadRequest, match=r"^Chat not found$"):
        await bot.send_message(999, "hello")
    alice.send_text("/start")
    await bot.send_message(ALICE, "hello")
    alice.block()
    with pytest.raises(Forbidden, match=r"^Forbidden: bot was blocked by the user$"):
        await bot.send_message(ALICE, "still there?")
    statuses = [u.my_chat_member.new_chat_member.status for u in (await bot.get_updates())[1:]]
    assert statuses == ["kicked"]


async def test_force_reply_and_replies(botapi, bot: telegram.Bot) -> None:
    alice = botapi.user(ALICE, "Alice", started=True)
    ask = await bot.send_message(ALICE, "Why reject PO-7?", reply_markup=telegram.ForceReply())
    assert ask.reply_markup is None  # Telegram echoes only inline keyboards
    assert botapi.last_message(ALICE).reply_markup == {"force_reply": True}
    alice.reply_to(ask, "Too expensive")
    (update,) = await bot.get_updates()
    assert update.message.reply_to_message.message_id == ask.message_id
    with pytest.raises(BadRequest, match=r"^Message to be replied not found$"):
        await bot.send_message(ALICE, "x", reply_to_message_id=999)
    alice.block()
    with pytest.raises(RuntimeError, match="unblock"):
        alice.send_text("hello?")  # a client shows "Restart" instead of the input field


async def test_edits_and_not_modified(botapi, bot: telegram.Bot) -> None:
    alice = botapi.user(ALICE, "Alice", started=True)
    sent = await bot.send_message(
        ALICE, "<b>PO-7</b>: waiting", parse_mode="HTML", reply_markup=keyboard(("Approve", "a"))
    )
    with pytest.raises(BadRequest) as caught:
        # Same text after parsing, same entities, same keyboard: Telegram refuses.
        await bot.edit_message_text(
            "<strong>PO-7</strong>: waiting",
            ALICE,
            sent.message_id,
            parse_mode="HTML",
            reply_markup=keyboard(("Approve", "a")),
        )
    assert botapi.calls[-1].description == NOT_MODIFIED
    assert str(caught.value).startswith("Message is not modified: specified new message content")
    with pytest.raises(BadRequest, match=r"^Message is not modified"):
        await bot.edit_message_reply_markup(
            ALICE, sent.message_id, reply_markup=keyboard(("Approve", "a"))
        )

    # An edit without reply_markup drops the keyboard, as on Telegram.
    await bot.edit_message_text("PO-7: approved", ALICE, sent.message_id)
    now = botapi.message(ALICE, sent.message_id)
    assert (now.text, now.buttons, now.edited) == ("PO-7: approved", [], True)
    assert [v.text for v in now.versions] == ["PO-7: waiting", "PO-7: approved"]
    assert now.versions[0].raw == "<b>PO-7</b>: waiting"
    with pytest.raises(BadRequest, match=r"^Message is not modified"):
        await bot.edit_message_reply_markup(ALICE, sent.message_id)
    with pytest.raises(BadRequest, match=r"^Message to edit not found$"):
        await bot.edit_message_text("x", ALICE, 4242)
    mine = alice.send_text("my own words")
    with pytest.raises(BadRequest, match=r"^Message can't be edited$"):
        await bot.edit_message_text("x", ALICE, mine.message_id)
    with pytest.raises(LookupError):
        alice.tap(sent.message_id, "Approve")  # the keyboard is gone


# -- callback queries -------------------------------------------------------------------------


async def test_callback_answers(botapi, bot: telegram.Bot) -> None:
    alice = botapi.user(ALICE, "Alice", started=True)
    sent = await bot.send_message(ALICE, "Approve?", reply_markup=keyboard(("Yes", "po:7:yes")))
    query_id = alice.tap(sent, "Yes")
    (update,) = await bot.get_updates()
    assert (update.callback_query.data, update.callback_query.message.message_id) == (
        "po:7:yes",
        sent.message_id,
    )
    assert await bot.answer_callback_query(query_id, text="Approved", show_alert=True)
    answer = botapi.callback_answer(query_id)
    assert (answer.text, answer.show_alert) == ("Approved", True)
    with pytest.raises(BadRequest, match=r"^Query is too old and response timeout expired"):
        await bot.answer_callback_query(query_id)  # a second answer to the same query
    assert botapi.calls[-1].description == QUERY_TOO_OLD

    late = alice.tap_data(sent, "po:8:yes")  # forged data, from a real bot message
    botapi.advance(15.5)
    with pytest.raises(BadRequest, match=r"^Query is too old and response timeout expired"):
        await bot.answer_callback_query(late)
    assert botapi.callback_query(late).answer is None


# -- failures ---------------------------------------------------------------------------------


async def test_scripted_429(botapi, bot: telegram.Bot, monkeypatch) -> None:
    # Without it, RetryAfter.retry_after warns that it will become a timedelta.
    monkeypatch.setenv("PTB_TIMEDELTA", "true")
    botapi.user(ALICE, "Alice", started=True)
    botapi.user(1002, "Bob", started=True)
    botapi.fail_next("sendMessage", status=429, retry_after=7, chat_id=ALICE)
    await bot.send_message(1002, "other chats are not limited")
    with pytest.raises(RetryAfter) as caught:
        await bot.send_message(ALICE, "hello")
    assert caught.value.retry_after == dtm.timedelta(seconds=7)
    assert botapi.calls[-1].description == "Too Many Requests: retry after 7"
    await bot.send_message(ALICE, "hello")  # only the next call was scripted

    botapi.enable_flood_control(per_chat=1, per_chat_window=1.0)
    with pytest.raises(BadRequest):
        await bot.send_message(ALICE, "<b>refused", parse_mode="HTML")  # sent nothing: not counted
    await bot.send_message(ALICE, "one")
    with pytest.raises(RetryAfter) as caught:
        await bot.send_message(ALICE, "two")
    assert caught.value.retry_after == dtm.timedelta(seconds=1)
    botapi.advance(1.0)
    await bot.send_message(ALICE, "two")
    assert [m.text for m in botapi.messages(ALICE)] == ["hello", "one", "two"]


async def test_5xx_and_stalls(botapi, bot: telegram.Bot) -> None:
    botapi.user(ALICE, "Alice", started=True)
    botapi.fail_next("sendMessage", status=500)
    with pytest.raises(NetworkError, match=r"^Internal Server Error$"):
        await bot.send_message(ALICE, "a")
    botapi.fail_next("sendMessage", status=502, applied=True)
    with pytest.raises(NetworkError, match=r"Bad Gateway \(502\)") as caught:
        await bot.send_message(ALICE, "b")
    assert not isinstance(caught.value, BadRequest)
    # applied=True: the answer was lost, but the message is in the chat.
    assert [m.text for m in botapi.messages(ALICE)] == ["b"]

    botapi.stall_next("sendMessage", 0.6)
    impatient = botapi.ptb_bot(request=HTTPXRequest(read_timeout=0.2))
    async with impatient:
        with pytest.raises(TimedOut):
            await impatient.send_message(ALICE, "c")
    await botapi.wait_for(lambda: len(botapi.messages(ALICE)) == 2)  # sent all the same


# -- files and commands -----------------------------------------------------------------------


async def test_document_roundtrip(botapi, bot: telegram.Bot) -> None:
    alice = botapi.user(ALICE, "Alice")
    sheet = b"sku,quantity\nA-1,3\n"
    alice.send_document(sheet, "restock ñ.csv", "text/csv", caption="for May")
    (update,) = await bot.get_updates()
    document = update.message.document
    assert (document.file_name, document.mime_type, document.file_size) == (
        "restock ñ.csv",
        "text/csv",
        len(sheet),
    )
    file = await bot.get_file(document.file_id)
    assert file.file_path.startswith(botapi.base_file_url)
    assert bytes(await file.download_as_bytearray()) == sheet

    pdf = b"%PDF-1.4\n" + bytes(range(256)) * 40
    sent = await bot.send_document(
        ALICE, pdf, filename="PO-7.pdf", caption="<b>PO-7</b>", parse_mode="HTML"
    )
    (stored,) = botapi.documents(ALICE)
    assert (stored.document.data, stored.document.file_name, stored.caption) == (
        pdf,
        "PO-7.pdf",
        "PO-7",
    )
    again = await bot.get_file(sent.document.file_id)
    assert bytes(await again.download_as_bytearray()) == pdf
    with pytest.raises(BadRequest, match=r"^Wrong file_id or the file is temporarily unavailable$"):
        await bot.get_file("BQACAgIAAxkBAAnope")
    with pytest.raises(BadRequest, match=r"^File must be non-empty$"):
        await bot.send_document(ALICE, b"", filename="empty.pdf")


async def test_commands_are_stored_per_scope(botapi, bot: telegram.Bot) -> None:
    await bot.set_my_commands([("start", "Start"), ("jobs", "Waiting approvals")])
    await bot.set_my_commands(
        [("start", "Démarrer")],
        scope=telegram.BotCommandScopeChat(ALICE),
        language_code="fr",
    )
    assert [c.command for c in await bot.get_my_commands()] == ["start", "jobs"]
    french = await bot.get_my_commands(
        scope=telegram.BotCommandScopeChat(ALICE), language_code="fr"
    )
    assert [(c.command, c.description) for c in french] == [("start", "Démarrer")]
    assert botapi.commands() == [
        {"command": "start", "description": "Start"},
        {"command": "jobs", "description": "Waiting approvals"},
    ]
    with pytest.raises(BadRequest, match=r"^Bot_command_invalid$"):
        await bot.set_my_commands([("Start", "capital letters are not allowed")])
    await bot.delete_my_commands()
    assert await bot.get_my_commands() == ()


async def test_menu_buttons_are_checked_and_kept_per_chat(botapi, bot: telegram.Bot) -> None:
    alice = botapi.user(ALICE, "Alice")
    alice.send_text("/start")
    url = "https://po.example/app/new"
    await bot.set_chat_menu_button(ALICE, telegram.MenuButtonWebApp("Catalogue", WebAppInfo(url)))
    assert botapi.menu_button(ALICE) == {
        "type": "web_app", "text": "Catalogue", "web_app": {"url": url},
    }  # fmt: skip
    shown = await bot.get_chat_menu_button(ALICE)
    assert isinstance(shown, telegram.MenuButtonWebApp) and shown.web_app.url == url
    assert alice.open_menu_app().startswith(f"{url}#tgWebAppData=")
    assert botapi.menu_button(ALICE + 1) == {"type": "default"}  # another chat: untouched
    plain = telegram.MenuButtonWebApp("Catalogue", WebAppInfo("http://po.example/app/new"))
    with pytest.raises(BadRequest, match="only https links"):
        await bot.set_chat_menu_button(ALICE, plain)
    with pytest.raises(BadRequest, match=r"^Chat not found$"):
        await bot.set_chat_menu_button(987654, telegram.MenuButtonCommands())
    await bot.set_chat_menu_button(ALICE, telegram.MenuButtonDefault())
    with pytest.raises(LookupError, match="opens no Mini App"):
        alice.open_menu_app()


# -- a whole Application ------------------------------------------------------------------------


async def _start(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    await update.message.reply_text(
        f"Welcome, <b>{update.effective_user.first_name}</b>",
        parse_mode="HTML",
        reply_markup=keyboard(("Approve", "approve")),
    )


async def _tapped(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    await update.callback_query.answer("Done")
    await update.callback_query.edit_message_text("Approved")


async def test_application_with_polling(botapi) -> None:
    app = botapi.application_builder().build()
    app.add_handler(CommandHandler("start", _start))
    app.add_handler(CallbackQueryHandler(_tapped))
    alice = botapi.user(ALICE, "Alice", username="alice")
    async with running(app):
        alice.send_text("/start")
        welcome = await alice.next_message()
        assert (welcome.text, welcome.button_texts) == ("Welcome, Alice", ["Approve"])
        query_id = alice.tap(welcome, "Approve")
        await botapi.wait_for(lambda: botapi.message(ALICE, welcome.message_id).edited)
        assert botapi.callback_answer(query_id).text == "Done"
        assert botapi.message(ALICE, welcome.message_id).text == "Approved"
    methods = [c.method for c in botapi.calls]
    # What PTB calls around polling: getMe (initialize), deleteWebhook (bootstrap), then
    # getUpdates; stop() ends with one more getUpdates, timeout 0, to confirm what it fetched.
    assert methods[:3] == ["getMe", "deleteWebhook", "getUpdates"]
    assert methods[-1] == "getUpdates"
    assert botapi.calls[-1].params["timeout"] == "0"
    assert botapi.pending_update_ids == []


async def test_redelivered_update_reaches_the_handler_twice(botapi) -> None:
    seen: list[int] = []

    async def record(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        seen.append(update.update_id)

    app = botapi.application_builder().build()
    app.add_handler(CommandHandler("start", record))
    alice = botapi.user(ALICE, "Alice")
    async with running(app):
        start = alice.send_text("/start")
        await botapi.wait_for(lambda: seen)
        botapi.redeliver(start.update_id)  # deduplication is the bot's job, not PTB's
        await botapi.wait_for(lambda: len(seen) == 2)
    assert seen == [start.update_id, start.update_id]


async def test_application_with_webhook(botapi, bot: telegram.Bot) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/hook"
    app = botapi.application_builder().build()
    app.add_handler(CommandHandler("start", _start))
    alice = botapi.user(ALICE, "Alice")
    webhook = {"listen": "127.0.0.1", "port": port, "url_path": "hook", "webhook_url": url}
    async with running(app, **webhook, secret_token="s3cret"):
        assert (botapi.webhook.url, botapi.webhook.secret_token) == (url, "s3cret")
        with pytest.raises(Conflict, match=r"^Conflict: can't use getUpdates method while webhook"):
            await bot.get_updates()

        start = alice.send_text("/start")
        welcome = await alice.next_message()
        assert welcome.text == "Welcome, Alice"
        delivery = botapi.webhook_deliveries[0]
        assert (delivery.update_id, delivery.status) == (start.update_id, 200)

        # PTB's webhook server: 403 without the header, with a wrong one, or without exactly
        # "application/json"; the reason phrase says which.
        missing = await botapi.post_to_webhook(start.update_id, secret_token=None)
        assert (missing.status, missing.reason) == (403, "Request did not include the secret token")
        wrong = await botapi.post_to_webhook(start.update_id, secret_token="guess")
        assert (wrong.status, wrong.reason) == (403, "Request had the wrong secret token")
        charset = await botapi.post_to_webhook(
            start.update_id, content_type="application/json; charset=utf-8"
        )
        assert (charset.status, charset.reason) == (403, "Forbidden")
        right = await botapi.post_to_webhook(start.update_id)
        assert right.status == 200
        await botapi.wait_for(lambda: len(alice.messages()) == 2)  # the repost was handled too
    assert [c.method for c in botapi.calls_to("setWebhook")] == ["setWebhook"]


async def test_webhook_failures_keep_the_update(botapi, bot: telegram.Bot) -> None:
    botapi.webhook_retry_delay = 0.05
    await bot.set_webhook(f"http://127.0.0.1:{free_port()}/nobody", secret_token="s")
    with pytest.raises(BadRequest, match=r"^Secret token contains unallowed characters$"):
        await bot.set_webhook("http://127.0.0.1:1/x", secret_token="a+b")
    with pytest.raises(BadRequest, match=r"loopback"):
        await bot.set_webhook("https://example.com/hook")
    sent = botapi.user(ALICE, "Alice").send_text("/start")
    await botapi.wait_for(lambda: len(botapi.webhook_deliveries) >= 2)  # retried
    info = await bot.get_webhook_info()
    assert info.pending_update_count == 1
    assert info.last_error_message
    await bot.delete_webhook()
    (update,) = await bot.get_updates()  # still there for polling
    assert update.update_id == sent.update_id


@contextlib.asynccontextmanager
async def webhook_server(
    answer: Callable[[dict[str, Any]], Awaitable[dict[str, Any] | None]],
) -> AsyncIterator[tuple[str, list[tuple[int, float, float]]]]:
    """A webhook of the test's own on 127.0.0.1: each POST is answered with `answer(update)`
    as its JSON body (None: an empty 200). Yields its URL and, per POST, the update id, when it
    arrived and when it was answered."""
    seen: list[tuple[int, float, float]] = []

    class Hook(tornado.web.RequestHandler):
        async def post(self) -> None:
            update, began = json.loads(self.request.body), time.monotonic()
            body = await answer(update)
            seen.append((update["update_id"], began, time.monotonic()))
            if body is not None:
                self.set_header("Content-Type", "application/json")
                self.finish(json.dumps(body))

    port = free_port()
    server = tornado.httpserver.HTTPServer(tornado.web.Application([(r"/hook", Hook)]))
    server.listen(port, "127.0.0.1")
    try:
        yield f"http://127.0.0.1:{port}/hook", seen
    finally:
        server.stop()
        await server.close_all_connections()


async def test_a_call_in_the_webhook_answer_is_executed_and_a_bad_one_dropped(
    botapi, bot: telegram.Bot
) -> None:
    async def answer(update: dict[str, Any]) -> dict[str, Any] | None:
        query = update.get("callback_query")
        if query is None:
            return None
        if query["data"] == "no":  # a query id Telegram never gave: dropped silently
            return {"method": "answerCallbackQuery", "callback_query_id": "123", "text": "x"}
        return {"method": "answerCallbackQuery", "callback_query_id": query["id"], "text": "OK"}

    alice = botapi.user(ALICE, "Alice", started=True)
    sent = await bot.send_message(ALICE, "Sure?", reply_markup=keyboard(("Yes", "y"), ("No", "no")))
    async with webhook_server(answer) as (url, seen):
        await bot.set_webhook(url)
        yes = alice.tap(sent.message_id, "Yes")
        assert (await botapi.wait_for(lambda: botapi.callback_answer(yes))).text == "OK"
        no = alice.tap(sent.message_id, "No")
        await botapi.wait_for(lambda: len(seen) == 2)
        await botapi.wait_for(lambda: not botapi.pending_update_ids)  # delivered all the same
    replies = botapi.calls_to("answerCallbackQuery")
    assert [(c.in_reply, c.status) for c in replies] == [(True, 200), (True, 400)]
    assert botapi.callback_answer(no) is None  # the phone still waits for an answer
    assert not botapi.internal_errors


async def test_webhook_posts_run_side_by_side_but_in_order_within_a_chat(
    botapi, bot: telegram.Bot
) -> None:
    async def answer(update: dict[str, Any]) -> None:
        await asyncio.sleep(0.3)  # a slow handler: what is in flight meanwhile shows

    alice, bob = botapi.user(ALICE, "Alice"), botapi.user(ALICE + 1, "Bob")
    async with webhook_server(answer) as (url, seen):
        first, second = alice.send_text("one"), alice.send_text("two")
        other = bob.send_text("hi")
        await bot.set_webhook(url, max_connections=40)
        await botapi.wait_for(lambda: len(seen) == 3, timeout=5)
    spans = {update_id: (began, ended) for update_id, began, ended in seen}
    one, two, hi = (spans[m.update_id] for m in (first, second, other))
    assert two[0] >= one[1]  # Alice's second waited for her first
    assert hi[0] < one[1]  # Bob's went while Alice's first was in flight

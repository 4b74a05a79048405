"""A local Telegram Bot API, strict like the real one: for the end-to-end tests and `manzoori demo`.

python-telegram-bot talks to it through ``ApplicationBuilder().base_url(emu.base_url)
.base_file_url(emu.base_file_url)``. It serves ``{base}/bot{token}/{method}`` (JSON, form-urlencoded
or multipart bodies, GET or POST) and ``{base}/file/bot{token}/{file_path}``, and answers with the
real envelope and the real error descriptions, so PTB raises the same exceptions it would raise
against Telegram.

Threading: the server runs in its own thread with its own asyncio loop, so a test can run the bot
in pytest-asyncio's loop next to it. Every test-side method is synchronous and thread-safe (it takes
the emulator's lock, changes state and wakes a waiting long poll), except the ones that must wait
for the bot: ``wait_for``, ``EmulatedUser.next_message`` and ``post_to_webhook`` are coroutines to
await in the test's loop, so the bot keeps running while the test waits. Never block the test's
loop (time.sleep, a synchronous HTTP call to the bot's webhook): the bot runs in that loop.

Usage (the ``botapi`` fixture of tests/helpers/botapi.py is ``with Emulator() as emu``)::

    app = botapi.application_builder().build()  # token, base_url and base_file_url set
    app.add_handler(CommandHandler("start", start))
    async with app:
        await app.start()
        await app.updater.start_polling(timeout=1)
        alice = botapi.user(1001, "Alice", username="alice")
        alice.send_text("/start")
        reply = await alice.next_message()        # the bot's next message to Alice
        assert reply.text == "Welcome" and reply.button_texts == ["Approve"]
        query_id = alice.tap(reply, "Approve")    # a callback_query update
        answer = await botapi.wait_for(lambda: botapi.callback_answer(query_id))
        await app.updater.stop()
        await app.stop()

Public API:
- ``Emulator(token=None, bot_username=..., callback_query_timeout=15.0, strict_ampersand=True,
  first_update_id=1, webhook_retry_delay=0.2)``; ``start()``/``stop()`` or ``with``;
  ``webhook_ca`` (the PEM file an https webhook's certificate must chain to); ``token``,
  ``bot_id``, ``port``, ``base_url``, ``base_file_url``, ``ptb_bot()``, ``application_builder()``.
- users: ``user(id, first_name, username=None, *, started=False)`` -> ``EmulatedUser`` with
  ``send_text``, ``send_document(data, filename, mime_type, caption=)``,
  ``reply_to(message, text)``, ``tap(message, button_text)`` and ``tap_data(message, data)``
  (both return the query id), ``open_web_app(message, button_text, age=0)`` (a web_app
  button's page URL with signed initData in its ``#tgWebAppData`` fragment, as Telegram's
  client opens it) and ``web_app_data(age=0, token=None)``, ``block()``/``unblock()``,
  ``messages()``, ``last_message()``, ``await next_message()``, ``skip_messages()``. A message
  argument is a ``Message`` or an id.
- updates: ``inject_update(json)``, ``redeliver(update_id)`` (same update_id once more),
  ``update(update_id)``, ``handed_out(update_id)`` (when it first went out to the bot, by
  getUpdates or a webhook POST, time.monotonic()), ``pending_update_ids``,
  ``dropped_update_ids``.
- inspection (snapshots): ``messages(chat_id)``, ``message(chat_id, message_id)``,
  ``last_message(chat_id)`` -> ``Message`` (text, raw, parse_mode, entities, reply_markup, buttons,
  button(text), versions = edit history, deleted, document); ``documents(chat_id)``; ``file(id)``;
  ``callback_query(id)``, ``callback_answer(id)``, ``callback_answers``; ``commands(scope, lang)``;
  ``calls``/``calls_to(method)`` -> ``ApiCall`` (params as sent, status, description, started,
  duration); ``webhook``, ``webhook_deliveries``; ``unimplemented_calls``, ``internal_errors``.
- failures: ``fail_next(method, times=1, status=429, retry_after=5, chat_id=None, applied=False,
  delay=0)``, ``stall_next(method, seconds)``, ``clear_faults()``,
  ``enable_flood_control(per_chat=1, overall=30, ...)``, ``disable_flood_control()``.
- time: ``advance(seconds)`` moves the emulator's clock (callback query age, dates, flood windows).
- webhook: ``await post_to_webhook(update_or_id, secret_token=..., content_type=...)`` ->
  ``WebhookResponse(status, reason, body, headers)``; queued updates are POSTed by the emulator.

What is checked, each with Telegram's own description: callback_data over 64 bytes, buttons without
an action, web_app buttons without an https URL (``webapps``), HTML and MarkdownV2 entities (TDLib's
parsers, byte offsets included), empty and too-long texts and captions, edits that change nothing,
unknown messages, users who never started the bot or blocked it, late or repeated callback answers,
getUpdates while a webhook is set or while another getUpdates waits, bad tokens and unknown methods.
Failures can be scripted per method and chat (429 with retry_after, 5xx, a stall), and an automatic
flood limiter can be switched on.

Where it is stricter or looser than Telegram, on purpose:
- a bare "&" that starts no entity is an error (Telegram keeps it as text; the Bot API docs say to
  escape it, and a bot that forgets to escape "&" forgets "<" too); ``strict_ampersand=False``
  restores Telegram's leniency;
- message ids count per chat, from 1 in every chat: the Bot API promises uniqueness only "inside
  this chat", so a bot that keys messages by id alone fails here;
- webhooks go only to loopback addresses, over http or https (its certificate checked against
  ``webhook_ca``) and any port (Telegram wants https on 443, 80, 88 or 8443), so no test can send
  traffic off the machine; updates are POSTed oldest first, up to the webhook's max_connections
  at once but one at a time per chat, and a failed one is retried every ``webhook_retry_delay``
  seconds; the Bot API call a 2xx answer carries as its JSON body is executed as Telegram does
  (logged with ``in_reply=True``; one that fails is dropped silently);
- a web_app button may also open plain http on a loopback host (Telegram wants https), as the
  bot's MANZOORI_PUBLIC_URL allows, so the Mini App can be opened on this machine; it is allowed
  in every chat because every chat is private, which is where Telegram allows it;
- only private chats exist; entities Telegram finds by itself in a bot's text (links, mentions) are
  not added; legacy parse_mode "Markdown", MarkdownV2 block quotes and inline messages are not
  emulated (a clear 400 says so);
- a method the emulator does not implement answers 404 "Not Found", as an unknown method does, and
  is listed in ``unimplemented_calls`` so the fixture fails the test.

Modules: ``errors`` (ApiError and Telegram's descriptions), ``text`` (TDLib's HTML and MarkdownV2
parsers, text limits), ``snapshots`` (the frozen dataclasses tests read), ``state`` (the mutable
records behind them), ``params`` (request parameters, method names), ``core`` (the state every part
shares, the clock) with one mixin a section of the emulator: ``updates`` (the queue, getUpdates),
``webhook``, ``faults`` (scripted failures, flood control), ``inspection``, ``messages``, ``files``,
``webapps`` (web_app buttons, signed initData);
``emulator`` (the one Emulator class, its server thread, serving), ``users`` (EmulatedUser) and
``http`` (the tornado handlers).
"""

from .emulator import Emulator
from .errors import (
    GET_UPDATES_CONFLICT,
    NOT_MODIFIED,
    QUERY_TOO_OLD,
    WEBHOOK_ACTIVE_CONFLICT,
    ApiError,
)
from .snapshots import (
    ApiCall,
    Button,
    CallbackAnswer,
    CallbackQuery,
    Message,
    StoredFile,
    Version,
    WebhookDelivery,
    WebhookInfo,
    WebhookResponse,
)
from .text import EntityParseError, parse_html, parse_markdown_v2, utf16_len
from .users import EmulatedUser

__all__ = [
    "GET_UPDATES_CONFLICT",
    "NOT_MODIFIED",
    "QUERY_TOO_OLD",
    "WEBHOOK_ACTIVE_CONFLICT",
    "ApiCall",
    "ApiError",
    "Button",
    "CallbackAnswer",
    "CallbackQuery",
    "EmulatedUser",
    "Emulator",
    "EntityParseError",
    "Message",
    "StoredFile",
    "Version",
    "WebhookDelivery",
    "WebhookInfo",
    "WebhookResponse",
    "parse_html",
    "parse_markdown_v2",
    "utf16_len",
]

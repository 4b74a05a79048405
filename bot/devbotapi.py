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

Usage (the ``botapi`` fixture of tests/botapi_fixture.py is ``with Emulator() as emu``)::

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
  first_update_id=1, webhook_retry_delay=0.2)``; ``start()``/``stop()`` or ``with``; ``token``,
  ``bot_id``, ``port``, ``base_url``, ``base_file_url``, ``ptb_bot()``, ``application_builder()``.
- users: ``user(id, first_name, username=None, *, started=False)`` -> ``EmulatedUser`` with
  ``send_text``, ``send_document(data, filename, mime_type, caption=)``,
  ``reply_to(message, text)``, ``tap(message, button_text)`` and ``tap_data(message, data)``
  (both return the query id), ``block()``/``unblock()``, ``messages()``, ``last_message()``,
  ``await next_message()``, ``skip_messages()``. A message argument is a ``Message`` or an id.
- updates: ``inject_update(json)``, ``redeliver(update_id)`` (same update_id once more),
  ``update(update_id)``, ``pending_update_ids``, ``dropped_update_ids``.
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
an action, HTML and MarkdownV2 entities (TDLib's parsers, byte offsets included), empty and too-long
texts and captions, edits that change nothing, unknown messages, users who never started the bot or
blocked it, late or repeated callback answers, getUpdates while a webhook is set or while another
getUpdates waits, bad tokens and unknown methods. Failures can be scripted per method and chat
(429 with retry_after, 5xx, a stall), and an automatic flood limiter can be switched on.

Where it is stricter or looser than Telegram, on purpose:
- a bare "&" that starts no entity is an error (Telegram keeps it as text; the Bot API docs say to
  escape it, and a bot that forgets to escape "&" forgets "<" too); ``strict_ampersand=False``
  restores Telegram's leniency;
- message ids count per chat, from 1 in every chat: the Bot API promises uniqueness only "inside
  this chat", so a bot that keys messages by id alone fails here;
- webhooks go only to loopback addresses, over plain http and any port (Telegram wants https on
  443, 80, 88 or 8443), so no test can send traffic off the machine; updates are POSTed one at a
  time, oldest first, and a failed one is retried every ``webhook_retry_delay`` seconds;
- only private chats exist; entities Telegram finds by itself in a bot's text (links, mentions) are
  not added; legacy parse_mode "Markdown", MarkdownV2 block quotes and inline messages are not
  emulated (a clear 400 says so);
- a method the emulator does not implement answers 404 "Not Found", as an unknown method does, and
  is listed in ``unimplemented_calls`` so the fixture fails the test.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import itertools
import json
import math
import re
import secrets
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

import tornado.httpclient
import tornado.httpserver
import tornado.iostream
import tornado.netutil
import tornado.web

if TYPE_CHECKING:
    import telegram
    import telegram.ext

HOST = "127.0.0.1"
TOKEN_RE = re.compile(r"^\d{1,20}:[A-Za-z0-9_-]{35}$")
MAX_TEXT_LENGTH = 4096  # Unicode code points, counted after entity parsing (TDLib's utf8_length)
MAX_CAPTION_LENGTH = 1024
MAX_CALLBACK_DATA_BYTES = 64
MAX_UPLOAD_BYTES = 50 * 1024 * 1024
MAX_GETFILE_BYTES = 20 * 1024 * 1024
MAX_LONG_POLL = 50.0  # Telegram's own cap on getUpdates' timeout
# Update types getUpdates and webhooks leave out unless asked for by name.
OPT_IN_UPDATES = frozenset({"chat_member", "message_reaction", "message_reaction_count"})
GET_UPDATES_CONFLICT = (
    "Conflict: terminated by other getUpdates request; "
    "make sure that only one bot instance is running"
)
WEBHOOK_ACTIVE_CONFLICT = (
    "Conflict: can't use getUpdates method while webhook is active; "
    "use deleteWebhook to delete the webhook first"
)
NOT_MODIFIED = (
    "Bad Request: message is not modified: specified new message content and reply markup are "
    "exactly the same as a current content and reply markup of the message"
)
QUERY_TOO_OLD = "Bad Request: query is too old and response timeout expired or query ID is invalid"
# What nginx in front of the Bot API answers when the backend is down: HTML, not JSON.
_NGINX_PAGE = (
    "<html>\r\n<head><title>{code} {phrase}</title></head>\r\n<body>\r\n"
    "<center><h1>{code} {phrase}</h1></center>\r\n<hr><center>nginx/1.18.0</center>\r\n"
    "</body>\r\n</html>\r\n"
)
_PHRASES = {
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}
# Methods the automatic flood limiter counts: the ones that put a new message in a chat.
FLOOD_COUNTED = frozenset({"sendMessage", "sendDocument"})

T = TypeVar("T")


class ApiError(Exception):
    """An error answer of the Bot API: HTTP status, description and optional parameters."""

    def __init__(
        self,
        code: int,
        description: str,
        parameters: dict[str, Any] | None = None,
        *,
        body: str | None = None,
    ) -> None:
        super().__init__(description)
        self.code = code
        self.description = description
        self.parameters = parameters
        self.body = body  # a raw body instead of the JSON envelope (nginx's HTML page)

    def payload(self) -> tuple[int, bytes, str]:
        """Status, body and content type of the HTTP answer."""
        if self.body is not None:
            return self.code, self.body.encode(), "text/html"
        envelope: dict[str, Any] = {
            "ok": False,
            "error_code": self.code,
            "description": self.description,
        }
        if self.parameters:
            envelope["parameters"] = self.parameters
        return self.code, json.dumps(envelope).encode(), "application/json"


def bad_request(description: str) -> ApiError:
    """A 400 with Telegram's "Bad Request: " prefix."""
    return ApiError(400, f"Bad Request: {description}")


def forbidden(description: str) -> ApiError:
    """A 403 with Telegram's "Forbidden: " prefix."""
    return ApiError(403, f"Forbidden: {description}")


def too_many_requests(retry_after: int) -> ApiError:
    """A 429 as Telegram's flood control sends it."""
    return ApiError(
        429, f"Too Many Requests: retry after {retry_after}", {"retry_after": retry_after}
    )


def server_error(code: int, *, html: bool | None = None) -> ApiError:
    """A 5xx: JSON from the Bot API itself (500) or nginx's HTML page (502, 503, 504)."""
    phrase = _PHRASES.get(code, "Internal Server Error")
    if html is None:
        html = code != 500
    body = _NGINX_PAGE.format(code=code, phrase=phrase) if html else None
    return ApiError(code, phrase, body=body)


# ---------------------------------------------------------------------------------------------
# Text: TDLib's HTML and MarkdownV2 parsers, then the trimming and limits of fix_formatted_text.
# ---------------------------------------------------------------------------------------------


class EntityParseError(Exception):
    """The text is not valid for its parse mode; str() is TDLib's message."""


_HTML_TAGS = frozenset(
    {
        "a",
        "b",
        "strong",
        "i",
        "em",
        "s",
        "strike",
        "del",
        "u",
        "ins",
        "tg-spoiler",
        "tg-emoji",
        "span",
        "pre",
        "code",
        "blockquote",
    }
)
_SIMPLE_HTML = {
    "b": "bold",
    "strong": "bold",
    "i": "italic",
    "em": "italic",
    "u": "underline",
    "ins": "underline",
    "s": "strikethrough",
    "strike": "strikethrough",
    "del": "strikethrough",
    "tg-spoiler": "spoiler",
    "span": "spoiler",
}


def _is_space(c: int) -> bool:
    # TDLib's is_space counts NUL, which is also what reading past the end returns.
    return c in (0x20, 0x09, 0x0A, 0x0D, 0x0B, 0x00)


def _is_alnum(c: int) -> bool:
    return 0x30 <= c <= 0x39 or 0x41 <= c <= 0x5A or 0x61 <= c <= 0x7A


def _utf16_units(lead: int) -> int:
    """UTF-16 code units of the character that starts with this UTF-8 byte (0 for a tail)."""
    if 0x80 <= lead < 0xC0:
        return 0
    return 2 if lead >= 0xF0 else 1


def utf16_len(text: str) -> int:
    """Length in UTF-16 code units, the unit of entity offsets."""
    return len(text.encode("utf-16-le")) // 2


def _decode_html_entity(data: bytes, pos: int) -> tuple[int, int]:
    """TDLib's decode_html_entity: (code point, end) or (0, pos) if none starts at pos."""

    def at(i: int) -> int:
        return data[i] if i < len(data) else 0

    end = pos + 1
    code = 0
    if at(pos + 1) == ord("#"):
        end += 1
        if at(pos + 2) == ord("x"):
            end += 1
            while chr(at(end)) in "0123456789abcdefABCDEF" and at(end):
                code = code * 16 + int(chr(at(end)), 16)
                end += 1
        else:
            while ord("0") <= at(end) <= ord("9"):
                code = code * 10 + at(end) - ord("0")
                end += 1
        if code == 0 or code >= 0x10FFFF or end - pos >= 10:
            return 0, pos
    else:
        while 0x41 <= at(end) <= 0x5A or 0x61 <= at(end) <= 0x7A:
            end += 1
        code = {b"lt": 0x3C, b"gt": 0x3E, b"amp": 0x26, b"quot": 0x22}.get(data[pos + 1 : end], 0)
        if code == 0:
            return 0, pos
    return code, end + 1 if at(end) == ord(";") else end


def parse_html(text: str, *, strict_ampersand: bool = True) -> tuple[str, list[dict[str, Any]]]:
    """Plain text and entities of Telegram HTML, or EntityParseError with TDLib's message."""
    data = text.encode("utf-8")
    n = len(data)

    def at(i: int) -> int:
        return data[i] if i < n else 0

    out = bytearray()
    entities: list[dict[str, Any]] = []
    nested: list[tuple[str, str, int, int]] = []  # tag, argument, utf16 offset, byte in out
    u16 = 0
    bad_surrogate = False
    i = 0
    while i < n:
        c = data[i]
        if c == ord("&"):
            code, end = _decode_html_entity(data, i)
            if code:
                u16 += 2 if code > 0xFFFF else 1
                if 0xD800 <= code <= 0xDFFF:
                    bad_surrogate = True
                    code = 0xFFFD
                out += chr(code).encode("utf-8")
                i = end
                continue
            if strict_ampersand:
                raise EntityParseError(
                    f'Character "&" at byte offset {i} starts no entity; escape it as "&amp;" '
                    "(the emulator is stricter than Telegram here)"
                )
        if c != ord("<"):
            u16 += _utf16_units(c)
            out.append(c)
            i += 1
            continue
        begin = i
        i += 1
        if at(i) != ord("/"):
            while not _is_space(at(i)) and at(i) != ord(">"):
                i += 1
            if at(i) == 0:
                raise EntityParseError(f"Unclosed start tag at byte offset {begin}")
            tag = data[begin + 1 : i].decode("utf-8", "replace").lower()
            if tag not in _HTML_TAGS:
                raise EntityParseError(f'Unsupported start tag "{tag}" at byte offset {begin}')
            argument = ""
            while at(i) != ord(">"):
                while at(i) != 0 and _is_space(at(i)):
                    i += 1
                if at(i) == ord(">"):
                    break
                attr_begin = i
                while not _is_space(at(i)) and at(i) not in b"=>/\"'":
                    i += 1
                attribute = data[attr_begin:i].decode("utf-8", "replace")
                if not attribute:
                    raise EntityParseError(
                        f'Empty attribute name in the tag "{tag}" at byte offset {begin}'
                    )
                while at(i) != 0 and _is_space(at(i)):
                    i += 1
                if at(i) != ord("="):
                    if at(i) == 0:
                        raise EntityParseError(f'Unclosed start tag "{tag}" at byte offset {begin}')
                    if tag == "blockquote" and attribute == "expandable":
                        argument = "1"
                    continue
                i += 1
                while at(i) != 0 and _is_space(at(i)):
                    i += 1
                if at(i) == 0:
                    raise EntityParseError(f'Unclosed start tag "{tag}" at byte offset {begin}')
                value, i = _html_attribute_value(data, i)
                if at(i) == 0:
                    raise EntityParseError(f"Unclosed start tag at byte offset {begin}")
                if (tag, attribute) in (("a", "href"), ("tg-emoji", "emoji-id")):
                    argument = value
                elif tag == "code" and attribute == "class" and value.startswith("language-"):
                    argument = value[9:]
                elif tag == "span" and attribute == "class" and value.startswith("tg-"):
                    argument = value[3:]
                elif tag == "blockquote" and attribute == "expandable":
                    argument = "1"
            if tag == "span" and argument != "spoiler":
                raise EntityParseError(
                    f'Tag "span" must have class "tg-spoiler" at byte offset {begin}'
                )
            nested.append((tag, argument, u16, len(out)))
            i += 1
            continue
        if not nested:
            raise EntityParseError(f"Unexpected end tag at byte offset {begin}")
        while not _is_space(at(i)) and at(i) != ord(">"):
            i += 1
        end_tag = data[begin + 2 : i].decode("utf-8", "replace").lower()
        while _is_space(at(i)) and at(i) != 0:
            i += 1
        if at(i) != ord(">"):
            raise EntityParseError(f"Unclosed end tag at byte offset {begin}")
        tag, argument, offset, out_pos = nested[-1]
        if end_tag and end_tag != tag:
            raise EntityParseError(
                f'Unmatched end tag at byte offset {begin}, expected "</{tag}>", '
                f'found "</{end_tag}>"'
            )
        if u16 > offset:
            _add_html_entity(entities, tag, argument, offset, u16 - offset, bytes(out[out_pos:]))
        nested.pop()
        i += 1
    if nested:
        raise EntityParseError(f'Can\'t find end tag corresponding to start tag "{nested[-1][0]}"')
    for entity in entities:
        if entity["type"] == "code":
            entity.pop("language", None)  # a language counts only inside pre
    if bad_surrogate:
        raise EntityParseError(
            "Text contains invalid Unicode characters after decoding HTML entities, check for "
            "unmatched surrogate code units"
        )
    return out.decode("utf-8"), _sorted_entities(entities)


def _html_attribute_value(data: bytes, i: int) -> tuple[str, int]:
    def at(j: int) -> int:
        return data[j] if j < len(data) else 0

    if at(i) not in b"'\"":
        token_begin = i
        while _is_alnum(at(i)) or at(i) in b".-":
            i += 1
        if not _is_space(at(i)) and at(i) != ord(">"):
            raise EntityParseError(f"Unexpected end of name token at byte offset {token_begin}")
        return data[token_begin:i].decode("utf-8", "replace").lower(), i
    quote = at(i)
    i += 1
    value = bytearray()
    while at(i) != quote and at(i) != 0:
        if at(i) == ord("&"):
            code, end = _decode_html_entity(data, i)
            if code:
                value += chr(code).encode("utf-8", "replace")
                i = end
                continue
        value.append(at(i))
        i += 1
    if at(i) == quote:
        i += 1
    return value.decode("utf-8", "replace"), i


def _add_html_entity(
    entities: list[dict[str, Any]],
    tag: str,
    argument: str,
    offset: int,
    length: int,
    inner: bytes,
) -> None:
    last = entities[-1] if entities else None
    same_span = last is not None and last["offset"] == offset and last["length"] == length
    if tag in _SIMPLE_HTML:
        entities.append({"type": _SIMPLE_HTML[tag], "offset": offset, "length": length})
    elif tag == "tg-emoji":
        if not argument.isdigit() or not 0 < int(argument) < 2**63:
            raise EntityParseError("Invalid custom emoji identifier specified")
        entities.append(
            {
                "type": "custom_emoji",
                "offset": offset,
                "length": length,
                "custom_emoji_id": argument,
            }
        )
    elif tag == "a":
        url = argument or inner.decode("utf-8")
        if url:  # Telegram drops a link it cannot use rather than failing
            entities.append({"type": "text_link", "offset": offset, "length": length, "url": url})
    elif tag == "pre":
        if last is not None and same_span and last["type"] == "code" and "language" in last:
            last["type"] = "pre"
        else:
            entities.append({"type": "pre", "offset": offset, "length": length})
    elif tag == "code":
        if last is not None and same_span and last["type"] == "pre" and argument:
            last["language"] = argument
        else:
            entity = {"type": "code", "offset": offset, "length": length}
            if argument:
                entity["language"] = argument
            entities.append(entity)
    elif tag == "blockquote":
        kind = "expandable_blockquote" if argument else "blockquote"
        entities.append({"type": kind, "offset": offset, "length": length})


_MDV2_RESERVED = b"_*[]()~`>#+-=|{}.!"
_MDV2_NAMES = {
    "bold": "Bold",
    "italic": "Italic",
    "underline": "Underline",
    "strikethrough": "Strikethrough",
    "spoiler": "Spoiler",
    "code": "Code",
    "pre": "Pre",
    "pre_code": "PreCode",
    "text_link": "TextUrl",
    "custom_emoji": "CustomEmoji",
}


def parse_markdown_v2(text: str) -> tuple[str, list[dict[str, Any]]]:
    """Plain text and entities of MarkdownV2 (TDLib's parser, without block quotes)."""
    data = text.encode("utf-8")
    n = len(data)

    def at(i: int) -> int:
        return data[i] if i < n else 0

    def reserved(c: int) -> EntityParseError:
        return EntityParseError(
            f"Character '{chr(c)}' is reserved and must be escaped with the preceding '\\'"
        )

    out = bytearray()
    entities: list[dict[str, Any]] = []
    nested: list[list[Any]] = []  # kind, argument, utf16 offset, byte offset in text, byte in out
    u16 = 0
    i = 0
    while i < n:
        c = data[i]
        if c == ord("\\") and 0 < at(i + 1) <= 126:
            out.append(data[i + 1])
            u16 += 1
            i += 2
            continue
        in_code = bool(nested) and nested[-1][0] in ("code", "pre", "pre_code")
        if c not in (b"`" if in_code else _MDV2_RESERVED):
            u16 += _utf16_units(c)
            out.append(c)
            i += 1
            continue
        closing = False
        if nested:
            kind = nested[-1][0]
            closing = {
                "bold": c == ord("*"),
                "italic": c == ord("_") and at(i + 1) != ord("_"),
                "code": c == ord("`"),
                "pre": c == ord("`") and at(i + 1) == ord("`") and at(i + 2) == ord("`"),
                "pre_code": c == ord("`") and at(i + 1) == ord("`") and at(i + 2) == ord("`"),
                "text_link": c == ord("]"),
                "underline": c == ord("_") and at(i + 1) == ord("_"),
                "strikethrough": c == ord("~"),
                "spoiler": c == ord("|") and at(i + 1) == ord("|"),
                "custom_emoji": c == ord("]"),
            }[kind]
        if not closing:
            byte_offset = i
            argument = ""
            if c == ord("_"):
                kind = "underline" if at(i + 1) == ord("_") else "italic"
                i += kind == "underline"
            elif c == ord("*"):
                kind = "bold"
            elif c == ord("~"):
                kind = "strikethrough"
            elif c == ord("|") and at(i + 1) == ord("|"):
                kind = "spoiler"
                i += 1
            elif c == ord("["):
                kind = "text_link"
            elif c == ord("`") and at(i + 1) == ord("`") and at(i + 2) == ord("`"):
                i += 3
                kind = "pre"
                language_end = i
                while not _is_space(at(language_end)) and at(language_end) != ord("`"):
                    language_end += 1
                if i != language_end and language_end < n and at(language_end) != ord("`"):
                    kind = "pre_code"
                    argument = data[i:language_end].decode("utf-8", "replace")
                    i = language_end
                if at(i) in b"\r\n" and at(i):
                    pair = at(i + 1) in b"\r\n" and at(i + 1) and at(i) != at(i + 1)
                    i += 2 if pair else 1
                i -= 1
            elif c == ord("`"):
                kind = "code"
            elif c == ord("!") and at(i + 1) == ord("["):
                kind = "custom_emoji"
                i += 1
            else:
                raise reserved(c)
            nested.append([kind, argument, u16, byte_offset, len(out)])
            i += 1
            continue
        kind, argument, offset, _, out_pos = nested[-1]
        skip = u16 == offset
        url = ""
        if kind in ("underline", "spoiler"):
            i += 1
        elif kind in ("pre", "pre_code"):
            i += 2
        elif kind in ("text_link", "custom_emoji"):
            if at(i + 1) != ord("("):
                if kind == "custom_emoji":
                    raise EntityParseError("Custom emoji entity must contain a tg://emoji URL")
                url = out[out_pos:].decode("utf-8")
            else:
                i += 2
                url_begin = i
                raw = bytearray()
                while i < n and data[i] != ord(")"):
                    if data[i] == ord("\\") and 0 < at(i + 1) <= 126:
                        raw.append(data[i + 1])
                        i += 2
                        continue
                    raw.append(data[i])
                    i += 1
                if at(i) != ord(")"):
                    raise EntityParseError(f"Can't find end of a URL at byte offset {url_begin}")
                url = raw.decode("utf-8", "replace")
            if kind == "custom_emoji":
                emoji_id = url.removeprefix("tg://emoji?id=")
                if emoji_id == url or not emoji_id.isdigit() or int(emoji_id) <= 0:
                    raise EntityParseError("Invalid custom emoji identifier specified")
                argument = emoji_id
            elif not url:
                skip = True
        if not skip:
            entity: dict[str, Any] = {"offset": offset, "length": u16 - offset}
            if kind == "pre_code":
                entity.update(type="pre", language=argument)
            elif kind == "text_link":
                entity.update(type="text_link", url=url)
            elif kind == "custom_emoji":
                entity.update(type="custom_emoji", custom_emoji_id=argument)
            else:
                entity["type"] = kind
            entities.append(entity)
        nested.pop()
        i += 1
    if nested:
        kind, _, _, byte_offset, _ = nested[-1]
        raise EntityParseError(
            f"Can't find end of {_MDV2_NAMES[kind]} entity at byte offset {byte_offset}"
        )
    return out.decode("utf-8"), _sorted_entities(entities)


def _sorted_entities(entities: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(entities, key=lambda e: (e["offset"], -e["length"]))


_TRIM = " \t\n\r\v\f"


def finish_text(
    text: str, entities: list[dict[str, Any]], *, limit: int, allow_empty: bool
) -> tuple[str, list[dict[str, Any]]]:
    """Trim surrounding white space as Telegram does, clip the entities, check the length.

    Raises ValueError("empty") or ValueError("long") for the caller to word.
    """
    stripped = text.lstrip(_TRIM)
    shift = utf16_len(text) - utf16_len(stripped)
    stripped = stripped.rstrip(_TRIM)
    total = utf16_len(stripped)
    clipped = []
    for entity in entities:
        start = max(entity["offset"] - shift, 0)
        end = min(entity["offset"] - shift + entity["length"], total)
        if end > start:
            clipped.append({**entity, "offset": start, "length": end - start})
    if not stripped and not allow_empty:
        raise ValueError("empty")
    if len(stripped) > limit:
        raise ValueError("long")
    return stripped, clipped


def bot_command_entities(text: str) -> list[dict[str, Any]]:
    """The bot_command entities Telegram marks in a user's text."""
    found = []
    for match in re.finditer(r"(?<![\w/])/[A-Za-z0-9_]{1,64}(?:@[A-Za-z0-9_]{3,32})?", text):
        offset = utf16_len(text[: match.start()])
        found.append({"type": "bot_command", "offset": offset, "length": utf16_len(match[0])})
    return found


# ---------------------------------------------------------------------------------------------
# What tests read: immutable snapshots of the emulator's state.
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Button:
    """One inline keyboard button."""

    text: str
    callback_data: str | None = None
    url: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class StoredFile:
    """A file someone uploaded: its bytes and what Telegram knows of it."""

    file_id: str
    file_unique_id: str
    data: bytes = field(repr=False)
    file_name: str | None
    mime_type: str | None
    file_path: str
    uploaded_by: int  # a user id, or the bot's id

    @property
    def file_size(self) -> int:
        """Size in bytes, as Telegram reports it."""
        return len(self.data)

    def document_json(self) -> dict[str, Any]:
        """The Document object of a message that carries this file."""
        doc: dict[str, Any] = {"file_id": self.file_id, "file_unique_id": self.file_unique_id}
        if self.file_name is not None:
            doc["file_name"] = self.file_name
        if self.mime_type is not None:
            doc["mime_type"] = self.mime_type
        doc["file_size"] = self.file_size
        return doc


@dataclass(frozen=True)
class Version:
    """A message's content at one time: as sent, then after each edit."""

    text: str | None
    entities: tuple[dict[str, Any], ...]
    caption: str | None
    caption_entities: tuple[dict[str, Any], ...]
    raw: str | None  # the text or caption exactly as the bot sent it, markup included
    parse_mode: str | None
    reply_markup: dict[str, Any] | None
    at: float  # the emulator's wall clock
    method: str


@dataclass(frozen=True)
class Message:
    """A message in a private chat, as it is now; `versions` keeps every earlier content."""

    message_id: int
    chat_id: int
    from_bot: bool
    sender_id: int
    date: int
    versions: tuple[Version, ...]
    document: StoredFile | None
    reply_to_message_id: int | None
    deleted: bool
    update_id: int | None  # for a user's message: the update that carried it

    @property
    def current(self) -> Version:
        """The latest version."""
        return self.versions[-1]

    @property
    def text(self) -> str | None:
        """Current text, entities parsed away."""
        return self.current.text

    @property
    def entities(self) -> tuple[dict[str, Any], ...]:
        """Current text entities."""
        return self.current.entities

    @property
    def caption(self) -> str | None:
        """Current caption, entities parsed away."""
        return self.current.caption

    @property
    def raw(self) -> str | None:
        """The current text or caption exactly as the bot sent it."""
        return self.current.raw

    @property
    def parse_mode(self) -> str | None:
        """The parse mode of the current version."""
        return self.current.parse_mode

    @property
    def reply_markup(self) -> dict[str, Any] | None:
        """The current reply markup (inline keyboard, ForceReply, ...)."""
        return self.current.reply_markup

    @property
    def edited(self) -> bool:
        """True once the bot changed the message."""
        return len(self.versions) > 1

    @property
    def buttons(self) -> list[list[Button]]:
        """The current inline keyboard, row by row (empty without one)."""
        markup = self.reply_markup or {}
        return [
            [Button(b.get("text", ""), b.get("callback_data"), b.get("url"), dict(b)) for b in row]
            for row in markup.get("inline_keyboard", [])
        ]

    @property
    def button_texts(self) -> list[str]:
        """Texts of the current inline buttons, row after row."""
        return [b.text for row in self.buttons for b in row]

    def button(self, text: str) -> Button:
        """The current inline button with this text; LookupError if there is none."""
        for row in self.buttons:
            for b in row:
                if b.text == text:
                    return b
        raise LookupError(f"no button {text!r} in message {self.message_id}: {self.button_texts}")


@dataclass(frozen=True)
class CallbackAnswer:
    """What the bot answered to a callback query."""

    query_id: str
    text: str | None
    show_alert: bool
    url: str | None
    cache_time: int
    age: float  # seconds between the tap and the answer, on the emulator's clock
    at: float  # when it was answered, time.monotonic() (for ordering against ApiCall.started)


@dataclass(frozen=True)
class CallbackQuery:
    """A tap on an inline button, and the bot's answer if any."""

    query_id: str
    user_id: int
    chat_id: int
    message_id: int
    data: str
    update_id: int
    created: float  # the emulator's monotonic clock
    answer: CallbackAnswer | None


@dataclass(frozen=True)
class ApiCall:
    """One HTTP request the bot made, with its outcome."""

    method: str  # canonical name ("sendMessage"), or the path's name if unknown
    params: dict[str, Any]
    files: dict[str, str]  # multipart part name -> file name
    started: float  # time.monotonic()
    finished: float | None
    status: int | None
    description: str | None  # of an error answer
    result: Any

    @property
    def ok(self) -> bool:
        """True for a 2xx answer."""
        return self.status is not None and 200 <= self.status < 300

    @property
    def duration(self) -> float | None:
        """Seconds the emulator took to answer (long polls included)."""
        return None if self.finished is None else self.finished - self.started

    @property
    def chat_id(self) -> int | None:
        """The chat_id parameter as an int, if any."""
        value = self.params.get("chat_id")
        try:
            return int(value) if value is not None else None
        except (TypeError, ValueError):
            return None


@dataclass(frozen=True)
class WebhookDelivery:
    """One POST of an update to the bot's webhook."""

    update_id: int
    status: int | None  # None when no HTTP answer came
    reason: str
    at: float  # time.monotonic()


@dataclass(frozen=True)
class WebhookResponse:
    """What the bot's webhook server answered to `post_to_webhook`."""

    status: int
    reason: str
    body: bytes
    headers: dict[str, str]


@dataclass(frozen=True)
class WebhookInfo:
    """The webhook as setWebhook left it."""

    url: str
    secret_token: str | None
    allowed_updates: tuple[str, ...] | None
    max_connections: int
    ip_address: str | None


# ---------------------------------------------------------------------------------------------
# Internal mutable state. Everything below is touched only under Emulator._lock.
# ---------------------------------------------------------------------------------------------


@dataclass
class _User:
    id: int
    first_name: str
    last_name: str | None
    username: str | None
    language_code: str | None
    started: bool = False
    blocked: bool = False

    def user_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"id": self.id, "is_bot": False, "first_name": self.first_name}
        if self.last_name:
            data["last_name"] = self.last_name
        if self.username:
            data["username"] = self.username
        if self.language_code:
            data["language_code"] = self.language_code
        return data

    def chat_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"id": self.id, "type": "private", "first_name": self.first_name}
        if self.last_name:
            data["last_name"] = self.last_name
        if self.username:
            data["username"] = self.username
        return data


@dataclass
class _Msg:
    message_id: int
    chat_id: int
    from_bot: bool
    sender_id: int
    date: int
    versions: list[Version]
    document: StoredFile | None = None
    reply_to_message_id: int | None = None
    edit_date: int | None = None
    deleted: bool = False
    update_id: int | None = None

    def snapshot(self) -> Message:
        return Message(
            message_id=self.message_id,
            chat_id=self.chat_id,
            from_bot=self.from_bot,
            sender_id=self.sender_id,
            date=self.date,
            versions=tuple(self.versions),
            document=self.document,
            reply_to_message_id=self.reply_to_message_id,
            deleted=self.deleted,
            update_id=self.update_id,
        )


@dataclass
class _Pending:
    update_id: int
    payload: dict[str, Any]
    sticky: bool = False  # a redelivered update: not confirmed away before it went out again


@dataclass
class _Fault:
    method: str  # canonical name or "*"
    chat_id: int | None
    remaining: int
    error: ApiError | None  # None: answer normally after the delay
    delay: float
    applied: bool  # do the work, then answer with the error (the answer got lost)


@dataclass
class _Query:
    query_id: str
    user_id: int
    chat_id: int
    message_id: int
    data: str
    update_id: int
    created: float
    answer: CallbackAnswer | None = None

    def snapshot(self) -> CallbackQuery:
        return CallbackQuery(
            self.query_id,
            self.user_id,
            self.chat_id,
            self.message_id,
            self.data,
            self.update_id,
            self.created,
            self.answer,
        )


@dataclass
class _Poll:
    conflict: str | None = None
    closed: bool = False


@dataclass
class _Result:
    """A successful answer with Telegram's optional "description" beside the result."""

    value: Any
    description: str | None = None


class _Params:
    """Request parameters from JSON, a form or multipart, typed as the Bot API reads them."""

    def __init__(
        self, values: dict[str, Any], files: dict[str, tuple[str, bytes, str]], typed: bool
    ) -> None:
        self.values = values
        self.files = files
        self.typed = typed  # True for a JSON body: values keep their JSON types

    def has(self, name: str) -> bool:
        value = self.values.get(name)
        return value is not None and value != ""

    def text(self, name: str) -> str | None:
        value = self.values.get(name)
        if value is None:
            return None
        if isinstance(value, str):
            return value
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, int | float):
            return str(value)
        return json.dumps(value)

    def integer(self, name: str) -> int | None:
        value = self.values.get(name)
        if value is None or value == "":
            return None
        if isinstance(value, bool):
            return int(value)
        if isinstance(value, int):
            return value
        try:
            return int(float(value)) if isinstance(value, float) else int(str(value).strip())
        except ValueError:
            raise bad_request(f'emulator: parameter "{name}" must be an integer') from None

    def number(self, name: str) -> float | None:
        value = self.values.get(name)
        if value is None or value == "":
            return None
        try:
            return float(value)
        except (TypeError, ValueError):
            raise bad_request(f'emulator: parameter "{name}" must be a number') from None

    def flag(self, name: str) -> bool:
        value = self.values.get(name)
        if isinstance(value, bool):
            return value
        if value is None:
            return False
        return str(value).strip().lower() in ("true", "1")

    def json_value(self, name: str, error: str) -> Any:
        value = self.values.get(name)
        if value is None or value == "":
            return None
        if isinstance(value, str):
            try:
                return json.loads(value)
            except ValueError:
                raise bad_request(error) from None
        return value

    def logged(self) -> dict[str, Any]:
        return dict(self.values)


# ---------------------------------------------------------------------------------------------
# The emulator.
# ---------------------------------------------------------------------------------------------

_DEFAULT = object()


class Emulator:
    """A Telegram Bot API server on 127.0.0.1 with emulated users; see the module docstring."""

    def __init__(
        self,
        *,
        token: str | None = None,
        bot_username: str = "manzoori_test_bot",
        bot_first_name: str = "Manzoori",
        callback_query_timeout: float = 15.0,
        strict_ampersand: bool = True,
        first_update_id: int = 1,
        webhook_retry_delay: float = 0.2,
        webhook_timeout: float = 10.0,
    ) -> None:
        bot_id = 7_000_000_000 + secrets.randbelow(999_999_999)
        if token is None:
            alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"
            token = f"{bot_id}:AA" + "".join(secrets.choice(alphabet) for _ in range(33))
        if not TOKEN_RE.match(token):
            raise ValueError("token must look like Telegram's: '<digits>:<35 characters>'")
        self.token = token
        self.bot_id = int(token.split(":", 1)[0])
        self.bot_username = bot_username
        self.bot_first_name = bot_first_name
        self.callback_query_timeout = callback_query_timeout
        self.strict_ampersand = strict_ampersand
        self.webhook_retry_delay = webhook_retry_delay
        self.webhook_timeout = webhook_timeout
        self.port = 0

        self._lock = threading.RLock()
        self._clock_offset = 0.0
        self._users: dict[int, _User] = {}
        self._user_handles: dict[int, EmulatedUser] = {}
        self._messages: dict[int, dict[int, _Msg]] = {}  # chat id -> message id -> message
        self._next_message_id: dict[int, int] = {}
        self._update_ids = itertools.count(first_update_id)
        self._updates: dict[int, dict[str, Any]] = {}  # every update ever created, by id
        self._pending: list[_Pending] = []
        self._dropped: list[int] = []  # updates not created because allowed_updates left them out
        self._allowed_updates: tuple[str, ...] | None = None
        self._queries: dict[str, _Query] = {}
        self._files: dict[str, StoredFile] = {}
        self._file_paths: dict[str, str] = {}  # file_path -> file_id
        self._file_counter = itertools.count(1)
        self._commands: dict[tuple[str, str], list[dict[str, str]]] = {}
        self._calls: list[ApiCall] = []
        self._unimplemented: list[str] = []
        self._internal_errors: list[str] = []
        self._faults: list[_Fault] = []
        self._flood: tuple[int, float, int, float, frozenset[str]] | None = None
        self._flood_log: deque[tuple[float, int]] = deque()
        self._webhook: WebhookInfo | None = None
        self._webhook_deliveries: list[WebhookDelivery] = []
        self._webhook_last_error: tuple[int, str] | None = None
        self._webhook_task: asyncio.Task[None] | None = None
        self._poller: _Poll | None = None

        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread_id: int | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._startup_error: BaseException | None = None
        self._stop_event: asyncio.Event | None = None
        self._updates_event: asyncio.Event | None = None
        self._server: tornado.httpserver.HTTPServer | None = None

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> Emulator:
        """Start the server thread on an ephemeral port; returns self."""
        if self._thread is not None:
            raise RuntimeError("the emulator is already started")
        self._thread = threading.Thread(target=self._thread_main, name="botapi-emulator")
        self._thread.daemon = True  # a test that forgets stop() must not hang the interpreter
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the Bot API emulator did not start within 10 s")
        if self._startup_error is not None:
            raise RuntimeError("the Bot API emulator failed to start") from self._startup_error
        return self

    def stop(self) -> None:
        """Close every connection, stop the server and join its thread."""
        thread, loop = self._thread, self._loop
        if thread is None or loop is None:
            return
        with contextlib.suppress(RuntimeError):  # the loop may already be closed
            loop.call_soon_threadsafe(self._begin_stop)
        thread.join(10)
        if thread.is_alive():
            raise RuntimeError("the Bot API emulator thread did not stop within 10 s")
        self._thread = None

    def __enter__(self) -> Emulator:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        """For Bot(base_url=...) and ApplicationBuilder.base_url: PTB appends the token."""
        return f"http://{HOST}:{self.port}/bot"

    @property
    def base_file_url(self) -> str:
        """For Bot(base_file_url=...) and ApplicationBuilder.base_file_url."""
        return f"http://{HOST}:{self.port}/file/bot"

    def ptb_bot(self, **kwargs: Any) -> telegram.Bot:
        """A python-telegram-bot Bot pointed at the emulator."""
        import telegram  # here, not at the top: the emulator itself needs no PTB

        return telegram.Bot(
            self.token, base_url=self.base_url, base_file_url=self.base_file_url, **kwargs
        )

    def application_builder(self) -> telegram.ext.ApplicationBuilder:
        """An ApplicationBuilder with token and both base URLs set."""
        from telegram.ext import ApplicationBuilder

        return (
            ApplicationBuilder()
            .token(self.token)
            .base_url(self.base_url)
            .base_file_url(self.base_file_url)
        )

    def _thread_main(self) -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        self._loop = loop
        self._loop_thread_id = threading.get_ident()
        try:
            loop.run_until_complete(self._serve())
        except BaseException as exc:  # reported to start(), which is waiting
            self._startup_error = exc
            self._ready.set()
        finally:
            tasks = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for task in tasks:
                task.cancel()
            loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    async def _serve(self) -> None:
        self._stop_event = asyncio.Event()
        self._updates_event = asyncio.Event()
        app = tornado.web.Application(
            [
                (r"/bot([^/]*)/([^/]*)", _ApiHandler, {"emu": self}),
                (r"/file/bot([^/]*)/(.+)", _FileHandler, {"emu": self}),
            ],
            default_handler_class=_NotFoundHandler,
            log_function=lambda handler: None,  # the call log replaces the access log
        )
        sockets = tornado.netutil.bind_sockets(0, HOST)
        self.port = sockets[0].getsockname()[1]
        self._server = tornado.httpserver.HTTPServer(app, max_body_size=MAX_UPLOAD_BYTES + 2**20)
        self._server.add_sockets(sockets)
        self._ready.set()
        await self._stop_event.wait()
        self._server.stop()
        self._wake()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._server.close_all_connections(), 5)

    def _begin_stop(self) -> None:
        with self._lock:
            if self._poller is not None:
                self._poller.closed = True
        if self._webhook_task is not None:
            self._webhook_task.cancel()
        assert self._stop_event is not None
        self._stop_event.set()

    def _wake(self) -> None:
        """Wake every long poll and the webhook sender (runs on the emulator's loop)."""
        if self._updates_event is not None:
            self._updates_event.set()
            self._updates_event = asyncio.Event()

    def _notify(self) -> None:
        """Wake waiters from any thread."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        if threading.get_ident() == self._loop_thread_id:
            self._wake()
        else:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._wake)

    # -- clock ----------------------------------------------------------------------------------

    def advance(self, seconds: float) -> None:
        """Move the emulator's clock forward: callback queries age, message dates move."""
        with self._lock:
            self._clock_offset += seconds

    def _now(self) -> float:
        return time.monotonic() + self._clock_offset

    def _wall(self) -> float:
        return time.time() + self._clock_offset

    # -- users ----------------------------------------------------------------------------------

    def user(
        self,
        user_id: int,
        first_name: str = "User",
        username: str | None = None,
        *,
        last_name: str | None = None,
        language_code: str | None = "en",
        started: bool = False,
    ) -> EmulatedUser:
        """The Telegram user with this id, created on first use (`started`: already /started)."""
        with self._lock:
            if user_id not in self._users:
                if user_id == self.bot_id or user_id <= 0:
                    raise ValueError(f"{user_id} cannot be a user id here")
                self._users[user_id] = _User(
                    user_id, first_name, last_name, username, language_code, started=started
                )
                self._messages[user_id] = {}
                self._next_message_id[user_id] = 1
                self._user_handles[user_id] = EmulatedUser(self, user_id)
            return self._user_handles[user_id]

    def _bot_user_json(self) -> dict[str, Any]:
        return {
            "id": self.bot_id,
            "is_bot": True,
            "first_name": self.bot_first_name,
            "username": self.bot_username,
        }

    # -- updates --------------------------------------------------------------------------------

    def _add_update(self, kind: str, payload: dict[str, Any]) -> int:
        update_id = next(self._update_ids)
        update = {"update_id": update_id, kind: payload}
        self._updates[update_id] = update
        allowed = self._allowed_updates
        wanted = kind in allowed if allowed else kind not in OPT_IN_UPDATES
        if not wanted:
            # Telegram does not even create updates of types the bot did not ask for.
            self._dropped.append(update_id)
        else:
            self._pending.append(_Pending(update_id, update))
        self._notify()
        return update_id

    def inject_update(self, update: dict[str, Any]) -> int:
        """Queue a raw update (any type); its update_id is assigned here and returned."""
        kinds = [k for k in update if k != "update_id"]
        if len(kinds) != 1:
            raise ValueError("an update has exactly one field besides update_id")
        with self._lock:
            return self._add_update(kinds[0], copy.deepcopy(update[kinds[0]]))

    def redeliver(self, update_id: int) -> None:
        """Deliver this update once more, with the same update_id (a duplicate delivery)."""
        with self._lock:
            if update_id not in self._updates:
                raise LookupError(f"no update {update_id}")
            self._pending.append(
                _Pending(update_id, copy.deepcopy(self._updates[update_id]), sticky=True)
            )
            self._notify()

    def update(self, update_id: int) -> dict[str, Any]:
        """The JSON of an update created earlier."""
        with self._lock:
            return copy.deepcopy(self._updates[update_id])

    @property
    def pending_update_ids(self) -> list[int]:
        """Updates not confirmed yet (getUpdates) or not delivered yet (webhook)."""
        with self._lock:
            return [p.update_id for p in self._pending]

    @property
    def dropped_update_ids(self) -> list[int]:
        """Updates that allowed_updates kept from being created."""
        with self._lock:
            return list(self._dropped)

    def _confirm(self, offset: int) -> None:
        if offset < 0:
            keep = -offset
            self._pending = self._pending[-keep:] if keep else []
            return
        self._pending = [p for p in self._pending if p.update_id >= offset or p.sticky]

    def _take(self, limit: int) -> list[dict[str, Any]]:
        batch = sorted(self._pending, key=lambda p: p.update_id)[:limit]
        for pending in batch:
            pending.sticky = False
        return [copy.deepcopy(p.payload) for p in batch]

    # -- scripted failures and flood control ------------------------------------------------------

    def fail_next(
        self,
        method: str,
        times: int = 1,
        *,
        status: int = 429,
        retry_after: int = 5,
        description: str | None = None,
        chat_id: int | None = None,
        applied: bool = False,
        delay: float = 0.0,
    ) -> None:
        """The next `times` calls of `method` ("*" for any), to `chat_id` if given, fail.

        429 comes with parameters.retry_after; 500 is the Bot API's JSON, 502/503/504 nginx's HTML
        page; other codes get `description`. `applied=True` does the work first and then fails, as
        when the answer is lost on the way back. `delay` waits before answering.
        """
        if status == 429:
            error = too_many_requests(retry_after)
        elif status >= 500 and description is None:
            error = server_error(status)
        else:
            error = ApiError(status, description or "Bad Request: emulated failure")
        self._script(method, times, chat_id, error, delay, applied)

    def stall_next(
        self, method: str, seconds: float, times: int = 1, *, chat_id: int | None = None
    ) -> None:
        """The next `times` calls of `method` wait `seconds` before being served normally.

        The work is done even if the client gave up (TimedOut), as on Telegram.
        """
        self._script(method, times, chat_id, None, seconds, False)

    def _script(
        self,
        method: str,
        times: int,
        chat_id: int | None,
        error: ApiError | None,
        delay: float,
        applied: bool,
    ) -> None:
        canonical = method if method == "*" else _canonical(method)
        if canonical is None:
            raise ValueError(f"the emulator does not implement {method}")
        with self._lock:
            self._faults.append(_Fault(canonical, chat_id, times, error, delay, applied))

    def clear_faults(self) -> None:
        """Forget every scripted failure not used yet."""
        with self._lock:
            self._faults.clear()

    def _take_fault(self, method: str, params: _Params) -> _Fault | None:
        chat_id = _int_or_none(params.values.get("chat_id"))
        for fault in self._faults:
            if fault.method not in ("*", method):
                continue
            if fault.chat_id is not None and fault.chat_id != chat_id:
                continue
            fault.remaining -= 1
            if fault.remaining <= 0:
                self._faults.remove(fault)
            return fault
        return None

    def enable_flood_control(
        self,
        *,
        per_chat: int = 1,
        per_chat_window: float = 1.0,
        overall: int = 30,
        overall_window: float = 1.0,
        methods: Iterable[str] = FLOOD_COUNTED,
    ) -> None:
        """Answer 429 past `per_chat` messages per chat or `overall` in all chats per window."""
        with self._lock:
            self._flood = (
                per_chat,
                per_chat_window,
                overall,
                overall_window,
                frozenset(methods),
            )
            self._flood_log.clear()

    def disable_flood_control(self) -> None:
        """Switch the automatic flood limiter off."""
        with self._lock:
            self._flood = None

    def _check_flood(self, method: str, params: _Params) -> None:
        if self._flood is None:
            return
        per_chat, chat_window, overall, overall_window, methods = self._flood
        if method not in methods:
            return
        chat_id = _int_or_none(params.values.get("chat_id")) or 0
        now = self._now()
        horizon = max(chat_window, overall_window)
        while self._flood_log and self._flood_log[0][0] <= now - horizon:
            self._flood_log.popleft()
        in_chat = [t for t, c in self._flood_log if c == chat_id and t > now - chat_window]
        everywhere = [t for t, _ in self._flood_log if t > now - overall_window]
        waits = []
        if len(in_chat) >= per_chat:
            waits.append(in_chat[-per_chat] + chat_window - now)
        if len(everywhere) >= overall:
            waits.append(everywhere[-overall] + overall_window - now)
        if waits:
            raise too_many_requests(max(1, math.ceil(max(waits))))

    def _count_flood(self, method: str, params: _Params) -> None:
        # Only messages that went out count: a request refused for its content sends nothing.
        if self._flood is not None and method in self._flood[4]:
            chat_id = _int_or_none(params.values.get("chat_id")) or 0
            self._flood_log.append((self._now(), chat_id))

    # -- inspection -----------------------------------------------------------------------------

    @property
    def calls(self) -> list[ApiCall]:
        """Every request so far, oldest first."""
        with self._lock:
            return list(self._calls)

    def calls_to(self, method: str) -> list[ApiCall]:
        """The requests of one method (canonical name, any case)."""
        canonical = _canonical(method) or method
        return [c for c in self.calls if c.method == canonical]

    @property
    def unimplemented_calls(self) -> list[str]:
        """Methods the bot called that the emulator does not implement (answered 404)."""
        with self._lock:
            return list(self._unimplemented)

    def clear_unimplemented_calls(self) -> None:
        """Forget them, for a test that calls an unknown method on purpose."""
        with self._lock:
            self._unimplemented.clear()

    @property
    def internal_errors(self) -> list[str]:
        """Emulator bugs met while serving (answered 500); a fixture should assert none."""
        with self._lock:
            return list(self._internal_errors)

    def messages(self, chat_id: int, *, from_bot: bool | None = True) -> list[Message]:
        """Messages of a chat, oldest first: the bot's by default, deleted ones included."""
        with self._lock:
            msgs = self._messages.get(chat_id, {}).values()
            return [m.snapshot() for m in msgs if from_bot is None or m.from_bot == from_bot]

    def message(self, chat_id: int, message_id: int) -> Message:
        """One message as it is now."""
        with self._lock:
            try:
                return self._messages[chat_id][message_id].snapshot()
            except KeyError:
                raise LookupError(f"no message {message_id} in chat {chat_id}") from None

    def last_message(self, chat_id: int) -> Message | None:
        """The bot's latest message in a chat, if any."""
        sent = self.messages(chat_id)
        return sent[-1] if sent else None

    def documents(self, chat_id: int | None = None) -> list[Message]:
        """The bot's messages that carry a document (`.document.data`, `.document.file_name`)."""
        with self._lock:
            chats = [chat_id] if chat_id is not None else list(self._messages)
            return [
                m.snapshot()
                for c in chats
                for m in self._messages.get(c, {}).values()
                if m.from_bot and m.document is not None
            ]

    def file(self, file_id: str) -> StoredFile:
        """A stored file by file_id."""
        with self._lock:
            return self._files[file_id]

    def callback_query(self, query_id: str) -> CallbackQuery:
        """A tap and its answer, if any."""
        with self._lock:
            return self._queries[query_id].snapshot()

    def callback_answer(self, query_id: str) -> CallbackAnswer | None:
        """The bot's answer to a tap, or None while unanswered."""
        with self._lock:
            return self._queries[query_id].answer

    @property
    def callback_answers(self) -> list[CallbackAnswer]:
        """Every answered callback query, in the order of the taps."""
        with self._lock:
            return [q.answer for q in self._queries.values() if q.answer is not None]

    def commands(
        self, scope: dict[str, Any] | None = None, language_code: str = ""
    ) -> list[dict[str, str]]:
        """What setMyCommands stored for a scope (default scope by default) and language."""
        with self._lock:
            return copy.deepcopy(self._commands.get((_scope_key(scope), language_code), []))

    @property
    def webhook(self) -> WebhookInfo | None:
        """The webhook set, or None."""
        with self._lock:
            return self._webhook

    @property
    def webhook_deliveries(self) -> list[WebhookDelivery]:
        """Every POST of an update to the webhook, with the bot's answer."""
        with self._lock:
            return list(self._webhook_deliveries)

    async def wait_for(
        self, predicate: Callable[[], T], timeout: float = 5.0, *, interval: float = 0.01
    ) -> T:
        """Await until `predicate()` is truthy and return it; the bot runs meanwhile.

        On timeout raises AssertionError with the last API calls, to show what the bot did.
        """
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() >= deadline:
                recent = "\n".join(
                    f"  {c.method} {c.status} {c.description or ''}" for c in self.calls[-10:]
                )
                raise AssertionError(f"condition not met within {timeout} s; last calls:\n{recent}")
            await asyncio.sleep(interval)

    # -- webhook test side -----------------------------------------------------------------------

    async def post_to_webhook(
        self,
        update: dict[str, Any] | int,
        *,
        secret_token: str | object | None = _DEFAULT,
        content_type: str = "application/json",
        url: str | None = None,
    ) -> WebhookResponse:
        """POST one update to the webhook outside the queue and return the bot server's answer.

        `update` is an update's JSON or an update_id. `secret_token` defaults to the one set with
        setWebhook; pass None to send no header, or another string to send a wrong one.
        """
        with self._lock:
            hook = self._webhook
            body = self._updates[update] if isinstance(update, int) else update
            target = url or (hook.url if hook else None)
            if target is None:
                raise RuntimeError("no webhook is set; pass url=")
            secret = (
                (hook.secret_token if hook else None) if secret_token is _DEFAULT else secret_token
            )
        headers = {"Content-Type": content_type}
        if secret is not None:
            headers["X-Telegram-Bot-Api-Secret-Token"] = str(secret)
        assert self._loop is not None
        future = asyncio.run_coroutine_threadsafe(
            self._http_post(target, json.dumps(body).encode(), headers), self._loop
        )
        return await asyncio.wrap_future(future)

    async def _http_post(self, url: str, body: bytes, headers: dict[str, str]) -> WebhookResponse:
        client = tornado.httpclient.AsyncHTTPClient(force_instance=True)
        try:
            response = await client.fetch(
                url,
                method="POST",
                body=body,
                headers=headers,
                raise_error=False,
                request_timeout=self.webhook_timeout,
            )
        finally:
            client.close()
        if response.code == 599:  # tornado's code for "no HTTP answer"
            raise ConnectionError(f"webhook {url}: {response.error}")
        return WebhookResponse(
            response.code, response.reason, response.body or b"", dict(response.headers)
        )

    async def _webhook_sender(self) -> None:
        """Send pending updates to the webhook one at a time, oldest first, retrying failures."""
        while True:
            with self._lock:
                hook = self._webhook
                if hook is None:
                    self._webhook_task = None
                    return
                pending = min(self._pending, key=lambda p: p.update_id, default=None)
                event = self._updates_event
            if pending is None:
                assert event is not None
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(event.wait(), 1.0)
                continue
            headers = {"Content-Type": "application/json"}
            if hook.secret_token:
                headers["X-Telegram-Bot-Api-Secret-Token"] = hook.secret_token
            status: int | None
            try:
                answer = await self._http_post(
                    hook.url, json.dumps(pending.payload).encode(), headers
                )
                status, reason = answer.status, f"{answer.status} {answer.reason}"
            except ConnectionError as exc:
                status, reason = None, str(exc)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # e.g. a URL tornado cannot use: report it like Telegram
                status, reason = None, repr(exc)
            with self._lock:
                self._webhook_deliveries.append(
                    WebhookDelivery(pending.update_id, status, reason, time.monotonic())
                )
                if status is not None and 200 <= status < 300:
                    self._pending = [p for p in self._pending if p is not pending]
                    continue
                self._webhook_last_error = (
                    int(self._wall()),
                    f"Wrong response from the webhook: {reason}" if status is not None else reason,
                )
            await asyncio.sleep(self.webhook_retry_delay)

    def _ensure_webhook_sender(self) -> None:
        if self._webhook_task is None or self._webhook_task.done():
            assert self._loop is not None
            self._webhook_task = self._loop.create_task(self._webhook_sender())

    # -- serving --------------------------------------------------------------------------------

    async def serve(self, token: str, method: str, params: _Params, handler: _ApiHandler) -> Any:
        """Serve one API request; returns the result or raises ApiError."""
        if not TOKEN_RE.match(token):
            raise ApiError(404, "Not Found")
        if token != self.token:
            raise ApiError(401, "Unauthorized")
        canonical = _canonical(method)
        if canonical is None:
            with self._lock:
                self._unimplemented.append(method)
            raise ApiError(404, "Not Found")
        with self._lock:
            fault = self._take_fault(canonical, params)
        if fault is not None and fault.delay:
            await asyncio.sleep(fault.delay)
        if fault is not None and fault.error is not None and not fault.applied:
            raise fault.error
        if canonical == "getUpdates":
            result = await self._get_updates(params, handler)
        else:
            with self._lock:
                self._check_flood(canonical, params)
                result = getattr(self, f"_m_{canonical}")(params)
                self._count_flood(canonical, params)
        if fault is not None and fault.error is not None:
            raise fault.error
        return result

    def record_call(self, call: ApiCall) -> int:
        """Append a call to the log; returns its index for `finish_call`."""
        with self._lock:
            self._calls.append(call)
            return len(self._calls) - 1

    def finish_call(self, index: int, **changes: Any) -> None:
        """Fill in the outcome of a logged call."""
        with self._lock:
            old = self._calls[index]
            self._calls[index] = ApiCall(
                **{**old.__dict__, "finished": time.monotonic(), **changes}
            )

    def record_internal_error(self, text: str) -> None:
        """Remember an emulator bug met while serving."""
        with self._lock:
            self._internal_errors.append(text)

    # -- getUpdates and webhooks ----------------------------------------------------------------

    async def _get_updates(self, params: _Params, handler: _ApiHandler) -> list[dict[str, Any]]:
        with self._lock:
            if self._webhook is not None:
                raise ApiError(409, WEBHOOK_ACTIVE_CONFLICT)
            offset = params.integer("offset")
            limit = params.integer("limit") or 100
            limit = min(max(limit, 1), 100)
            timeout = min(max(params.number("timeout") or 0.0, 0.0), MAX_LONG_POLL)
            allowed = params.json_value("allowed_updates", "can't parse allowed updates JSON array")
            if allowed is not None:
                self._allowed_updates = tuple(allowed)
            if offset:
                self._confirm(offset)
            if self._poller is not None:
                self._poller.conflict = GET_UPDATES_CONFLICT
                self._notify()
            poll = _Poll()
            self._poller = poll
        handler.poll = poll
        assert self._loop is not None
        deadline = self._loop.time() + timeout
        try:
            while True:
                with self._lock:
                    if poll.conflict:
                        raise ApiError(409, poll.conflict)
                    batch = self._take(limit)
                    remaining = deadline - self._loop.time()
                    if batch or remaining <= 0 or poll.closed:
                        return batch
                    event = self._updates_event
                assert event is not None
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(event.wait(), remaining)
        finally:
            with self._lock:
                if self._poller is poll:
                    self._poller = None

    def _m_setWebhook(self, p: _Params) -> _Result:
        url = p.text("url") or ""
        if not url:
            return self._m_deleteWebhook(p)
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https"):
            raise bad_request("bad webhook: An HTTPS URL must be provided for webhook")
        if parts.hostname not in ("127.0.0.1", "localhost", "::1"):
            # A test must never make the emulator send traffic off this machine.
            raise bad_request("bad webhook: emulator delivers only to loopback addresses")
        secret = p.text("secret_token")
        if secret is not None:
            if len(secret) > 256:
                raise bad_request("secret token is too long")
            if not re.fullmatch(r"[A-Za-z0-9_-]+", secret):
                raise bad_request("secret token contains unallowed characters")
        allowed = p.json_value("allowed_updates", "can't parse allowed updates JSON array")
        if allowed is not None:
            self._allowed_updates = tuple(allowed)
        if p.flag("drop_pending_updates"):
            self._pending.clear()
        info = WebhookInfo(
            url,
            secret or None,
            tuple(allowed) if allowed is not None else None,
            p.integer("max_connections") or 40,
            p.text("ip_address"),
        )
        already = self._webhook is not None and self._webhook.url == url
        self._webhook = info
        if self._poller is not None:
            self._poller.conflict = "Conflict: terminated by setWebhook request"
        self._ensure_webhook_sender()
        self._notify()
        return _Result(True, "Webhook is already set" if already else "Webhook was set")

    def _m_deleteWebhook(self, p: _Params) -> _Result:
        if p.flag("drop_pending_updates"):
            self._pending.clear()
        was_set = self._webhook is not None
        self._webhook = None
        self._notify()
        return _Result(True, "Webhook was deleted" if was_set else "Webhook is already deleted")

    def _m_getWebhookInfo(self, p: _Params) -> dict[str, Any]:
        hook = self._webhook
        info: dict[str, Any] = {
            "url": hook.url if hook else "",
            "has_custom_certificate": False,
            "pending_update_count": len(self._pending),
        }
        if hook is not None:
            info["max_connections"] = hook.max_connections
            if hook.ip_address:
                info["ip_address"] = hook.ip_address
            if hook.allowed_updates is not None:
                info["allowed_updates"] = list(hook.allowed_updates)
            if self._webhook_last_error is not None:
                info["last_error_date"], info["last_error_message"] = self._webhook_last_error
        return info

    # -- bot identity and lifecycle methods -------------------------------------------------------

    def _m_getMe(self, p: _Params) -> dict[str, Any]:
        return {
            **self._bot_user_json(),
            "can_join_groups": True,
            "can_read_all_group_messages": False,
            "supports_inline_queries": False,
            "can_connect_to_business": False,
            "has_main_web_app": False,
        }

    def _m_logOut(self, p: _Params) -> bool:
        return True

    def _m_close(self, p: _Params) -> bool:
        return True

    # -- commands -------------------------------------------------------------------------------

    def _m_setMyCommands(self, p: _Params) -> bool:
        commands = p.json_value("commands", "can't parse commands JSON object")
        if not isinstance(commands, list):
            raise bad_request('parameter "commands" is required')
        if len(commands) > 100:
            raise bad_request("too many commands specified")
        stored = []
        for item in commands:
            if not isinstance(item, dict):
                raise bad_request("can't parse BotCommand: expected an Object")
            command = str(item.get("command", "")).removeprefix("/")
            description = str(item.get("description", ""))
            if not re.fullmatch(r"[a-z0-9_]{1,32}", command):
                raise bad_request("BOT_COMMAND_INVALID")
            if not 1 <= len(description) <= 256:
                raise bad_request("BOT_COMMAND_DESCRIPTION_INVALID")
            stored.append({"command": command, "description": description})
        scope = p.json_value("scope", "can't parse BotCommandScope JSON object")
        self._commands[(_scope_key(scope), p.text("language_code") or "")] = stored
        return True

    def _m_getMyCommands(self, p: _Params) -> list[dict[str, str]]:
        scope = p.json_value("scope", "can't parse BotCommandScope JSON object")
        return copy.deepcopy(
            self._commands.get((_scope_key(scope), p.text("language_code") or ""), [])
        )

    def _m_deleteMyCommands(self, p: _Params) -> bool:
        scope = p.json_value("scope", "can't parse BotCommandScope JSON object")
        self._commands.pop((_scope_key(scope), p.text("language_code") or ""), None)
        return True

    # -- chats, messages ------------------------------------------------------------------------

    def _chat_for_sending(self, p: _Params) -> _User:
        """The private chat to write to, with Telegram's checks in Telegram's order."""
        raw = p.values.get("chat_id")
        if raw is None or raw == "":
            raise bad_request("chat_id is empty")
        chat_id = _int_or_none(raw)
        user = self._users.get(chat_id) if chat_id is not None else None
        if user is None:
            raise bad_request("chat not found")
        if user.blocked:
            raise forbidden("bot was blocked by the user")
        if not user.started:
            raise forbidden("bot can't initiate conversation with a user")
        return user

    def _formatted(
        self, p: _Params, text_name: str, entities_name: str, *, caption: bool
    ) -> tuple[str | None, list[dict[str, Any]], str | None, str | None]:
        """Parse text or caption: (plain text, entities, raw text, parse mode)."""
        raw = p.text(text_name)
        if raw is None or raw == "":
            if caption:
                return None, [], None, None
            raise bad_request("message text is empty")
        parse_mode = p.text("parse_mode") or None
        explicit = p.json_value(entities_name, "can't parse entities JSON object")
        try:
            if explicit:
                text, entities = raw, _checked_entities(explicit)
            elif parse_mode is None:
                text, entities = raw, []
            elif parse_mode.lower() == "html":
                text, entities = parse_html(raw, strict_ampersand=self.strict_ampersand)
            elif parse_mode.lower() == "markdownv2":
                text, entities = parse_markdown_v2(raw)
            elif parse_mode.lower() == "markdown":
                raise bad_request("emulator: parse_mode Markdown is not emulated; use HTML")
            else:
                raise bad_request("unsupported parse_mode")
        except EntityParseError as exc:
            raise bad_request(f"can't parse entities: {exc}") from None
        try:
            limit = MAX_CAPTION_LENGTH if caption else MAX_TEXT_LENGTH
            text, entities = finish_text(text, entities, limit=limit, allow_empty=caption)
        except ValueError as exc:
            if str(exc) == "empty":
                raise bad_request("message text is empty") from None
            too_long = "message caption is too long" if caption else "message is too long"
            raise bad_request(too_long) from None
        return text or None, entities, raw, parse_mode

    def _reply_markup(self, p: _Params, *, inline_only: bool = False) -> dict[str, Any] | None:
        markup = p.json_value("reply_markup", "can't parse reply keyboard markup JSON object")
        if markup is None:
            return None
        if not isinstance(markup, dict):
            raise bad_request("can't parse reply keyboard markup JSON object")
        if "inline_keyboard" in markup:
            rows = markup["inline_keyboard"]
            if not isinstance(rows, list):
                raise bad_request(
                    'field "inline_keyboard" of the InlineKeyboardMarkup must be an Array'
                )
            for row in rows:
                if not isinstance(row, list):
                    raise bad_request(
                        'field "inline_keyboard" of the InlineKeyboardMarkup must be an Array '
                        "of Arrays"
                    )
                for button in row:
                    _check_inline_button(button)
            cleaned = [row for row in rows if row]
            return {"inline_keyboard": copy.deepcopy(cleaned)} if cleaned else None
        if inline_only:
            raise bad_request("emulator: only an inline keyboard can be set on an edit")
        if any(k in markup for k in ("keyboard", "remove_keyboard", "force_reply")):
            return copy.deepcopy(markup)
        raise bad_request("can't parse reply keyboard markup JSON object")

    def _reply_target(self, p: _Params, chat: _User) -> int | None:
        reply = p.json_value("reply_parameters", "can't parse reply parameters JSON object")
        message_id = p.integer("reply_to_message_id")
        allow_missing = p.flag("allow_sending_without_reply")
        if isinstance(reply, dict):
            message_id = _int_or_none(reply.get("message_id"))
            allow_missing = bool(reply.get("allow_sending_without_reply", False))
        if not message_id:
            return None
        target = self._messages[chat.id].get(message_id)
        if target is None or target.deleted:
            if allow_missing:
                return None
            raise bad_request("message to be replied not found")
        return message_id

    def _new_message(
        self,
        chat_id: int,
        *,
        from_bot: bool,
        sender_id: int,
        version: Version,
        document: StoredFile | None = None,
        reply_to: int | None = None,
    ) -> _Msg:
        message_id = self._next_message_id[chat_id]
        self._next_message_id[chat_id] += 1
        msg = _Msg(
            message_id,
            chat_id,
            from_bot,
            sender_id,
            int(version.at),
            [version],
            document,
            reply_to,
        )
        self._messages[chat_id][message_id] = msg
        return msg

    def _message_json(self, msg: _Msg, *, with_reply: bool = True) -> dict[str, Any]:
        user = self._users[msg.chat_id]
        data: dict[str, Any] = {
            "message_id": msg.message_id,
            "from": self._bot_user_json() if msg.from_bot else user.user_json(),
            "chat": user.chat_json(),
            "date": msg.date,
        }
        if msg.edit_date is not None:
            data["edit_date"] = msg.edit_date
        if with_reply and msg.reply_to_message_id is not None:
            target = self._messages[msg.chat_id].get(msg.reply_to_message_id)
            if target is not None:
                data["reply_to_message"] = self._message_json(target, with_reply=False)
        version = msg.versions[-1]
        if version.text is not None:
            data["text"] = version.text
            if version.entities:
                data["entities"] = list(version.entities)
        if msg.document is not None:
            data["document"] = msg.document.document_json()
            if version.caption is not None:
                data["caption"] = version.caption
                if version.caption_entities:
                    data["caption_entities"] = list(version.caption_entities)
        markup = version.reply_markup
        if markup is not None and "inline_keyboard" in markup:
            # Telegram echoes only inline keyboards; reply keyboards are not part of the message.
            data["reply_markup"] = copy.deepcopy(markup)
        return data

    def _m_sendMessage(self, p: _Params) -> dict[str, Any]:
        markup = self._reply_markup(p)
        text, entities, raw, parse_mode = self._formatted(p, "text", "entities", caption=False)
        chat = self._chat_for_sending(p)
        reply_to = self._reply_target(p, chat)
        version = Version(
            text, tuple(entities), None, (), raw, parse_mode, markup, self._wall(), "sendMessage"
        )
        msg = self._new_message(
            chat.id, from_bot=True, sender_id=self.bot_id, version=version, reply_to=reply_to
        )
        return self._message_json(msg)

    def _m_sendChatAction(self, p: _Params) -> bool:
        self._chat_for_sending(p)
        if not p.text("action"):
            raise bad_request('parameter "action" is required')
        return True

    def _editable(self, p: _Params) -> _Msg:
        if p.has("inline_message_id"):
            raise bad_request("emulator: inline messages are not emulated")
        raw = p.values.get("chat_id")
        if raw is None or raw == "":
            raise bad_request("chat_id is empty")
        chat_id = _int_or_none(raw)
        if chat_id not in self._users:
            raise bad_request("chat not found")
        message_id = p.integer("message_id")
        if not message_id:
            raise bad_request("message identifier is not specified")
        user = self._users[chat_id]
        if user.blocked:
            raise forbidden("bot was blocked by the user")
        msg = self._messages[chat_id].get(message_id)
        if msg is None or msg.deleted:
            raise bad_request("message to edit not found")
        if not msg.from_bot:
            raise bad_request("message can't be edited")
        return msg

    def _apply_edit(self, msg: _Msg, version: Version) -> dict[str, Any]:
        old = msg.versions[-1]
        same = (
            old.text == version.text
            and old.entities == version.entities
            and old.caption == version.caption
            and old.caption_entities == version.caption_entities
            and _inline(old.reply_markup) == _inline(version.reply_markup)
        )
        if same:
            raise bad_request(NOT_MODIFIED.removeprefix("Bad Request: "))
        msg.versions.append(version)
        msg.edit_date = int(version.at)
        return self._message_json(msg)

    def _m_editMessageText(self, p: _Params) -> dict[str, Any]:
        markup = self._reply_markup(p, inline_only=True)
        text, entities, raw, parse_mode = self._formatted(p, "text", "entities", caption=False)
        msg = self._editable(p)
        old = msg.versions[-1]
        if old.text is None:
            raise bad_request("there is no text in the message to edit")
        # Without reply_markup, an edit removes the inline keyboard: Telegram's rule.
        version = Version(
            text,
            tuple(entities),
            None,
            (),
            raw,
            parse_mode,
            markup,
            self._wall(),
            "editMessageText",
        )
        return self._apply_edit(msg, version)

    def _m_editMessageCaption(self, p: _Params) -> dict[str, Any]:
        markup = self._reply_markup(p, inline_only=True)
        caption, entities, raw, parse_mode = self._formatted(
            p, "caption", "caption_entities", caption=True
        )
        msg = self._editable(p)
        old = msg.versions[-1]
        if msg.document is None:
            raise bad_request("there is no caption in the message to edit")
        version = Version(
            old.text,
            old.entities,
            caption,
            tuple(entities),
            raw,
            parse_mode,
            markup,
            self._wall(),
            "editMessageCaption",
        )
        return self._apply_edit(msg, version)

    def _m_editMessageReplyMarkup(self, p: _Params) -> dict[str, Any]:
        markup = self._reply_markup(p, inline_only=True)
        msg = self._editable(p)
        old = msg.versions[-1]
        version = Version(
            old.text,
            old.entities,
            old.caption,
            old.caption_entities,
            old.raw,
            old.parse_mode,
            markup,
            self._wall(),
            "editMessageReplyMarkup",
        )
        return self._apply_edit(msg, version)

    def _m_deleteMessage(self, p: _Params) -> bool:
        chat_id = _int_or_none(p.values.get("chat_id"))
        if chat_id not in self._users:
            raise bad_request("chat not found")
        msg = self._messages[chat_id].get(p.integer("message_id") or 0)
        if msg is None or msg.deleted:
            raise bad_request("message to delete not found")
        msg.deleted = True
        return True

    # -- callback queries -----------------------------------------------------------------------

    def _m_answerCallbackQuery(self, p: _Params) -> bool:
        query = self._queries.get(p.text("callback_query_id") or "")
        if query is None or query.answer is not None:
            raise bad_request(QUERY_TOO_OLD.removeprefix("Bad Request: "))
        age = self._now() - query.created
        if age > self.callback_query_timeout:
            raise bad_request(QUERY_TOO_OLD.removeprefix("Bad Request: "))
        query.answer = CallbackAnswer(
            query.query_id,
            p.text("text"),
            p.flag("show_alert"),
            p.text("url"),
            p.integer("cache_time") or 0,
            age,
            time.monotonic(),
        )
        return True

    # -- files ----------------------------------------------------------------------------------

    def _store_file(
        self, data: bytes, file_name: str | None, mime_type: str | None, uploaded_by: int
    ) -> StoredFile:
        number = next(self._file_counter)
        extension = ""
        if file_name and "." in file_name:
            extension = "." + re.sub(r"[^A-Za-z0-9]", "", file_name.rsplit(".", 1)[1])[:10]
        stored = StoredFile(
            file_id="BQACAgIAAxkBAA" + secrets.token_urlsafe(40).replace("-", "x")[:50],
            file_unique_id="AgAD" + secrets.token_urlsafe(9)[:12],
            data=data,
            file_name=file_name,
            mime_type=mime_type,
            file_path=f"documents/file_{number}{extension}",
            uploaded_by=uploaded_by,
        )
        self._files[stored.file_id] = stored
        self._file_paths[stored.file_path] = stored.file_id
        return stored

    def _m_sendDocument(self, p: _Params) -> dict[str, Any]:
        markup = self._reply_markup(p)
        caption, entities, raw, parse_mode = self._formatted(
            p, "caption", "caption_entities", caption=True
        )
        document = self._input_file(p, "document")
        chat = self._chat_for_sending(p)
        reply_to = self._reply_target(p, chat)
        version = Version(
            None,
            (),
            caption,
            tuple(entities),
            raw,
            parse_mode,
            markup,
            self._wall(),
            "sendDocument",
        )
        msg = self._new_message(
            chat.id,
            from_bot=True,
            sender_id=self.bot_id,
            version=version,
            document=document,
            reply_to=reply_to,
        )
        return self._message_json(msg)

    def _input_file(self, p: _Params, name: str) -> StoredFile:
        """An uploaded part (directly or by attach://) or a known file_id."""
        part = p.files.get(name)
        value = p.text(name)
        if part is None and value and value.startswith("attach://"):
            part = p.files.get(value.removeprefix("attach://"))
        if part is not None:
            file_name, data, mime_type = part
            if not data:
                raise bad_request("file must be non-empty")
            return self._store_file(data, file_name or None, mime_type or None, self.bot_id)
        if not value:
            raise bad_request(f'parameter "{name}" is required')
        if value in self._files:
            return self._files[value]
        # URLs would make Telegram fetch from the internet: the emulator never does.
        raise bad_request("wrong file identifier/HTTP URL specified")

    def _m_getFile(self, p: _Params) -> dict[str, Any]:
        file_id = p.text("file_id")
        if not file_id:
            raise bad_request('parameter "file_id" is required')
        stored = self._files.get(file_id)
        if stored is None:
            raise bad_request("wrong file_id or the file is temporarily unavailable")
        if stored.file_size > MAX_GETFILE_BYTES:
            raise bad_request("file is too big")
        return {
            "file_id": stored.file_id,
            "file_unique_id": stored.file_unique_id,
            "file_size": stored.file_size,
            "file_path": stored.file_path,
        }

    def download(self, token: str, file_path: str) -> bytes:
        """The bytes behind a file URL, or ApiError as Telegram's file server answers."""
        if token != self.token:
            raise ApiError(401, "Unauthorized")
        with self._lock:
            file_id = self._file_paths.get(file_path)
            if file_id is None:
                raise ApiError(404, "Not Found")
            return self._files[file_id].data


def _int_or_none(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    try:
        return int(str(value).strip())
    except (TypeError, ValueError):
        return None


def _scope_key(scope: Any) -> str:
    if not scope:
        scope = {"type": "default"}
    return json.dumps(scope, sort_keys=True)


def _inline(markup: dict[str, Any] | None) -> dict[str, Any] | None:
    """The part of a markup that belongs to a message: only an inline keyboard does."""
    if markup is not None and "inline_keyboard" in markup:
        return markup
    return None


_BUTTON_ACTIONS = (
    "callback_data",
    "url",
    "login_url",
    "switch_inline_query",
    "switch_inline_query_current_chat",
    "switch_inline_query_chosen_chat",
    "callback_game",
    "pay",
    "web_app",
    "copy_text",
)


def _check_inline_button(button: Any) -> None:
    prefix = "can't parse inline keyboard button: "
    if not isinstance(button, dict):
        raise bad_request(prefix + "InlineKeyboardButton must be an Object")
    if not isinstance(button.get("text"), str):
        raise bad_request(prefix + 'Field "text" must be of type String')
    # An empty callback_data counts as none, as on Telegram.
    if not any(button.get(k) not in (None, "") for k in _BUTTON_ACTIONS):
        raise bad_request(prefix + "Text buttons are unallowed in the inline keyboard")
    data = button.get("callback_data")
    if data is not None and len(str(data).encode("utf-8")) > MAX_CALLBACK_DATA_BYTES:
        raise bad_request("BUTTON_DATA_INVALID")


def _checked_entities(entities: Any) -> list[dict[str, Any]]:
    if not isinstance(entities, list):
        raise bad_request("can't parse entities JSON object")
    checked = []
    for entity in entities:
        if not isinstance(entity, dict) or not isinstance(entity.get("type"), str):
            raise bad_request("can't parse MessageEntity: expected an Object with a type")
        offset, length = _int_or_none(entity.get("offset")), _int_or_none(entity.get("length"))
        if offset is None or length is None or offset < 0 or length <= 0:
            raise bad_request("can't parse MessageEntity: offset and length must be numbers")
        checked.append(dict(entity, offset=offset, length=length))
    return _sorted_entities(checked)


_METHODS = {
    name.lower(): name
    for name in (
        "getMe",
        "logOut",
        "close",
        "getUpdates",
        "setWebhook",
        "deleteWebhook",
        "getWebhookInfo",
        "sendMessage",
        "sendChatAction",
        "editMessageText",
        "editMessageCaption",
        "editMessageReplyMarkup",
        "deleteMessage",
        "answerCallbackQuery",
        "sendDocument",
        "getFile",
        "setMyCommands",
        "getMyCommands",
        "deleteMyCommands",
    )
}


def _canonical(method: str) -> str | None:
    """The implemented method's canonical name; Bot API method names are case-insensitive."""
    return _METHODS.get(method.lower())


# ---------------------------------------------------------------------------------------------
# Users: the test side of a private chat.
# ---------------------------------------------------------------------------------------------


class EmulatedUser:
    """A Telegram user a test drives: sends messages and documents, taps buttons, blocks."""

    def __init__(self, emu: Emulator, user_id: int) -> None:
        self.emu = emu
        self.id = user_id
        self._seen = 0  # the highest bot message id next_message() has returned

    def __repr__(self) -> str:
        return f"EmulatedUser({self.id})"

    @property
    def _state(self) -> _User:
        return self.emu._users[self.id]

    @property
    def started(self) -> bool:
        """True once the user opened the chat with the bot."""
        with self.emu._lock:
            return self._state.started

    @property
    def blocked(self) -> bool:
        """True while the user blocks the bot."""
        with self.emu._lock:
            return self._state.blocked

    def _send(
        self,
        *,
        text: str | None = None,
        document: StoredFile | None = None,
        caption: str | None = None,
        reply_to: int | None = None,
    ) -> Message:
        emu = self.emu
        with emu._lock:
            user = self._state
            if user.blocked:
                raise RuntimeError(f"user {self.id} blocked the bot: unblock() first")
            # Any message opens the chat; Telegram's clients only offer "Start" before that.
            user.started = True
            entities = tuple(bot_command_entities(text)) if text is not None else ()
            caption_entities = tuple(bot_command_entities(caption)) if caption else ()
            version = Version(
                text,
                entities,
                caption,
                caption_entities,
                text or caption,
                None,
                None,
                emu._wall(),
                "user",
            )
            msg = emu._new_message(
                self.id,
                from_bot=False,
                sender_id=self.id,
                version=version,
                document=document,
                reply_to=reply_to,
            )
            msg.update_id = emu._add_update("message", emu._message_json(msg))
            return msg.snapshot()

    def send_text(self, text: str) -> Message:
        """Send a text message; "/start payload" (or any message) opens the chat with the bot."""
        if not text:
            raise ValueError("Telegram clients do not send empty messages")
        return self._send(text=text)

    def reply_to(self, message: Message | int, text: str) -> Message:
        """Send a text that replies to a message of this chat (ForceReply flows)."""
        with self.emu._lock:
            target = self._message(message)
            return self._send(text=text, reply_to=target.message_id)

    def send_document(
        self,
        data: bytes,
        filename: str,
        mime_type: str | None = None,
        *,
        caption: str | None = None,
    ) -> Message:
        """Send a file; getFile and the file URL serve its bytes to the bot."""
        if not data:
            raise ValueError("Telegram does not send empty files")
        with self.emu._lock:
            stored = self.emu._store_file(data, filename, mime_type, self.id)
            return self._send(document=stored, caption=caption)

    def _message(self, message: Message | int) -> _Msg:
        message_id = message if isinstance(message, int) else message.message_id
        msg = self.emu._messages[self.id].get(message_id)
        if msg is None or msg.deleted:
            raise LookupError(f"no message {message_id} in the chat with user {self.id}")
        return msg

    def tap(self, message: Message | int, button_text: str) -> str:
        """Tap the inline button with this text on the message's current keyboard: the query id."""
        with self.emu._lock:
            msg = self._message(message)
            button = msg.snapshot().button(button_text)
            if button.callback_data is None:
                raise LookupError(f"button {button_text!r} has no callback_data: {button.raw}")
            return self._callback(msg, button.callback_data)

    def tap_data(self, message: Message | int, data: str) -> str:
        """Send a callback query with arbitrary data from a bot message (forgery tests)."""
        with self.emu._lock:
            msg = self._message(message)
            if not msg.from_bot:
                raise LookupError("callback queries come only from the bot's messages")
            return self._callback(msg, data)

    def _callback(self, msg: _Msg, data: str) -> str:
        emu = self.emu
        query_id = str(uuid.uuid4().int >> 66)
        payload = {
            "id": query_id,
            "from": self._state.user_json(),
            "message": emu._message_json(msg),
            "chat_instance": str(abs(hash((emu.bot_id, self.id))) % 10**18),
            "data": data,
        }
        update_id = emu._add_update("callback_query", payload)
        emu._queries[query_id] = _Query(
            query_id, self.id, self.id, msg.message_id, data, update_id, emu._now()
        )
        return query_id

    def block(self) -> None:
        """Block the bot: sending to this user now fails with 403 (a my_chat_member update)."""
        self._set_blocked(True)

    def unblock(self) -> None:
        """Unblock the bot (the user pressed "Restart"; a my_chat_member update)."""
        self._set_blocked(False)

    def _set_blocked(self, blocked: bool) -> None:
        emu = self.emu
        with emu._lock:
            user = self._state
            if user.blocked == blocked:
                return
            user.blocked = blocked
            old, new = ("member", "kicked") if blocked else ("kicked", "member")
            member = {"user": emu._bot_user_json()}
            emu._add_update(
                "my_chat_member",
                {
                    "chat": user.chat_json(),
                    "from": user.user_json(),
                    "date": int(emu._wall()),
                    "old_chat_member": {**member, "status": old}
                    | ({"until_date": 0} if old == "kicked" else {}),
                    "new_chat_member": {**member, "status": new}
                    | ({"until_date": 0} if new == "kicked" else {}),
                },
            )

    def messages(self) -> list[Message]:
        """The bot's messages in this chat, oldest first."""
        return self.emu.messages(self.id)

    def last_message(self) -> Message | None:
        """The bot's latest message in this chat."""
        return self.emu.last_message(self.id)

    async def next_message(self, timeout: float = 5.0) -> Message:
        """Await the bot's next message in this chat, after the last one this method returned."""

        def newer() -> Message | None:
            return next((m for m in self.messages() if m.message_id > self._seen), None)

        message = await self.emu.wait_for(newer, timeout)
        self._seen = message.message_id
        return message

    def skip_messages(self) -> None:
        """Make next_message() ignore the bot's messages so far."""
        sent = self.messages()
        if sent:
            self._seen = sent[-1].message_id


# ---------------------------------------------------------------------------------------------
# HTTP handlers.
# ---------------------------------------------------------------------------------------------


class _ApiHandler(tornado.web.RequestHandler):
    """/bot{token}/{method}: parse the parameters, serve, answer with the envelope."""

    SUPPORTED_METHODS = ("GET", "POST")

    def initialize(self, emu: Emulator) -> None:
        self.emu = emu
        self.poll: _Poll | None = None

    def check_xsrf_cookie(self) -> None:
        """No XSRF checks: this is an API."""

    def on_connection_close(self) -> None:
        # The client hung up (a cancelled long poll): stop waiting for it.
        if self.poll is not None:
            self.poll.closed = True
            self.emu._notify()

    async def get(self, token: str, method: str) -> None:
        await self._handle(token, method)

    async def post(self, token: str, method: str) -> None:
        await self._handle(token, method)

    def _params(self) -> _Params:
        request = self.request
        content_type = request.headers.get("Content-Type", "").split(";")[0].strip().lower()
        values: dict[str, Any] = {
            k: v[-1].decode("utf-8", "replace") for k, v in request.query_arguments.items()
        }
        files: dict[str, tuple[str, bytes, str]] = {}
        typed = False
        if content_type == "application/json" and request.body:
            try:
                body = json.loads(request.body)
            except ValueError:
                raise bad_request("can't parse JSON object") from None
            if not isinstance(body, dict):
                raise bad_request("can't parse JSON object")
            values.update(body)
            typed = True
        else:
            values.update(
                {k: v[-1].decode("utf-8", "replace") for k, v in request.body_arguments.items()}
            )
            for name, parts in request.files.items():
                part = parts[-1]
                files[name] = (part["filename"], part["body"], part["content_type"])
        return _Params(values, files, typed)

    async def _handle(self, token: str, method: str) -> None:
        emu = self.emu
        try:
            params = self._params()
        except ApiError as exc:
            self._answer(*exc.payload())
            return
        canonical = _canonical(method) or method
        index = emu.record_call(
            ApiCall(
                canonical,
                params.logged(),
                {name: part[0] for name, part in params.files.items()},
                time.monotonic(),
                None,
                None,
                None,
                None,
            )
        )
        try:
            result = await emu.serve(token, method, params, self)
        except ApiError as exc:
            emu.finish_call(index, status=exc.code, description=exc.description)
            self._answer(*exc.payload())
            return
        except Exception as exc:
            # An emulator bug: the bot sees a 500, the fixture fails the test at teardown.
            emu.record_internal_error(f"{canonical}: {exc!r}")
            emu.finish_call(index, status=500, description=f"emulator bug: {exc!r}")
            self._answer(*ApiError(500, f"Internal Server Error: emulator bug: {exc!r}").payload())
            return
        envelope: dict[str, Any] = {"ok": True}
        if isinstance(result, _Result):
            envelope["result"] = result.value
            if result.description:
                envelope["description"] = result.description
            result = result.value
        else:
            envelope["result"] = result
        emu.finish_call(index, status=200, result=result)
        if self.poll is not None and self.poll.closed:
            # The client hung up, or the emulator is stopping: drop the connection, as a dying
            # server does, rather than let tornado finish the request with an empty 200.
            self.request.connection.close()
            return
        self._answer(200, json.dumps(envelope).encode(), "application/json")

    def _answer(self, status: int, body: bytes, content_type: str) -> None:
        if self.request.connection is None or self._finished:
            return
        self.set_status(status)
        self.set_header("Content-Type", content_type)
        with contextlib.suppress(tornado.iostream.StreamClosedError):
            self.finish(body)


class _FileHandler(tornado.web.RequestHandler):
    """/file/bot{token}/{file_path}: the bytes of a stored file."""

    def initialize(self, emu: Emulator) -> None:
        self.emu = emu

    def get(self, token: str, file_path: str) -> None:
        index = self.emu.record_call(
            ApiCall("(download)", {"file_path": file_path}, {}, time.monotonic(), *[None] * 4)
        )
        try:
            data = self.emu.download(token, file_path)
        except ApiError as exc:
            self.emu.finish_call(index, status=exc.code, description=exc.description)
            status, body, content_type = exc.payload()
            self.set_status(status)
            self.set_header("Content-Type", content_type)
            self.finish(body)
            return
        self.emu.finish_call(index, status=200, result=len(data))
        self.set_header("Content-Type", "application/octet-stream")
        self.finish(data)


class _NotFoundHandler(tornado.web.RequestHandler):
    """Any other path: Telegram's 404."""

    def prepare(self) -> None:
        status, body, content_type = ApiError(404, "Not Found").payload()
        self.set_status(status)
        self.set_header("Content-Type", content_type)
        self.finish(body)

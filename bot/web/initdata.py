"""A Mini App's Telegram `initData`, verified as Telegram specifies ("Validating data received
via the Mini App", core.telegram.org/bots/webapps): the data-check-string is every received
field but `hash`, sorted by key, as `key=value` lines joined by "\\n"; the secret key is
HMAC-SHA256 of the bot token keyed with "WebAppData"; `hash` must be the hex HMAC-SHA256 of the
data-check-string under that key, compared in constant time; and `auth_date` must be recent.

The user it names is the page's only identity: the page sends initData with every API call
(`Authorization: tma <initData>`), and nothing else it says about its user is believed.

    InitDataError            initData that proves nothing (the API answers 401)
    ├── MissingInitData      no `Authorization: tma …` header, or an empty one
    ├── MalformedInitData    not a query string, no hash, no user, a date that does not read
    ├── ForgedInitData       the hash does not match: forged, altered, or another bot's
    └── ExpiredInitData      auth_date older than MANZOORI_WEBAPP_MAX_AGE_SECONDS
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import re
from dataclasses import dataclass
from urllib.parse import parse_qsl

from core.nesting import Syntax, too_deep

SCHEME = "tma"  # Authorization: tma <initData>, as Telegram's own Mini App examples send it
_SECRET_KEY_KEY = b"WebAppData"  # Telegram's constant: the key of the bot token's HMAC
_HASH = re.compile(r"[0-9a-f]{64}")
# Seconds auth_date may lie ahead of our clock: Telegram's clock and ours differ a little.
CLOCK_SKEW = 60
# initData is a few hundred bytes; a header far longer is not Telegram's.
MAX_INIT_DATA = 4096


class InitDataError(Exception):
    """initData that proves nothing about who sent the request."""


class MissingInitData(InitDataError):
    """No initData: the request carries no `Authorization: tma <initData>` header."""


class MalformedInitData(InitDataError):
    """initData that does not read as Telegram's: no hash, no user, or a bad field."""


class ForgedInitData(InitDataError):
    """initData whose hash does not match: forged, altered, or signed for another bot."""


class ExpiredInitData(InitDataError):
    """initData older than the API accepts: open the Mini App from its card again."""


@dataclass(frozen=True)
class WebAppUser:
    """The Telegram user a verified initData names."""

    id: int
    first_name: str
    language_code: str | None
    auth_date: int  # Unix seconds: when Telegram handed the data to the page


def secret_key(bot_token: str) -> bytes:
    """The key initData is signed with: HMAC-SHA256 of the bot token, keyed "WebAppData"."""
    return hmac.new(_SECRET_KEY_KEY, bot_token.encode(), hashlib.sha256).digest()


def check_string(fields: dict[str, str]) -> str:
    """Telegram's data-check-string: every field but `hash`, sorted by key, `key=value` a line."""
    return "\n".join(f"{key}={fields[key]}" for key in sorted(fields) if key != "hash")


def from_header(header: str | None) -> str:
    """The initData of an `Authorization: tma <initData>` header; MissingInitData otherwise."""
    scheme, _, raw = (header or "").strip().partition(" ")
    if scheme.lower() != SCHEME or not raw.strip():
        raise MissingInitData("send the Mini App's initData as `Authorization: tma <initData>`")
    return raw.strip()


def verify(raw: str, bot_token: str, *, now: int, max_age: int) -> WebAppUser:
    """The user of `raw` initData signed with `bot_token` and at most `max_age` seconds old at
    Unix time `now`; an InitDataError saying why not."""
    fields = _fields(raw)
    given = fields.get("hash", "")
    if not _HASH.fullmatch(given):
        raise MalformedInitData("initData has no hash of 64 hex digits")
    expected = hmac.new(secret_key(bot_token), check_string(fields).encode(), hashlib.sha256)
    if not hmac.compare_digest(expected.hexdigest().encode(), given.encode()):
        raise ForgedInitData("initData is not signed for this bot")
    try:
        auth_date = int(fields["auth_date"])
    except (KeyError, ValueError):
        raise MalformedInitData("initData has no auth_date") from None
    if auth_date > now + CLOCK_SKEW:
        raise MalformedInitData("initData's auth_date is in the future")
    if now - auth_date > max_age:
        raise ExpiredInitData(
            f"initData is {now - auth_date}s old, more than {max_age}s: open the page again"
        )
    return _user(fields.get("user"), auth_date)


def _fields(raw: str) -> dict[str, str]:
    """The fields of a query string, each once; MalformedInitData otherwise."""
    if len(raw) > MAX_INIT_DATA:
        raise MalformedInitData(f"initData is longer than {MAX_INIT_DATA} characters")
    try:
        pairs = parse_qsl(raw, keep_blank_values=True, strict_parsing=True)
    except ValueError:
        raise MalformedInitData("initData is not a query string") from None
    fields = dict(pairs)
    if len(fields) != len(pairs):  # a repeated key: which one was signed?
        raise MalformedInitData("initData repeats a field")
    return fields


def _user(text: str | None, auth_date: int) -> WebAppUser:
    """The `user` field's JSON object, with a positive integer id."""
    user = None
    if text and too_deep(text, Syntax.JSON) is None:  # else json's recursion could run out
        with contextlib.suppress(ValueError):  # not JSON: it names no user, as below
            user = json.loads(text)
    user_id = user.get("id") if isinstance(user, dict) else None
    if not isinstance(user, dict) or type(user_id) is not int or user_id <= 0:
        raise MalformedInitData("initData names no user")
    language = user.get("language_code")
    return WebAppUser(
        id=user_id,
        first_name=str(user.get("first_name", "")),
        language_code=language if isinstance(language, str) else None,
        auth_date=auth_date,
    )

"""Telegram initData verification (bot/web/initdata.py), against initData signed the way
Telegram signs it by the Bot API emulator's own, separate implementation (bot/dev/botapi)."""

from __future__ import annotations

import hashlib
import hmac
import json
from urllib.parse import quote, urlencode

import pytest

from bot.dev.botapi import webapps
from bot.web import initdata
from bot.web.initdata import (
    ExpiredInitData,
    ForgedInitData,
    InitDataError,
    MalformedInitData,
    MissingInitData,
)

TOKEN = "7000000001:AAexampleexampleexampleexampleexam"
OTHER_BOT = "7000000002:AAanotherbotanotherbotanotherbotan"
NOW = 1_800_000_000
MAX_AGE = 3600
ALI = {"id": 2_000_002, "is_bot": False, "first_name": "Ali", "language_code": "ur"}


def signed(age: int = 0, token: str = TOKEN, user: dict[str, object] | None = ALI) -> str:
    """initData for Ali, as Telegram hands it to the page `age` seconds before NOW."""
    if user is None:
        return webapps.sign(token, {"auth_date": str(NOW - age), "chat_type": "private"})
    return webapps.init_data(token, dict(user), NOW - age, "8123")


def altered(raw: str, key: str, value: str) -> str:
    """`raw` with one field's value replaced after signing."""
    fields = dict(pair.split("=", 1) for pair in raw.split("&"))
    fields[key] = quote(value)
    return "&".join(f"{k}={v}" for k, v in fields.items())


def test_good_init_data_names_its_user() -> None:
    user = initdata.verify(signed(age=5), TOKEN, now=NOW, max_age=MAX_AGE)
    assert (user.id, user.first_name, user.language_code) == (2_000_002, "Ali", "ur")
    assert user.auth_date == NOW - 5


def test_the_hash_is_telegrams_hmac_of_the_sorted_fields() -> None:
    # Computed here step by step from Telegram's text, independently of both implementations.
    fields = {"user": json.dumps({"id": 7, "first_name": "Zed"}), "auth_date": str(NOW), "a": "1"}
    secret = hmac.new(b"WebAppData", TOKEN.encode(), hashlib.sha256).digest()
    check = f"a=1\nauth_date={NOW}\nuser={fields['user']}"
    digest = hmac.new(secret, check.encode(), hashlib.sha256).hexdigest()
    raw = urlencode({**fields, "hash": digest})
    assert initdata.verify(raw, TOKEN, now=NOW, max_age=MAX_AGE).id == 7


@pytest.mark.parametrize(
    ("raw", "refused"),
    [
        # one hex digit of the hash changed
        pytest.param(
            (lambda r: r[:-1] + ("0" if r[-1] != "0" else "1"))(signed()), ForgedInitData, id="hash"
        ),
        # someone else's id put in the user after signing
        pytest.param(
            altered(signed(), "user", json.dumps({**ALI, "id": 666})), ForgedInitData, id="user"
        ),
        # an older auth_date put back in, to look fresh
        pytest.param(altered(signed(age=7200), "auth_date", str(NOW)), ForgedInitData, id="date"),
        # well signed, but by another bot's token
        pytest.param(signed(token=OTHER_BOT), ForgedInitData, id="other-bot"),
        # one second older than MANZOORI_WEBAPP_MAX_AGE_SECONDS
        pytest.param(signed(age=MAX_AGE + 1), ExpiredInitData, id="too-old"),
        # dated further ahead than the clocks can differ
        pytest.param(signed(age=-(initdata.CLOCK_SKEW + 1)), MalformedInitData, id="future"),
        # signed, but naming nobody
        pytest.param(signed(user=None), MalformedInitData, id="no-user"),
        # a user whose id is not a number
        pytest.param(
            signed(user={"id": "2000002", "first_name": "Ali"}), MalformedInitData, id="id-text"
        ),
        # no hash at all
        pytest.param(f"auth_date={NOW}&user=%7B%22id%22%3A1%7D", MalformedInitData, id="no-hash"),
        # the hash in capitals: not how Telegram writes it
        pytest.param(
            (lambda r: r.replace(r[-64:], r[-64:].upper()))(signed()),
            MalformedInitData,
            id="hash-caps",
        ),
        # a field given twice: which one did Telegram sign?
        pytest.param(signed() + f"&auth_date={NOW}", MalformedInitData, id="repeated"),
        # not a query string
        pytest.param("just some text", MalformedInitData, id="not-a-query"),
        # far longer than any initData
        pytest.param("a=" + "x" * initdata.MAX_INIT_DATA, MalformedInitData, id="huge"),
    ],
)
def test_init_data_that_proves_nothing_is_refused(raw: str, refused: type[InitDataError]) -> None:
    with pytest.raises(refused):
        initdata.verify(raw, TOKEN, now=NOW, max_age=MAX_AGE)


def test_init_data_exactly_as_old_as_allowed_still_counts() -> None:
    assert initdata.verify(signed(age=MAX_AGE), TOKEN, now=NOW, max_age=MAX_AGE).id == 2_000_002


@pytest.mark.parametrize(
    "header",
    [
        None,  # no Authorization header
        "",  # an empty one
        "tma",  # the scheme without data
        "tma    ",  # the scheme and blanks
        "Bearer abc",  # another scheme
    ],
)
def test_a_header_without_init_data_is_missing(header: str | None) -> None:
    with pytest.raises(MissingInitData):
        initdata.from_header(header)


def test_the_header_gives_the_init_data_after_tma() -> None:
    raw = signed()
    assert initdata.from_header(f"tma {raw}") == raw
    assert initdata.from_header(f"TMA {raw}") == raw  # schemes are case-insensitive (RFC 9110)


def test_a_user_nested_too_deep_names_no_user() -> None:
    """Signed, so only Telegram could send it; still an InitDataError, never RecursionError."""
    fields = {"auth_date": str(NOW), "user": "[" * 1300}  # 3.9 KB of "%5B", under the limit
    with pytest.raises(MalformedInitData, match="initData names no user"):
        initdata.verify(webapps.sign(TOKEN, fields), TOKEN, now=NOW, max_age=MAX_AGE)

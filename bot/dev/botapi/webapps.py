"""Mini Apps (web_app buttons) as Telegram's clients open them: the button's URL is checked
when the bot sends it, and opening it hands the page signed initData in the URL fragment
(`#tgWebAppData=…`), as Telegram does.

Telegram's rules for an inline keyboard's `web_app` button, kept here: the button is allowed
only in private chats (the emulator has no other kind, so every chat qualifies), and its URL
must be https. Looser on purpose: plain http is also taken for a loopback host (localhost,
127.0.0.1, ::1), as the bot's MANZOORI_PUBLIC_URL allows, so that tests and the demo can open
the page on this machine; any other http URL is refused with Telegram's description.

initData is signed as Telegram signs it (core.telegram.org/bots/webapps, "Validating data
received via the Mini App"), independently of bot/web/initdata.py, which verifies it: the two
are each other's check.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from .errors import bad_request

_LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
# What the fragment says besides the data: the Bot API version the client speaks, and where.
CLIENT_VERSION = "8.0"
PLATFORM = "emulator"


def check_web_app(button: dict[str, Any]) -> None:
    """Refuse a web_app button as Telegram would: an object with an https URL (or, here,
    plain http to a loopback host)."""
    web_app = button["web_app"]
    url = web_app.get("url") if isinstance(web_app, dict) else None
    if not isinstance(url, str):
        raise bad_request('can\'t parse inline keyboard button: Field "url" must be of type String')
    parts = urlsplit(url)
    loopback = parts.scheme == "http" and parts.hostname in _LOOPBACK_HOSTS
    if not (parts.scheme == "https" and parts.hostname) and not loopback:
        raise bad_request(
            f"inline keyboard button Web App URL '{url}' is invalid: Only HTTPS links are allowed"
        )


def sign(token: str, fields: dict[str, str]) -> str:
    """`fields` as a query string with the `hash` Telegram computes for the bot `token`."""
    secret = hmac.new(b"WebAppData", token.encode(), hashlib.sha256).digest()
    data_check = "\n".join(f"{key}={fields[key]}" for key in sorted(fields))
    digest = hmac.new(secret, data_check.encode(), hashlib.sha256).hexdigest()
    return urlencode({**fields, "hash": digest}, quote_via=quote)


def init_data(token: str, user: dict[str, Any], auth_date: int, chat_instance: str) -> str:
    """The initData Telegram gives a Mini App opened from a private chat's inline button."""
    web_user = {key: value for key, value in user.items() if key != "is_bot"}
    web_user["allows_write_to_pm"] = True
    fields = {
        "user": json.dumps(web_user, ensure_ascii=False, separators=(",", ":")),
        "chat_instance": chat_instance,
        "chat_type": "private",
        "auth_date": str(auth_date),
    }
    return sign(token, fields)


def launch_url(url: str, data: str) -> str:
    """The page's URL as the client opens it: initData and the client's facts in the fragment."""
    fragment = urlencode(
        {"tgWebAppData": data, "tgWebAppVersion": CLIENT_VERSION, "tgWebAppPlatform": PLATFORM},
        quote_via=quote,
    )
    return f"{url.split('#', 1)[0]}#{fragment}"

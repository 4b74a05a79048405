"""The Mini App from a test's side: initData as Telegram signs it (by the Bot API emulator's
signer, bot/dev/botapi/webapps.py), the API's Authorization header, settings with a bot token
and the `web` fixture (the front door's routes over a test's store), and a long PO's terms and
sheet.

Import `miniapp_client` where the `web` fixture is needed (its own name, so that tests taking a
`web` argument do not shadow the import), with `# noqa: F401`.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import httpx
import pytest

from bot.config import Settings
from bot.dev.botapi import webapps
from bot.web.app import build_web
from bot.web.health import Heartbeats
from bot.web.metrics import Metrics
from store.sql import SqlStore
from tests.helpers.bot import settings_for

# The bot token the routes' tests run under: initData is signed with it.
TOKEN = "7000000001:AAexampleexampleexampleexampleexam"
# A token of another bot: initData it signed must not pass for ours.
OTHER_BOT_TOKEN = "7000000009:AAanotherbotanotherbotanotherbotan"


def miniapp_settings(db_url: str, **values: object) -> Settings:
    """A test's settings (tests.helpers.bot.settings_for) with TOKEN, so the Mini App is served."""
    return settings_for(db_url, telegram_bot_token=TOKEN, **values)


@pytest.fixture(name="web")
async def miniapp_client(store: SqlStore, db_url: str) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the front door (no bot beside it) on the test's store, under TOKEN."""
    app = build_web(miniapp_settings(db_url), store, Heartbeats(), Metrics())
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://web") as client:
        yield client


def init_data(token: str, user_id: int, first_name: str = "Ali", *, age: float = 0) -> str:
    """initData Telegram would give `user_id`'s Mini App, signed `age` seconds ago."""
    user = {"id": user_id, "is_bot": False, "first_name": first_name}
    return webapps.init_data(token, user, int(time.time() - age), "42")


def tma(raw: str) -> dict[str, str]:
    """The header every API call carries."""
    return {"Authorization": f"tma {raw}"}


def forged(raw: str) -> str:
    """`raw` with its hash's last hex digit changed."""
    return raw[:-1] + ("0" if raw[-1] != "0" else "1")


def long_terms(lines: int, price_pkr: int = 500) -> bytes:
    """Supplier terms of one supplier with `lines` SKUs, SKU-001 upwards."""
    rows = [
        "supplier_id,supplier_name,supplier_email,sku,description,unit_price_pkr,min_qty,max_qty"
    ]
    rows += [
        f"SUP-BIG,Big Bazaar Traders,orders@bigbazaar.example,SKU-{n:03},Part number {n},"
        f"{price_pkr + n},,"
        for n in range(1, lines + 1)
    ]
    return ("\n".join(rows) + "\n").encode()


def long_sheet(lines: int, quantity: int = 10) -> bytes:
    """A restock sheet ordering `quantity` of each of long_terms' SKUs."""
    rows = ["sku,quantity", *(f"SKU-{n:03},{quantity}" for n in range(1, lines + 1))]
    return ("\n".join(rows) + "\n").encode()

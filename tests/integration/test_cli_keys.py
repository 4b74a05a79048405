"""`manzoori keys rotate` and `manzoori verify` as the IT person runs them: the new data key put
first, the rotation, the old key removed, verify clean; verify with the old key alone lists
what it cannot open."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from uuid import uuid4
from zoneinfo import ZoneInfo

import pytest
from cryptography.fernet import Fernet

from bot.clock import utcnow
from core.approval.policies import ApprovalPolicy, Rules
from core.purchasing.requests import RequestLine
from core.purchasing.summaries import TypedRequest
from store.sql import SqlStore
from tests.helpers import suppliers
from tests.helpers.bot import with_terms
from tests.helpers.cli import Cli, base_env, ok, with_store
from tests.helpers.factories import FAST_RETRY, REQUESTER, T0, make_draft
from tests.helpers.store import DATA_KEY, grant_cast

pytestmark = pytest.mark.slow  # every test spawns `manzoori` subprocesses
RULES = Rules(approval=ApprovalPolicy(ttl=timedelta(hours=24)), retry=FAST_RETRY)
NEW, OLD = Fernet.generate_key().decode(), DATA_KEY.decode()


def a_po_sent(db_url: str, at: datetime) -> None:
    """The cast, the terms, and a PO e-mailed at `at`: a row in most sealed tables."""

    async def sent(store: SqlStore) -> None:
        await grant_cast(store)
        await with_terms(store)
        await suppliers.sent(store, make_draft(), at, RULES)
        async with store.begin() as tx:  # a typed request waiting for Submit
            lines = (RequestLine("CBL-USBC-1M", 40, note="for Eid"),)
            await tx.insert_typed_request(TypedRequest(str(uuid4()), REQUESTER, lines, (1,), at))

    with_store(db_url, sent)


def test_rotate_then_verify_with_the_new_key_alone(db_url: str, tmp_path: Path) -> None:
    a_po_sent(db_url, T0)
    cli = Cli(tmp_path, base_env(db_url))
    before = cli("verify", MANZOORI_DATA_KEY=NEW)
    assert before.returncode == 1
    assert "drafts: 1 sealed fields open with none of the keys" in before.stdout

    said = ok(cli("keys", "rotate", "--batch", "1", MANZOORI_DATA_KEY=f"{NEW},{OLD}"))
    assert said.splitlines() == [
        "drafts: 1 re-sealed",
        "effect_documents: 1 re-sealed",
        "supplier_answers: 0 re-sealed",
        "supplier_mail: 0 re-sealed",
        "terms_suppliers: 2 re-sealed",
        "typed_requests: 1 re-sealed",
        "re-sealed 5 fields with the first of the keys",
    ]
    assert ok(cli("verify", MANZOORI_DATA_KEY=NEW)).strip() == (
        "verified: schema at head, every sealed field opens, every state agrees"
    )
    old = cli("verify", MANZOORI_DATA_KEY=OLD)
    assert old.returncode == 1 and "error: 4 findings" in old.stderr


def test_status_says_until_when_an_older_signing_key_is_needed(db_url: str, tmp_path: Path):
    sent_at = utcnow()
    a_po_sent(db_url, sent_at)
    cli = Cli(tmp_path, base_env(db_url))
    old = cli.env["MANZOORI_SECRET_KEY"]
    said = ok(cli("keys", "status", MANZOORI_SECRET_KEY=f"{NEW},{old}")).splitlines()
    until = (sent_at + timedelta(days=30)).astimezone(ZoneInfo("Asia/Karachi"))
    stamp = until.strftime("%Y-%m-%d %H:%M PKT")
    assert said == [
        "MANZOORI_DATA_KEY: 1 key; the first seals",
        "MANZOORI_SECRET_KEY: 2 keys; the first signs",
        f"the newest supplier link works until {stamp}",
        "the newest open invitation works until — (none)",
        "the newest card awaiting a decision works until — (none)",
        f"the older MANZOORI_SECRET_KEY keys can be removed after {stamp}",
    ]

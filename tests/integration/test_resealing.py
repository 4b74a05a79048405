"""MANZOORI_DATA_KEY's rotation on a real store (SQLite and PostgreSQL): with the new key first
and the old one after, everything opens; `reseal_all` re-seals every sealed field of every
table with the new key, batch by batch, and a second run finds nothing to do; then the new key
alone opens everything, and the old one alone nothing. The append-only tables let a re-seal
through and nothing else."""

from __future__ import annotations

from datetime import timedelta

import pytest
from cryptography.fernet import Fernet
from sqlalchemy import LargeBinary, select, text, update
from sqlalchemy.exc import DBAPIError

from bot.cli.keys import job_findings
from core.approval.policies import ApprovalPolicy, Rules
from core.drafting.drafts import canonical_bytes
from core.jobs.answers import Answer, Outcome, Reply
from core.jobs.effects import message_id
from core.purchasing.requests import RequestLine
from core.purchasing.summaries import TypedRequest
from core.suppliers.mail import InboundMail
from core.suppliers.replies import InboxBatch, file_replies
from store import resealing, schema
from store.engine import make_engine
from store.resealing import reseal_all, unopened
from store.sql import SqlStore
from tests.helpers import suppliers
from tests.helpers.bot import with_terms
from tests.helpers.factories import FAST_RETRY, REQUESTER, T0, make_draft
from tests.helpers.store import DATA_KEY

RULES = Rules(approval=ApprovalPolicy(ttl=timedelta(hours=24)), retry=FAST_RETRY)
NEW = Fernet.generate_key().decode()
OLD = DATA_KEY.decode()


async def everything_sealed(store: SqlStore) -> None:
    """A row in every table with a sealed column, sealed with the old key."""
    await with_terms(store)
    effect = await suppliers.sent(store, make_draft(), T0, RULES)
    ours = message_id(effect.key, "shop.example").strip("<>")
    reply = InboundMail(
        uid=1, sender="orders@supplier.example", sender_name="", date=None, subject="Re",
        message_id="r@x", in_reply_to=(ours,), references=(), text="ok", excerpt="ok",
        attachments=(), size=10,
    )  # fmt: skip
    assert await file_replies(store, InboxBatch("INBOX", 1, [reply], 1), "shop.example", T0) == 1
    async with store.begin() as tx:
        job = await tx.job_by_po("PO-2026-001")
        declined = Answer(
            job.id, 1, 1, Reply.DECLINE, effect.key, T0, None, "no stock", "", (),
            Outcome.STANDS, None, None,
        )  # fmt: skip
        await tx.insert_supplier_answer(declined)
        lines = (RequestLine("TEA-500G", 3, note="عید کے لیے"),)
        await tx.insert_typed_request(TypedRequest("r-1", REQUESTER, lines, (1,), T0))


def keyed(db_url: str, keys: str) -> SqlStore:
    return SqlStore(make_engine(db_url), keys)


async def test_every_sealed_column_of_the_schema_is_rotated():
    columns = {
        (table.name, column.name)
        for table in schema.metadata.tables.values()
        for column in table.columns
        if isinstance(column.type, LargeBinary)
    }
    assert columns == set(resealing.sealed_columns())


async def test_a_rotation_reseals_everything_once_and_the_old_key_can_go(store, db_url):
    await everything_sealed(store)
    both = keyed(db_url, f"{NEW},{OLD}")
    try:
        assert set((await unopened(both)).values()) == {0}
        counts = await reseal_all(both, limit=1)  # a batch a row: every boundary crossed
        assert counts == {
            "drafts": 1,
            "effect_documents": 1,
            "supplier_answers": 1,
            "supplier_mail": 1,
            "terms_suppliers": 2,  # good.csv's two suppliers, e-mail only
            "typed_requests": 1,
        }
        assert set((await reseal_all(both)).values()) == {0}  # run again: nothing to do
    finally:
        await both.close()
    new, old = keyed(db_url, NEW), keyed(db_url, OLD)
    try:
        assert set((await unopened(new)).values()) == {0}
        async with new.reading() as tx:
            job = await tx.job_by_po("PO-2026-001")
            assert (await tx.draft(job.id, 1)).supplier_name == "Hall Road Electronics"
            [answer] = await tx.supplier_answers(job.id)
            assert answer.reason == "no stock"
            [mail] = await tx.supplier_mails(job.id)
            assert mail.mail.sender == "orders@supplier.example"
            typed = await tx.typed_request("r-1")
            assert typed is not None and typed.lines[0].note == "عید کے لیے"
        assert await unopened(old) == counts  # the old key alone opens none of them
    finally:
        await new.close()
        await old.close()


async def test_the_append_only_tables_let_a_reseal_through_and_nothing_else(store):
    await everything_sealed(store)
    drafts, terms = schema.drafts, schema.terms_suppliers
    async with store.engine.begin() as conn:
        body = (await conn.execute(select(drafts.c.body_encrypted))).scalar_one()
        await conn.execute(update(drafts).values(body_encrypted=store.sealer.reseal(body)))
        email = (await conn.execute(select(terms.c.email_encrypted).limit(1))).scalar_one()
        await conn.execute(
            update(terms).where(terms.c.email_encrypted == email).values(email_encrypted=email)
        )
    for table, change in (
        ("drafts", "total_paisa = total_paisa + 1"),
        ("drafts", "hash = 'forged'"),
        ("terms_suppliers", "name = 'Someone Else'"),
    ):
        with pytest.raises(DBAPIError, match="append-only"):
            async with store.engine.begin() as conn:
                await conn.execute(text(f"UPDATE {table} SET {change}"))


async def test_a_body_sealed_again_must_still_hash_to_the_approved_draft(store):
    await everything_sealed(store)
    drafts = schema.drafts
    other = canonical_bytes(make_draft(quantity=400))  # forty times the order, sealed properly
    async with store.engine.begin() as conn:
        await conn.execute(update(drafts).values(body_encrypted=store.sealer.seal(other)))
    [finding] = await job_findings(store)
    assert finding.startswith("PO-2026-001: stored draft ") and "does not match its hash" in finding
    with pytest.raises(DBAPIError, match="append-only"):  # and bytes no key sealed: refused
        async with store.engine.begin() as conn:
            await conn.execute(update(drafts).values(body_encrypted=b"\x00forged"))

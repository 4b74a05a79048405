"""From supplier terms and restock sheets to waiting POs, on SQLite and PostgreSQL.

Terms are imported as immutable versions; a sheet becomes one PO per supplier in one
transaction; new terms re-draft the POs that are still waiting. Everything is checked through
what a user sees (results, problems, drafts) or what the database holds.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import sqlite3
import uuid
from datetime import timedelta, timezone

import pytest
from sqlalchemy import select, text
from sqlalchemy.exc import DBAPIError

from bot.clock import Runtime
from bot.outbox.runner import OutboxRunner
from bot.outbox.smtp import SmtpSender, SmtpServer
from bot.words import texts as bot_texts
from bot.words.problems import PROBLEM_TEXTS, problem_lines
from core.approval import decisions
from core.approval.decisions import Review
from core.approval.policies import Role, Rules, Verdict
from core.drafting.drafts import Flag
from core.drafting.flags import FlagCode
from core.drafting.intake import NO_TERMS
from core.drafting.tables import Row, Table
from core.drafting.terms import REQUIRED
from core.errors import DraftChanged, NotARequester
from core.jobs.effects import EffectStatus
from core.jobs.jobs import WORKFLOW_VERSION
from core.jobs.notices import NOBODY_TO_ASK, NoticeKind
from core.jobs.states import State
from core.problems import ProblemCode
from core.purchasing import new_terms, submissions
from core.purchasing.submissions import Numbering, Sheet
from store import schema
from store.engine import make_engine
from store.sql import SqlStore
from tests.helpers.factories import APPROVER_A, APPROVER_B, REQUESTER, T0, Clock
from tests.helpers.store import DATA_KEY

RULES = Rules()
T1 = T0 + timedelta(hours=1)
T2 = T0 + timedelta(hours=2)
OTHER_REQUESTER = 1002
VERSION_ID = re.compile(r"^\d{8}T\d{6}Z-[0-9a-f]{8}$")

HEADER = REQUIRED  # the terms file's columns, in the documented order
A_NAME, A_EMAIL = "Hall Road Electronics", "orders@hallroad.example"
B_NAME, B_EMAIL = "Saddar Wholesale", "sales@saddar.example"
SUPPLIERS = {"SUP-A": (A_NAME, A_EMAIL), "SUP-B": (B_NAME, B_EMAIL)}
CBL, ADP, BAT = "CBL-USB-C-1M", "ADP-65W", "BAT-AA-4"
# (supplier_id, sku, description, unit_price_pkr, min_qty, max_qty)
OFFERS = (
    ("SUP-A", CBL, "USB-C cable 1 m", "250.00", "1", ""),
    ("SUP-A", ADP, "65 W charger", "4,500", "1", "100"),
    ("SUP-B", BAT, "AA batteries, pack of 4", "320.50", "10", ""),
    ("SUP-B", CBL, "USB-C cable 1 m", "275", "", ""),
)


def table(rows) -> Table:
    return Table(tuple(Row(i + 1, tuple(cells)) for i, cells in enumerate(rows)))


def terms_table(offers=OFFERS, suppliers=None, columns=HEADER, header=None) -> Table:
    """A terms file with `columns` in that order; `header` spells them as a person might."""
    suppliers = suppliers or SUPPLIERS
    rows = []
    for supplier_id, sku, description, price, low, high in offers:
        name, email = suppliers[supplier_id]
        cells = (supplier_id, name, email, sku, description, price, low, high)
        values = dict(zip(HEADER, cells, strict=True))
        rows.append(tuple(values[column] for column in columns))
    return table([header or columns, *rows])


def changed(offers, supplier_id, sku, **fields):
    """The offers with one offer's price ("price") or max_qty ("high") replaced."""
    out = []
    for offer in offers:
        if offer[:2] == (supplier_id, sku):
            sid, s, description, price, low, high = offer
            offer = (sid, s, description, fields.get("price", price), low, fields.get("high", high))
        out.append(offer)
    return tuple(out)


def without(offers, supplier_id, sku):
    return tuple(o for o in offers if o[:2] != (supplier_id, sku))


def sheet(*rows, name="restock.csv") -> Sheet:
    """A restock sheet; its sha256 stands for the bytes of the file it was read from."""
    sha = hashlib.sha256(repr(rows).encode()).hexdigest()
    return Sheet(name, sha, table([("sku", "quantity", "supplier_id", "notes"), *rows]))


# Two suppliers: SUP-A gets the charger and the cable (named), SUP-B the batteries.
MIXED = sheet(
    (CBL, "10", "SUP-A", "for the Saddar branch"), (ADP, "2", "", ""), (BAT, "20", "", "")
)


def new_id() -> str:
    return str(uuid.uuid4())


async def imported(store, offers=OFFERS, at=T0, **layout) -> str:
    result = await new_terms.import_terms(store, terms_table(offers, **layout), at, "cli:admin")
    assert not result.problems, result.problems
    return result.version


async def submit(store, the_sheet, requester=REQUESTER, at=T0, year=2026):
    return await submissions.submit_sheet(
        store, requester, the_sheet, at, RULES, Numbering(year, new_id)
    )


async def submitted(store, the_sheet, **kwargs):
    result = await submit(store, the_sheet, **kwargs)
    assert not result.problems, result.problems
    return [job for job, _draft in result.orders]


async def decide(store, job, reviewer=APPROVER_A, verdict=Verdict.APPROVE, at=T0, **kw):
    return await decisions.decide(
        store,
        Review(job.po_number, reviewer, verdict, job.draft_version, job.draft_hash, **kw),
        at,
        RULES,
    )


async def count(store, table_name: str) -> int:
    async with store.begin() as tx:
        return (await tx.conn.execute(text(f"SELECT COUNT(*) FROM {table_name}"))).scalar_one()


async def counts(store, *table_names: str) -> dict[str, int]:
    return {name: await count(store, name) for name in table_names}


async def reload(store, job):
    """The job as stored now, its current draft, its outbox rows and its audit trail."""
    async with store.begin() as tx:
        job = await tx.job(job.id)
        draft = await tx.draft(job.id, job.draft_version)
        return job, draft, await tx.effects_for(job.id), await tx.audit(job.id)


def runner_for(store, sink, clock=None) -> OutboxRunner:
    sender = SmtpSender(
        SmtpServer(host=sink.host, port=sink.port, tls="none", timeout=2.0),
        mail_from="orders@shop.example",
    )
    return OutboxRunner(
        store,
        sender,
        RULES,
        lease=timedelta(seconds=60),
        runtime=Runtime(owner="runner-test", now=clock or Clock(), rand=lambda: 0.5),
    )


async def send(store, sink, job, at=T0) -> None:
    """Approve `job` and let the runner mail it at `at`."""
    await decide(store, job, at=at)
    assert await runner_for(store, sink, Clock(at)).run_once() == 1
    async with store.begin() as tx:
        assert (await tx.job(job.id)).state is State.SENT


# --- 1. terms import ---------------------------------------------------------------------------


async def test_first_import_creates_a_version_with_its_counts(store):
    result = await new_terms.import_terms(store, terms_table(), T0, "cli:admin")
    assert result.created and result.problems == ()
    assert VERSION_ID.match(result.version)
    assert result.version.startswith("20261129T090000Z-")
    async with store.begin() as tx:
        row = await tx.terms_record(result.version)
        assert row is not None
        assert await tx.terms_version() == result.version
    assert row["id"] == result.version and row["imported_by"] == "cli:admin"
    assert (row["supplier_count"], row["offer_count"]) == (2, 4)
    assert result.version.endswith("-" + row["sha256"][:8])
    assert await counts(store, "terms_suppliers", "terms_offers") == {
        "terms_suppliers": 2,
        "terms_offers": 4,
    }


async def test_the_version_id_names_the_import_time_in_utc(store):
    """An import timed in Karachi (UTC+5) is still named by its UTC time: 09:00Z, not 14:00Z."""
    karachi = T0.astimezone(timezone(timedelta(hours=5)))
    result = await new_terms.import_terms(store, terms_table(), karachi, "cli:admin")
    assert result.version.startswith("20261129T090000Z-")


async def test_the_same_content_again_is_no_new_version(store):
    first = await imported(store)
    again = await new_terms.import_terms(store, terms_table(), T1, "cli:other")
    assert (again.created, again.version, again.problems) == (False, first, ())
    # rows shuffled, columns in another order, headers spelled another way, "250" for "250.00"
    columns = tuple(reversed(HEADER))
    header = ("Max Qty", "MIN-QTY", "Unit Price PKR", "DESCRIPTION", "Sku", "Supplier Email",
              "supplier name", " Supplier_ID ")  # fmt: skip
    shuffled = (OFFERS[2], changed(OFFERS, "SUP-A", CBL, price="250")[0], OFFERS[3], OFFERS[1])
    layout = terms_table(shuffled, columns=columns, header=header)
    same = await new_terms.import_terms(store, layout, T2, "cli:other")
    assert (same.created, same.version, same.problems) == (False, first, ())
    assert await counts(store, "terms_versions", "terms_suppliers", "terms_offers") == {
        "terms_versions": 1,
        "terms_suppliers": 2,
        "terms_offers": 4,
    }


async def test_changed_terms_make_a_new_version_and_the_old_one_stays_readable(store, db_url):
    old = await imported(store)
    result = await new_terms.import_terms(
        store, terms_table(changed(OFFERS, "SUP-A", CBL, price="260")), T1, "cli:admin"
    )
    assert result.created and result.version != old and VERSION_ID.match(result.version)
    assert result.version.startswith("20261129T100000Z-")
    # a second process (no cache) reads both versions back from the database
    fresh = SqlStore(make_engine(db_url), DATA_KEY)
    try:
        async with fresh.begin() as tx:
            assert await tx.terms_version() == result.version
            before, now = await tx.terms(old), await tx.terms(result.version)
            assert await tx.terms("20000101T000000Z-00000000") is None
    finally:
        await fresh.close()
    assert before is not None and now is not None
    assert (before.version, now.version) == (old, result.version)
    assert before.offer("SUP-A", CBL).unit_price_paisa == 25_000
    assert now.offer("SUP-A", CBL).unit_price_paisa == 26_000
    assert now.offer("SUP-B", BAT) == before.offer("SUP-B", BAT)
    assert now.offer("SUP-A", ADP).max_qty == 100 and now.offer("SUP-B", CBL).max_qty is None


async def test_going_back_to_earlier_content_makes_it_current_again(store):
    first = await imported(store)
    second = await imported(store, changed(OFFERS, "SUP-A", CBL, price="260"), at=T1)
    back = await new_terms.import_terms(store, terms_table(), T2, "cli:admin")
    assert back.created and back.version not in (first, second)
    async with store.begin() as tx:
        assert (await tx.current_terms()).offer("SUP-A", CBL).unit_price_paisa == 25_000


async def test_an_invalid_file_imports_nothing_and_names_line_and_column(store):
    version = await imported(store)
    before = await counts(store, "terms_versions", "terms_suppliers", "terms_offers")
    bad = changed(OFFERS, "SUP-B", BAT, price="-320.50")  # line 4: header is line 1
    result = await new_terms.import_terms(store, terms_table(bad), T1, "cli:admin")
    assert not result.created and result.version == ""
    assert problem_lines(result.problems) == ["Line 4, unit_price_pkr: must not be negative"]
    two_bad = terms_table(
        bad, suppliers={**SUPPLIERS, "SUP-A": (A_NAME, "not-an-address")}
    )  # lines 2 and 3 carry SUP-A's address
    result = await new_terms.import_terms(store, two_bad, T1, "cli:admin")
    not_an_address = PROBLEM_TEXTS[ProblemCode.NOT_AN_ADDRESS].format(value='"not-an-address"')
    assert problem_lines(result.problems) == [
        f"Line 2, supplier_email: {not_an_address}",
        f"Line 3, supplier_email: {not_an_address}",
        "Line 4, unit_price_pkr: must not be negative",
    ]
    assert not result.created and result.version == ""
    assert await counts(store, "terms_versions", "terms_suppliers", "terms_offers") == before
    async with store.begin() as tx:
        assert await tx.terms_version() == version


async def test_an_absurdly_large_number_in_terms_is_a_problem_not_a_crash(store):
    """Unbounded, it would overflow the BIGINT columns on insert (fixed in bb14c03)."""
    huge = changed(OFFERS, "SUP-A", ADP, high="99999999999999999999")
    result = await new_terms.import_terms(store, terms_table(huge), T0, "cli:admin")
    assert not result.created
    lines = problem_lines(result.problems)
    assert any(line.startswith("Line 3, max_qty:") for line in lines), lines
    assert await count(store, "terms_versions") == 0


async def test_concurrent_first_imports_of_the_same_file_make_one_version(store, db_url):
    """With no terms_head row yet there is nothing to lock: both imports name the version
    alike, and the loser's duplicate key becomes a re-read that finds the winner's version."""
    stores = [SqlStore(make_engine(db_url), DATA_KEY) for _ in range(2)]
    try:
        results = await asyncio.gather(
            *(new_terms.import_terms(s, terms_table(), T0, "cli:admin") for s in stores)
        )
    finally:
        for s in stores:
            await s.close()
    assert len({r.version for r in results}) == 1
    assert sorted(r.created for r in results) == [False, True]
    assert await count(store, "terms_versions") == 1


async def test_concurrent_imports_of_new_terms_make_one_version(store, db_url):
    await imported(store)  # the head row exists: the imports below queue on its lock
    stores = [SqlStore(make_engine(db_url), DATA_KEY) for _ in range(3)]
    new = terms_table(changed(OFFERS, "SUP-A", CBL, price="260"))
    try:
        results = await asyncio.gather(
            *(new_terms.import_terms(s, new, T1, "cli:admin") for s in stores)
        )
    finally:
        for s in stores:
            await s.close()
    assert len({r.version for r in results}) == 1
    assert sorted(r.created for r in results) == [False, False, True]
    assert await count(store, "terms_versions") == 2


async def test_reverting_terms_within_the_same_second_works(store):
    """A version id has one-second resolution: A, B, A within one second name A's version
    again, which is put back in force rather than inserted twice (fixed in ad0c4db)."""
    first = await imported(store)
    await imported(store, changed(OFFERS, "SUP-A", CBL, price="260"))
    back = await new_terms.import_terms(store, terms_table(), T0, "cli:admin")
    assert (back.problems, back.version) == ((), first)
    async with store.begin() as tx:
        current = await tx.current_terms()
    assert current.version == first and current.offer("SUP-A", CBL).unit_price_paisa == 25_000
    assert await count(store, "terms_versions") == 2


# --- 2. supplier addresses sealed at rest ------------------------------------------------------


async def test_supplier_addresses_are_sealed_everywhere_at_rest(store, smtp_sink):
    await imported(store)
    jobs = await submitted(store, MIXED)
    await send(store, smtp_sink, jobs[0])  # drafts, decisions, effects and results exist too
    async with store.begin() as tx:
        sealed = [
            bytes(raw)
            for raw in (
                await tx.conn.execute(select(schema.terms_suppliers.c.email_encrypted))
            ).scalars()
        ]
        terms = await tx.current_terms()
        dumps = {
            name: [tuple(row) for row in await tx.conn.execute(select(table_))]
            for name, table_ in schema.metadata.tables.items()
        }
    assert len(sealed) == 2 and all(raw.startswith(b"gAAAAA") for raw in sealed)  # Fernet
    for address in (A_EMAIL, B_EMAIL):
        assert not any(address.encode() in raw for raw in sealed)
        for name, rows in dumps.items():
            for row in rows:
                for value in row:
                    blob = bytes(value) if isinstance(value, bytes | memoryview) else None
                    shown = str(value).lower()
                    assert address not in shown, f"{address} in {name}: {row}"
                    assert blob is None or address.encode() not in blob, f"{address} in {name}"
    assert dumps["drafts"] and dumps["effects"] and dumps["audit_events"]
    # yet the terms and the e-mail use the clear address, and people see it masked
    assert terms.supplier("SUP-A").email == A_EMAIL
    assert terms.supplier("sup-b").email == B_EMAIL
    assert terms.supplier("SUP-A").masked_email == "or***@hallroad.example"
    assert terms.supplier("SUP-B").masked_email == "sa***@saddar.example"
    assert [e.rcpt_tos for e in smtp_sink.envelopes] == [[A_EMAIL]]


# --- 3. submitting a sheet ---------------------------------------------------------------------


async def test_a_valid_sheet_makes_one_waiting_po_per_supplier(store):
    version = await imported(store)
    result = await submit(store, MIXED)
    assert result.problems == () and not result.repeated
    (job_a, draft_a), (job_b, draft_b) = result.orders
    assert [job_a.po_number, job_b.po_number] == ["PO-2026-0001", "PO-2026-0002"]
    assert {job_a.state, job_b.state} == {State.AWAITING_APPROVAL}
    assert (draft_a.supplier_id, draft_a.supplier_name, draft_a.recipient_email) == (
        "SUP-A",
        A_NAME,
        A_EMAIL,
    )
    assert (draft_b.supplier_id, draft_b.supplier_name, draft_b.recipient_email) == (
        "SUP-B",
        B_NAME,
        B_EMAIL,
    )
    # lines by SKU, whatever the sheet's order; money in paisa
    assert [
        (line.sku, line.quantity, line.unit_price_paisa, line.total_paisa, line.note)
        for line in draft_a.lines
    ] == [
        (ADP, 2, 450_000, 900_000, ""),
        (CBL, 10, 25_000, 250_000, "for the Saddar branch"),
    ]
    assert draft_a.total_paisa == job_a.total_paisa == 1_150_000
    assert [(line.sku, line.quantity, line.unit_price_paisa) for line in draft_b.lines] == [
        (BAT, 20, 32_050)
    ]
    assert draft_b.total_paisa == job_b.total_paisa == 641_000
    assert draft_a.terms_version == draft_b.terms_version == version
    assert job_a.source_versions == {
        "sheet_sha256": MIXED.sha256,
        "sheet_name": "restock.csv",
        "terms_version": version,
        "workflow_version": WORKFLOW_VERSION,
    }
    assert (job_a.requester_id, job_a.supplier_id, job_a.draft_version) == (REQUESTER, "SUP-A", 1)
    # what is stored is what was returned
    for job, draft in result.orders:
        stored, stored_draft, effects, trail = await reload(store, job)
        assert stored == job and stored_draft == draft and effects == []
        assert trail[-1].action == "request_approval"
    assert await counts(store, "jobs", "submissions", "order_lines") == {
        "jobs": 2,
        "submissions": 1,
        "order_lines": 3,
    }


async def test_the_same_sheet_again_gives_the_same_pos(store):
    await imported(store)
    first = await submit(store, MIXED)
    again = await submit(store, sheet(*(r.cells for r in MIXED.table.rows[1:])), at=T1)
    assert again.repeated and again.problems == ()
    assert again.orders == first.orders
    # the bytes decide, not the name, and not the terms in force since
    await imported(store, changed(OFFERS, "SUP-A", CBL, price="260"), at=T1)
    renamed = await submit(store, Sheet("copy.csv", MIXED.sha256, MIXED.table), at=T2)
    assert renamed.repeated
    assert [j.po_number for j, _ in renamed.orders] == ["PO-2026-0001", "PO-2026-0002"]
    assert [j.id for j, _ in renamed.orders] == [j.id for j, _ in first.orders]
    assert await counts(store, "jobs", "submissions") == {"jobs": 2, "submissions": 1}


async def test_another_requester_with_the_same_file_gets_new_pos(store):
    await imported(store)
    async with store.begin() as tx:
        await tx.grant(OTHER_REQUESTER, Role.REQUESTER, "test", T0)
    await submit(store, MIXED)
    other = await submit(store, MIXED, requester=OTHER_REQUESTER)
    assert not other.repeated
    assert [j.po_number for j, _ in other.orders] == ["PO-2026-0003", "PO-2026-0004"]
    assert {j.requester_id for j, _ in other.orders} == {OTHER_REQUESTER}
    assert await counts(store, "jobs", "submissions") == {"jobs": 4, "submissions": 2}


async def test_only_requesters_may_submit(store):
    await imported(store)
    for who in (APPROVER_A, 424242):  # an approver; someone nobody registered
        with pytest.raises(NotARequester):
            await submit(store, MIXED, requester=who)
    assert await counts(store, "jobs", "submissions", "po_serials") == {
        "jobs": 0,
        "submissions": 0,
        "po_serials": 0,
    }


async def test_admins_may_order_as_requesters_do(store):
    await imported(store)
    async with store.begin() as tx:
        await tx.grant(OTHER_REQUESTER, Role.ADMIN, "test", T0)
    granted = await submitted(store, MIXED, requester=OTHER_REQUESTER)
    vouched = await submissions.submit_sheet(  # MANZOORI_ADMIN_IDS: the shell vouches
        store, 424242, MIXED, T0, RULES, Numbering(2026, new_id), admin=True
    )
    assert {j.requester_id for j in granted} == {OTHER_REQUESTER}
    assert {j.requester_id for j, _ in vouched.orders} == {424242}


async def test_a_sheet_with_any_problem_makes_nothing_and_uses_no_number(store):
    await imported(store)
    bad = sheet(
        (CBL, "10", "SUP-A", ""),  # fine on its own
        ("NO-SUCH-SKU", "1", "", ""),
        (BAT, "lots", "", ""),
        (ADP, "3", "SUP-B", ""),
    )
    result = await submit(store, bad)
    assert result.orders == () and not result.repeated
    assert problem_lines(result.problems) == [
        'Row 3, sku: "NO-SUCH-SKU" is not in the current supplier terms',
        'Row 4, quantity: "lots" is not a whole number',
        'Row 5, sku: SUP-B does not offer "ADP-65W" (offered by SUP-A)',
    ]
    assert await counts(store, "jobs", "submissions", "po_serials", "order_lines") == {
        "jobs": 0,
        "submissions": 0,
        "po_serials": 0,
        "order_lines": 0,
    }
    # the same bytes were not remembered: fixed terms would price them now; and the next
    # valid sheet still gets the first number
    good = await submitted(store, MIXED)
    assert [j.po_number for j in good] == ["PO-2026-0001", "PO-2026-0002"]


async def test_an_absurd_quantity_is_a_problem_not_a_crash(store):
    """Unbounded, 10^20 would pass the checks and overflow BIGINT on insert (fixed in bb14c03)."""
    await imported(store)
    result = await submit(store, sheet((CBL, "100000000000000000000", "SUP-A", "")))
    assert result.orders == ()
    lines = problem_lines(result.problems)
    assert any(line.startswith("Row 2, quantity:") for line in lines), lines
    assert await counts(store, "jobs", "po_serials") == {"jobs": 0, "po_serials": 0}


async def test_nothing_can_be_priced_before_terms_are_imported(store):
    result = await submit(store, MIXED)
    assert result.problems == (NO_TERMS,) and result.orders == ()
    preview = await submissions.preview_sheet(store, MIXED, RULES)
    assert preview.problems == (NO_TERMS,)
    assert await counts(store, "jobs", "submissions", "po_serials") == {
        "jobs": 0,
        "submissions": 0,
        "po_serials": 0,
    }


async def test_preview_prices_like_a_submission_and_stores_nothing(store):
    await imported(store)
    preview = await submissions.preview_sheet(store, MIXED, RULES)
    assert [d.po_number for _, d in preview.orders] == ["NEW-1", "NEW-2"]
    assert await counts(store, "jobs", "po_serials", "submissions") == {
        "jobs": 0,
        "po_serials": 0,
        "submissions": 0,
    }
    result = await submit(store, MIXED)
    for (_, shown), (_, made) in zip(preview.orders, result.orders, strict=True):
        assert shown.lines == made.lines and shown.flags == made.flags


# --- 4. concurrency ----------------------------------------------------------------------------


async def concurrently(db_url, calls):
    """Run each call with its own store (own engine and pool), as separate processes would."""
    stores = [SqlStore(make_engine(db_url), DATA_KEY) for _ in calls]
    try:
        return await asyncio.gather(*(call(s) for call, s in zip(calls, stores, strict=True)))
    finally:
        for s in stores:
            await s.close()


async def test_the_same_sheet_five_times_at_once_makes_one_set_of_pos(store, db_url):
    await imported(store)
    results = await concurrently(db_url, [lambda s: submit(s, MIXED)] * 5)
    numbers = {tuple(j.po_number for j, _ in r.orders) for r in results}
    assert numbers == {("PO-2026-0001", "PO-2026-0002")}
    assert sorted(r.repeated for r in results) == [False, True, True, True, True]
    assert await counts(store, "jobs", "submissions") == {"jobs": 2, "submissions": 1}


async def test_five_different_sheets_at_once_get_distinct_gap_free_numbers(store, db_url):
    await imported(store)
    sheets = [sheet((CBL, str(n), "", "")) for n in range(1, 6)]  # SUP-A only: one PO each
    results = await concurrently(db_url, [lambda s, sh=sh: submit(s, sh) for sh in sheets])
    numbers = sorted(j.po_number for r in results for j, _ in r.orders)
    assert numbers == [f"PO-2026-{n:04d}" for n in range(1, 6)]
    assert not any(r.repeated or r.problems for r in results)
    assert await count(store, "jobs") == 5


# --- 5. price history --------------------------------------------------------------------------


async def test_a_sent_po_is_the_price_history_and_a_drafted_one_is_not(store, smtp_sink):
    await imported(store)
    sent_a, _drafted_b = await submitted(store, MIXED)  # SUP-A: ADP ×2, CBL ×10; SUP-B: BAT ×20
    await send(store, smtp_sink, sent_a)
    cheaper = changed(changed(OFFERS, "SUP-A", CBL, price="260"), "SUP-B", BAT, price="330")
    await imported(store, cheaper, at=T1)
    later = sheet((CBL, "10", "SUP-A", ""), (ADP, "10", "", ""), (BAT, "20", "", ""))
    (job_a, draft_a), (job_b, draft_b) = (await submit(store, later, at=T1)).orders
    assert (job_a.po_number, job_b.po_number) == ("PO-2026-0003", "PO-2026-0004")
    assert draft_a.flags == (
        Flag(FlagCode.PRICE_CHANGED, CBL, (25_000, 26_000), "PO-2026-0001"),
        Flag(FlagCode.QUANTITY_JUMP, ADP, (10, 2), "PO-2026-0001"),  # 5× the last order
    )
    assert draft_b.flags == ()  # PO-2026-0002 at 320.50 was never sent: no history
    # just under five times the last order is no jump
    [(_, draft)] = (await submissions.preview_sheet(store, sheet((ADP, "9", "", "")), RULES)).orders
    assert draft.flags == ()


async def test_the_last_sent_po_is_the_one_compared_with(store, smtp_sink):
    await imported(store)
    [first] = await submitted(store, sheet((CBL, "10", "SUP-A", "")))
    await send(store, smtp_sink, first)
    await imported(store, changed(OFFERS, "SUP-A", CBL, price="260"), at=T1)
    [second] = await submitted(store, sheet((CBL, "11", "SUP-A", "")), at=T1)
    await send(store, smtp_sink, second, at=T1)
    await imported(store, changed(OFFERS, "SUP-A", CBL, price="270"), at=T2)
    preview = await submissions.preview_sheet(store, sheet((CBL, "12", "SUP-A", "")), RULES)
    [(_, draft)] = preview.orders
    assert draft.flags == (Flag(FlagCode.PRICE_CHANGED, CBL, (26_000, 27_000), second.po_number),)


async def test_price_history_ignores_the_case_of_supplier_ids(store, smtp_sink):
    """New terms that spell "SUP-A" as "sup-a" still find the POs sent to it, as supplier ids
    match without regard to case everywhere else (core.drafting.terms.match_key)."""
    await imported(store)
    [sent] = await submitted(store, sheet((CBL, "10", "SUP-A", "")))
    await send(store, smtp_sink, sent)
    lower = tuple(("sup-a" if o[0] == "SUP-A" else o[0], *o[1:]) for o in OFFERS)
    lower = changed(lower, "sup-a", CBL, price="260")
    await imported(store, lower, at=T1, suppliers={**SUPPLIERS, "sup-a": SUPPLIERS["SUP-A"]})
    [(_, draft)] = (await submit(store, sheet((CBL, "10", "sup-a", "")), at=T1)).orders
    assert Flag(FlagCode.PRICE_CHANGED, CBL, (25_000, 26_000), sent.po_number) in draft.flags


# --- 6. new terms re-draft waiting POs ---------------------------------------------------------


async def test_new_prices_redraft_waiting_and_approved_pos_only(store, smtp_sink):
    v1 = await imported(store)
    # finished business: one PO sent, one rejected
    [sent] = await submitted(store, sheet((CBL, "8", "SUP-A", "")))
    await send(store, smtp_sink, sent)
    [rejected] = await submitted(store, sheet((CBL, "7", "SUP-A", "")))
    await decide(store, rejected, verdict=Verdict.REJECT, reason="not needed")
    # waiting: two AWAITING_APPROVAL (SUP-A's will change, SUP-B's will not) and one APPROVED
    awaiting, untouched = await submitted(
        store, sheet((CBL, "10", "SUP-A", ""), (BAT, "20", "", ""))
    )
    [approved] = await submitted(store, sheet((CBL, "5", "SUP-A", "")))
    approved = (await decide(store, approved)).job
    assert approved.state is State.APPROVED
    [pending] = (await reload(store, approved))[2]
    assert pending.status is EffectStatus.PENDING

    v2 = await imported(store, changed(OFFERS, "SUP-A", CBL, price="260"), at=T1)
    result = sorted(await new_terms.apply_terms(store, T1, RULES), key=lambda r: r.po_number)

    assert [r.po_number for r in result] == [awaiting.po_number, approved.po_number]
    change = Flag(FlagCode.TERMS_PRICE_CHANGED, CBL, (25_000, 26_000), v1)
    for item, quantity in zip(result, (10, 5), strict=True):
        assert item.previous_version == 1 and item.changes == (change,)
        assert (item.job.state, item.job.draft_version) == (State.AWAITING_APPROVAL, 2)
        job, draft, _, trail = await reload(store, item.job)
        assert job == item.job and job.source_versions["terms_version"] == v2
        assert draft.terms_version == v2 and job.total_paisa == quantity * 26_000
        assert [(line.sku, line.unit_price_paisa) for line in draft.lines] == [(CBL, 26_000)]
        assert change in draft.flags  # the approver sees why it changed
        assert trail[-1].action == "revise" and trail[-1].actor == f"terms:{v2}"
    # the approved PO's send is cancelled; its old approval cannot be used again
    job, _, [old_send], _ = await reload(store, approved)
    assert old_send.status is EffectStatus.CANCELLED
    with pytest.raises(DraftChanged):
        await decide(store, approved, reviewer=APPROVER_B, at=T1)
    again = await decide(store, job, reviewer=APPROVER_B, at=T1)
    assert again.job.state is State.APPROVED
    effects = (await reload(store, approved))[2]
    assert [(e.draft_version, e.status) for e in effects] == [
        (1, EffectStatus.CANCELLED),
        (2, EffectStatus.PENDING),
    ]
    # a PO the new terms do not change keeps its draft and approval, and records the check
    job, draft, _, trail = await reload(store, untouched)
    assert (job.state, job.draft_version, job.draft_hash) == (
        State.AWAITING_APPROVAL,
        1,
        untouched.draft_hash,
    )
    assert job.source_versions["terms_version"] == v2 and draft.terms_version == v1
    assert (trail[-1].action, trail[-1].detail["terms_version"]) == ("terms_checked", v2)
    # finished POs are never touched
    for done, state in ((sent, State.SENT), (rejected, State.REJECTED)):
        job, _, _, trail = await reload(store, done)
        assert (job.state, job.draft_version, job.source_versions["terms_version"]) == (
            state,
            1,
            v1,
        )
        assert "terms_checked" not in [e.action for e in trail]
    # nothing is left to check
    assert await new_terms.apply_terms(store, T2, RULES) == []


async def test_two_processes_applying_the_same_terms_redraft_once(store, db_url):
    """The CLI's import and a running runner both re-draft: one new version, no error."""
    await imported(store)
    [job] = await submitted(store, sheet((CBL, "10", "SUP-A", "")))
    v2 = await imported(store, changed(OFFERS, "SUP-A", CBL, price="260"), at=T1)
    stores = [SqlStore(make_engine(db_url), DATA_KEY) for _ in range(3)]
    try:
        results = await asyncio.gather(*(new_terms.apply_terms(s, T1, RULES) for s in stores))
    finally:
        for s in stores:
            await s.close()
    assert sorted(len(r) for r in results) == [0, 0, 1]  # one process re-drafted it
    # any process can tell what the version did, from the audit trail
    assert await new_terms.superseded_by(store, v2) == [r for rs in results for r in rs]
    job, draft, _, trail = await reload(store, job)
    assert (job.draft_version, draft.lines[0].unit_price_paisa) == (2, 26_000)
    assert [e.action for e in trail].count("revise") == 1


async def test_withdrawn_skus_leave_the_po_and_an_empty_po_is_cancelled(store):
    v1 = await imported(store)
    both, only_bat = await submitted(store, MIXED)  # SUP-A: ADP + CBL; SUP-B: BAT
    await imported(store, without(without(OFFERS, "SUP-A", ADP), "SUP-B", BAT), at=T1)
    first, second = sorted(await new_terms.apply_terms(store, T1, RULES), key=lambda r: r.po_number)

    assert first.po_number == both.po_number and first.previous_version == 1
    assert first.changes == (Flag(FlagCode.SKU_WITHDRAWN, ADP, (2,), v1),)
    job, draft, _, _ = await reload(store, both)
    assert (job.state, job.draft_version) == (State.AWAITING_APPROVAL, 2)
    assert [line.sku for line in draft.lines] == [CBL] and job.total_paisa == 250_000

    assert second.po_number == only_bat.po_number
    assert second.changes == (Flag(FlagCode.SKU_WITHDRAWN, BAT, (20,), v1),)
    job, _, effects, trail = await reload(store, only_bat)
    assert second.job == job and job.state is State.CANCELLED and effects == []
    assert job.draft_version == 1 and trail[-1].action == "cancel"
    assert await new_terms.apply_terms(store, T2, RULES) == []


async def test_new_order_limits_redraft_the_po(store):
    v1 = await imported(store)
    [job] = await submitted(store, sheet((CBL, "10", "SUP-A", "")))
    await imported(store, changed(OFFERS, "SUP-A", CBL, high="5"), at=T1)
    [item] = await new_terms.apply_terms(store, T1, RULES)
    assert item.changes == (Flag(FlagCode.TERMS_LIMITS_CHANGED, CBL, (1, 0, 1, 5), v1),)
    assert (item.job.state, item.job.draft_version) == (State.AWAITING_APPROVAL, 2)
    _, draft, _, _ = await reload(store, job)
    assert Flag(FlagCode.QUANTITY_ABOVE_MAX, CBL, (10, 5)) in draft.flags
    assert draft.lines[0].unit_price_paisa == 25_000  # the price did not change


async def test_a_new_supplier_address_redrafts_to_the_new_recipient(store):
    v1 = await imported(store)
    [job] = await submitted(store, sheet((CBL, "10", "SUP-A", "")))
    moved = {**SUPPLIERS, "SUP-A": (A_NAME, "purchasing@hallroad.example")}
    await imported(store, at=T1, suppliers=moved)
    [item] = await new_terms.apply_terms(store, T1, RULES)
    assert item.changes == (Flag(FlagCode.SUPPLIER_DETAILS_CHANGED, "", (), v1),)
    _, draft, _, _ = await reload(store, job)
    assert draft.recipient_email == "purchasing@hallroad.example"


async def test_a_send_waiting_for_its_retry_is_redrafted_too(store, smtp_sink):
    await imported(store)
    [job] = await submitted(store, sheet((CBL, "10", "SUP-A", "")))
    await decide(store, job)
    smtp_sink.script("DATA", "451 4.3.0 Try again later")
    await runner_for(store, smtp_sink).run_once()
    job, _, [retry], _ = await reload(store, job)
    assert (job.state, retry.status) == (State.FAILED_RETRYABLE, EffectStatus.PENDING)
    await imported(store, changed(OFFERS, "SUP-A", CBL, price="260"), at=T1)
    [item] = await new_terms.apply_terms(store, T1, RULES)
    assert (item.job.state, item.job.draft_version) == (State.AWAITING_APPROVAL, 2)
    _, _, [retry], _ = await reload(store, job)
    assert retry.status is EffectStatus.CANCELLED
    assert smtp_sink.messages == []


async def test_the_runner_redrafts_on_new_terms_and_mails_no_old_version(store, smtp_sink):
    await imported(store)
    [job] = await submitted(store, sheet((CBL, "10", "SUP-A", "")))
    await decide(store, job)
    await imported(store, changed(OFFERS, "SUP-A", CBL, price="260"), at=T1)
    runner = runner_for(store, smtp_sink, Clock(T1))
    assert await runner.run_once() == 0
    assert smtp_sink.messages == []
    job, draft, [old], _ = await reload(store, job)
    assert (job.state, job.draft_version) == (State.AWAITING_APPROVAL, 2)
    assert old.status is EffectStatus.CANCELLED and draft.lines[0].unit_price_paisa == 26_000
    # the new version, once approved, is the one mailed
    await decide(store, job, reviewer=APPROVER_B, at=T1)
    assert await runner.run_once() == 1
    assert [m["Idempotency-Key"].split(":")[2] for m in smtp_sink.messages] == ["v2"]


# --- 7. evidence is append-only ----------------------------------------------------------------


APPEND_ONLY_CHANGES = (
    "UPDATE terms_versions SET imported_by = 'someone else'",
    "DELETE FROM terms_versions",
    "UPDATE terms_suppliers SET name = 'Other Name'",
    "DELETE FROM terms_suppliers",
    "UPDATE terms_offers SET unit_price_paisa = 1",
    "DELETE FROM terms_offers",
    "UPDATE order_lines SET quantity = 1",
    "DELETE FROM order_lines",
)


async def test_terms_and_order_lines_refuse_changes(store):
    await imported(store)
    await submitted(store, MIXED)
    before = await counts(store, "terms_versions", "terms_suppliers", "terms_offers", "order_lines")
    assert all(before.values())
    for statement in APPEND_ONLY_CHANGES:  # one store setup for all: the file stays fast
        with pytest.raises(DBAPIError, match="append-only"):
            async with store.begin() as tx:
                await tx.conn.execute(text(statement))
    after = await counts(store, "terms_versions", "terms_suppliers", "terms_offers", "order_lines")
    assert after == before
    async with store.begin() as tx:
        terms = await tx.current_terms()
        assert terms is not None
        row = await tx.terms_record(terms.version)
        assert row is not None
    assert terms.offer("SUP-A", CBL).unit_price_paisa == 25_000
    assert terms.supplier("SUP-A").name == A_NAME and row["imported_by"] == "cli:admin"


# --- 8. PO numbers per year --------------------------------------------------------------------


async def test_po_serials_restart_each_year(store):
    await imported(store)
    assert [j.po_number for j in await submitted(store, MIXED)] == ["PO-2026-0001", "PO-2026-0002"]
    [next_year] = await submitted(store, sheet((CBL, "1", "", "")), year=2027)
    assert next_year.po_number == "PO-2027-0001"
    [late] = await submitted(store, sheet((CBL, "2", "", "")), year=2026)
    assert late.po_number == "PO-2026-0003"


# --- short write transactions: check and price outside, re-check inside --------------------


async def no_transaction_open(db_url: str) -> bool:
    """Whether nobody holds a transaction on the database: SQLite's write lock is free, and
    no PostgreSQL session of it is inside a transaction (this check's own aside)."""
    if db_url.startswith("sqlite"):
        conn = sqlite3.connect(db_url.removeprefix("sqlite+aiosqlite:///"), timeout=0)
        try:
            conn.execute("BEGIN IMMEDIATE")  # raises "database is locked" if a writer holds it
            conn.rollback()
        finally:
            conn.close()
        return True
    engine = make_engine(db_url)
    async with engine.connect() as conn:
        busy = await conn.scalar(
            text(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND pid <> pg_backend_pid() AND state LIKE 'idle in transaction%'"
            )
        )
    await engine.dispose()
    return busy == 0


class Offloader:
    """An Offload that runs `meanwhile` before each piece of work, as a concurrent person
    would act while the sheet is being checked; it counts the pieces."""

    def __init__(self, meanwhile=None) -> None:
        self.meanwhile, self.calls = meanwhile, 0

    async def __call__(self, work):
        self.calls += 1
        if self.meanwhile is not None:
            await self.meanwhile(self.calls)
        return work()


async def submit_with(store, the_sheet, offload, requester=REQUESTER):
    numbering = Numbering(2026, lambda: str(uuid.uuid4()))
    return await submissions.submit_sheet(
        store, requester, the_sheet, T0, RULES, numbering, offload=offload
    )


async def test_a_sheet_is_checked_and_priced_outside_any_transaction(store, db_url):
    await imported(store)
    seen = []

    async def look(_call):
        seen.append(await no_transaction_open(db_url))

    offload = Offloader(look)
    result = await submit_with(store, MIXED, offload)
    assert len(result.orders) == 2
    assert offload.calls == 2 and seen == [True, True]  # checking, then pricing
    preview = Offloader(look)
    await submissions.preview_sheet(store, MIXED, RULES, offload=preview)
    assert preview.calls == 2 and seen == [True] * 4


async def test_terms_changed_while_a_sheet_is_checked_are_the_ones_it_is_priced_on(store):
    await imported(store)
    cheaper = changed(OFFERS, "SUP-A", CBL, price="240")

    async def terms_change_midway(call):
        if call == 1:  # an admin imports new terms while the sheet is checked the first time
            newer = await new_terms.import_terms(store, terms_table(cheaper), T1, "cli:admin")
            assert newer.created

    offload = Offloader(terms_change_midway)
    result = await submit_with(store, MIXED, offload)
    assert offload.calls == 4  # the sheet was planned again, on the new terms
    (job_a, draft_a), _ = result.orders
    async with store.reading() as tx:
        in_force = await tx.terms_version()
    assert draft_a.terms_version == job_a.source_versions["terms_version"] == in_force
    assert {line.sku: line.unit_price_paisa for line in draft_a.lines}[CBL] == 24_000
    assert [job.po_number for job, _ in result.orders] == ["PO-2026-0001", "PO-2026-0002"]


async def test_terms_that_keep_changing_while_a_sheet_is_checked_refuse_it(store):
    await imported(store)

    async def terms_change_midway(call):
        if call % 2 == 1:  # new terms during every check
            prices = changed(OFFERS, "SUP-A", CBL, price=str(240 + call))
            await new_terms.import_terms(store, terms_table(prices), T1, "cli:admin")

    result = await submit_with(store, MIXED, Offloader(terms_change_midway))
    assert result.problems == (submissions.TERMS_CHANGED,) and result.orders == ()
    assert await counts(store, "jobs", "submissions", "po_serials") == {
        "jobs": 0,
        "submissions": 0,
        "po_serials": 0,
    }


async def test_a_requester_revoked_while_the_sheet_is_checked_gets_nothing_made(store):
    await imported(store)

    async def revoked(_call):
        async with store.begin() as tx:
            await tx.revoke(REQUESTER, "test", T0)

    with pytest.raises(NotARequester):
        await submit_with(store, MIXED, Offloader(revoked))
    assert await counts(store, "jobs", "submissions") == {"jobs": 0, "submissions": 0}


async def alerts_and_cards(store, jobs):
    """Per PO, the events of its admin alerts and whom its cards are owed to."""
    found = {}
    async with store.reading() as tx:
        for job in jobs:
            owed = await tx.notices_for(job.id)
            alerts = [n.event for n in owed if n.kind is NoticeKind.ALERT]
            cards = sorted(n.user_id for n in owed if n.kind is NoticeKind.CARD)
            found[job.po_number] = (alerts, cards)
    return found


@pytest.mark.parametrize(
    "requester_approves",
    [
        False,  # no approver at all
        True,  # the requester is the one approver, and nobody approves their own request
    ],
)
async def test_with_nobody_to_ask_the_requester_is_told_and_the_admins_alerted(
    store, requester_approves
):
    await imported(store)
    async with store.begin() as tx:
        for approver in (APPROVER_A, APPROVER_B):
            await tx.revoke(approver, "test", T0)
        if requester_approves:
            await tx.grant(REQUESTER, Role.APPROVER, "test", T0)
    result = await submit(store, MIXED)
    assert result.unasked
    assert await alerts_and_cards(store, [job for job, _ in result.orders]) == {
        "PO-2026-0001": ([NOBODY_TO_ASK], []),
        "PO-2026-0002": ([NOBODY_TO_ASK], []),
    }
    reply = bot_texts.submission(result, "restock.csv")
    assert reply.endswith("\n" + bot_texts.NOBODY_TO_ASK)


async def test_with_an_approver_to_ask_no_admin_is_alerted(store):
    await imported(store)
    result = await submit(store, MIXED)
    assert not result.unasked
    assert await alerts_and_cards(store, [job for job, _ in result.orders]) == {
        "PO-2026-0001": ([], [APPROVER_A, APPROVER_B]),
        "PO-2026-0002": ([], [APPROVER_A, APPROVER_B]),
    }
    assert bot_texts.NOBODY_TO_ASK not in bot_texts.submission(result, "restock.csv")

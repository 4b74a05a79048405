"""Categories and monthly budgets, on SQLite and PostgreSQL: terms keep their categories and
drafts their lines', committed spend is summed by the Pakistan-time month of each approval,
a soft budget adds its stage and asks every approval over it for a reason, a hard one refuses
the whole sheet before anything is written."""

from __future__ import annotations

import hashlib
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from bot.words.problems import problem_lines
from core.approval import decisions
from core.approval.approval_policy import import_policy
from core.approval.budgets import month_of
from core.approval.decisions import Review
from core.approval.policies import PAKISTAN, Rules, Stage, Verdict
from core.approval.routes import Route, StageReason
from core.drafting.tables import Row, Table
from core.drafting.terms import REQUIRED
from core.errors import ReasonRequired
from core.jobs.jobs import Job, Stamp
from core.jobs.states import State
from core.people import people
from core.purchasing import new_terms, submissions
from core.purchasing.submissions import Numbering, Sheet
from store import schema
from store.sql import SqlStore
from tests.helpers.factories import APPROVER_A, APPROVER_B, REQUESTER

RULES = Rules()
DEFAULT = RULES.approval.default_policy
# 1 December 2026, 00:30 in Karachi: still 30 November in UTC.
DECEMBER = datetime(2026, 11, 30, 19, 30, tzinfo=UTC)
NOVEMBER_END = datetime(2026, 11, 30, 18, 59, 59, tzinfo=UTC)  # 23:59:59 PKT on the 30th
CHG, CBL, BAT = "CHG-65W", "CBL-USBC-1M", "BAT-AA-4"
# (supplier, sku, description, price in rupees, category as a person writes it)
OFFERS = (
    ("SUP-A", CHG, "65 W charger", "10000", " Chargers "),
    ("SUP-A", CBL, "USB-C cable", "1000", "accessories"),
    ("SUP-B", CHG, "65 W charger", "10000", "CHARGERS"),
    ("SUP-B", BAT, "AA batteries", "500", ""),
)
NAMES = {"SUP-A": ("Hall Road", "orders@hallroad.example"), "SUP-B": ("Saddar", "s@saddar.example")}
POLICY = """
[groups]
approvers = "Approvers"
owners = "Owners"

[[rules]]
name = "chargers"
when = { categories = ["Chargers"] }
stages = [{ group = "approvers" }]

[[rules]]
name = "default"
stages = [{ group = "approvers" }]

[budgets]
mode = "soft"
over_budget_stage = { group = "owners" }
monthly_pkr = { Chargers = 50_000, accessories = 100_000 }
"""
HARD = POLICY.replace('mode = "soft"\nover_budget_stage = { group = "owners" }', 'mode = "hard"')


def terms_table() -> Table:
    rows = [(*REQUIRED, "category")]
    for supplier, sku, description, price, category in OFFERS:
        name, email = NAMES[supplier]
        rows.append((supplier, name, email, sku, description, price, "", "", category))
    return Table(tuple(Row(n, tuple(cells)) for n, cells in enumerate(rows, start=1)))


def sheet(*rows: tuple[str, str, str]) -> Sheet:
    sha = hashlib.sha256(repr(rows).encode()).hexdigest()
    header = ("sku", "quantity", "supplier_id")
    cells = [header, *rows]
    table = Table(tuple(Row(n, tuple(c)) for n, c in enumerate(cells, start=1)))
    return Sheet("restock.csv", sha, table)


async def submitted(store: SqlStore, at: datetime, *rows: tuple[str, str, str]) -> list[Job]:
    numbering = Numbering(2026, lambda: str(uuid.uuid4()))
    done = await submissions.submit_sheet(store, REQUESTER, sheet(*rows), at, RULES, numbering)
    assert done.problems == ()
    return [job for job, _ in done.orders]


async def approve(store: SqlStore, job: Job, who: int, at: datetime, reason: str | None = None):
    assert job.draft_version is not None and job.draft_hash is not None
    review = Review(job.po_number, who, Verdict.APPROVE, job.draft_version, job.draft_hash, reason)
    return await decisions.decide(store, review, at, RULES)


async def spend(store: SqlStore, at: datetime, excluding: str | None = None) -> dict[str, int]:
    month = month_of(at, PAKISTAN)
    async with store.reading() as tx:
        return await tx.committed_spend(month.start, month.end, excluding)


@pytest.fixture
async def shop(store: SqlStore) -> SqlStore:
    """Terms with categories in force."""
    done = await new_terms.import_terms(store, terms_table(), DECEMBER, "test")
    assert done.created
    return store


async def in_force(store: SqlStore, policy: str) -> None:
    """The policy imported; APPROVER_B is an owner."""
    assert (await import_policy(store, policy, DECEMBER, "cli:test")).created
    await people.set_groups(store, APPROVER_B, ["owners"], Stamp("test", DECEMBER), DEFAULT)


async def test_terms_and_drafts_keep_their_categories(shop: SqlStore) -> None:
    [job] = await submitted(shop, DECEMBER, (CHG, "2", "SUP-A"), (CBL, "3", "SUP-A"))
    async with shop.reading() as tx:
        terms = await tx.current_terms()
        draft = await tx.draft(job.id, 1)
        lines = schema.order_lines
        stored = dict(
            (await tx.conn.execute(select(lines.c.sku, lines.c.category).order_by(lines.c.sku)))
            .tuples()
            .all()
        )
    assert terms is not None
    assert {(o.supplier_id, o.sku): o.category for o in terms.offers} == {
        ("SUP-A", CHG): "chargers",
        ("SUP-A", CBL): "accessories",
        ("SUP-B", CHG): "chargers",
        ("SUP-B", BAT): "",
    }
    assert [(line.sku, line.category) for line in draft.lines] == [
        (CBL, "accessories"),
        (CHG, "chargers"),
    ]
    assert stored == {CBL: "accessories", CHG: "chargers"}


async def test_committed_spend_is_what_was_approved_in_the_pakistan_month(
    shop: SqlStore,
) -> None:
    # No policy imported: one approval approves.
    first, waiting = (
        (await submitted(shop, DECEMBER, (CHG, "2", "SUP-A"), (CBL, "3", "SUP-A")))[0],
        (await submitted(shop, DECEMBER, (CHG, "1", "SUP-B"), (BAT, "4", "SUP-B")))[0],
    )
    assert await spend(shop, DECEMBER) == {}
    approved = (await approve(shop, first, APPROVER_A, DECEMBER)).job
    assert approved.state is State.APPROVED and approved.approved_at == DECEMBER
    december = {"chargers": 20_000 * 100, "accessories": 3_000 * 100}
    assert await spend(shop, DECEMBER) == december
    assert await spend(shop, DECEMBER + timedelta(days=30)) == december  # 30 Dec, PKT
    assert await spend(shop, NOVEMBER_END) == {}  # a second before, in Karachi: November
    assert await spend(shop, DECEMBER + timedelta(days=31)) == {}  # January
    assert await spend(shop, DECEMBER, excluding=first.id) == {}
    assert waiting.state is State.AWAITING_APPROVAL  # not committed: not counted
    for state in (State.SENDING, State.SENT, State.UNKNOWN_OUTCOME):
        await moved_to(shop, approved, state)
        assert await spend(shop, DECEMBER) == december
    await moved_to(shop, approved, State.FAILED_FINAL)
    assert await spend(shop, DECEMBER) == {}


async def moved_to(store: SqlStore, job: Job, state: State) -> None:
    """Put a job in `state` directly: the sum reads states, whatever moved them there."""
    async with store.begin() as tx:
        jobs = schema.jobs
        await tx.conn.execute(jobs.update().where(jobs.c.id == job.id).values(state=state.value))


async def test_a_soft_budget_adds_its_stage_and_every_approval_over_it_needs_a_reason(
    shop: SqlStore,
) -> None:
    await in_force(shop, POLICY)
    [within] = await submitted(shop, DECEMBER, (CHG, "4", "SUP-A"))  # Rs 40,000 of 50,000
    [over] = await submitted(shop, DECEMBER, (CHG, "6", "SUP-B"))  # Rs 60,000
    assert Route.from_plain(within.route or {}).stages == (Stage("approvers"),)
    route = Route.from_plain(over.route or {})
    assert route.rule == "chargers"
    assert route.stages == (Stage("approvers"), Stage("owners"))
    assert route.reasons == (StageReason.RULE, StageReason.BUDGET)

    with pytest.raises(ReasonRequired):
        await approve(shop, over, APPROVER_A, DECEMBER)
    async with shop.reading() as tx:
        assert await tx.decisions(over.id) == []  # a bare tap records nothing
    first = await approve(shop, over, APPROVER_A, DECEMBER, "Eid rush")
    assert first.decision.reason == "Eid rush" and first.tally.stage == 1
    with pytest.raises(ReasonRequired):
        await approve(shop, first.job, APPROVER_B, DECEMBER)
    done = await approve(shop, first.job, APPROVER_B, DECEMBER, "Agreed with the owners")
    assert done.job.state is State.APPROVED
    assert await spend(shop, DECEMBER) == {"chargers": 60_000 * 100}

    # The PO within budget when it was drafted is over now: its route keeps no budget stage,
    # and its approval needs a reason all the same.
    with pytest.raises(ReasonRequired):
        await approve(shop, within, APPROVER_A, DECEMBER)
    late = await approve(shop, within, APPROVER_A, DECEMBER, "Stock ran out")
    assert late.job.state is State.APPROVED and late.decision.reason == "Stock ran out"


async def test_a_hard_budget_refuses_the_whole_sheet_with_its_figures(shop: SqlStore) -> None:
    await in_force(shop, HARD)
    # Two POs, Rs 30,000 of chargers each: within the month alone, over it together.
    rows = ((CHG, "3", "SUP-A"), (CHG, "3", "SUP-B"), (BAT, "10", "SUP-B"))
    numbering = Numbering(2026, lambda: str(uuid.uuid4()))
    refused = await submissions.submit_sheet(
        shop, REQUESTER, sheet(*rows), DECEMBER, RULES, numbering
    )
    figures = [
        "Over the December 2026 budget for chargers: budget Rs 50,000.00, committed Rs 0.00, "
        "this sheet uses Rs 60,000.00, over by Rs 10,000.00."
    ]
    assert problem_lines(refused.problems) == figures and refused.orders == ()
    preview = await submissions.preview_sheet(shop, sheet(*rows), RULES, now=DECEMBER)
    assert problem_lines(preview.problems) == figures
    async with shop.reading() as tx:
        assert await tx.list_jobs(None, 10) == []
        assert await tx.submission(REQUESTER, sheet(*rows).sha256) is None
    [job] = await submitted(shop, DECEMBER, (CHG, "3", "SUP-A"))
    assert Route.from_plain(job.route or {}).stages == (Stage("approvers"),)


async def test_a_policy_without_budgets_leaves_approvals_alone(shop: SqlStore) -> None:
    policy = POLICY[: POLICY.index("[budgets]")]
    await in_force(shop, policy)
    [job] = await submitted(shop, DECEMBER, (CHG, "9", "SUP-A"))
    assert (await approve(shop, job, APPROVER_A, DECEMBER)).job.state is State.APPROVED


async def test_uncategorised_lines_and_jobs_routed_before_policies_need_no_reason(
    shop: SqlStore,
) -> None:
    # Drafted before any policy: they follow the configured default, which has no budgets.
    [default, unrouted] = await submitted(shop, DECEMBER, (CHG, "9", "SUP-A"), (CHG, "2", "SUP-B"))
    await in_force(shop, POLICY)
    assert Route.from_plain(default.route or {}).policy_version == ""
    assert (await approve(shop, default, APPROVER_A, DECEMBER)).job.state is State.APPROVED
    async with shop.begin() as tx:  # as a job drafted before routing: no stored route
        jobs = schema.jobs
        await tx.conn.execute(jobs.update().where(jobs.c.id == unrouted.id).values(route=None))
    assert (await approve(shop, unrouted, APPROVER_A, DECEMBER)).job.state is State.APPROVED
    assert await spend(shop, DECEMBER) == {"chargers": 110_000 * 100}  # over Rs 50,000
    [batteries] = await submitted(shop, DECEMBER, (BAT, "400", "SUP-B"))  # uncategorised
    assert Route.from_plain(batteries.route or {}).stages == (Stage("approvers"),)
    assert (await approve(shop, batteries, APPROVER_A, DECEMBER)).job.state is State.APPROVED

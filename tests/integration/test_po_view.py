"""The review view (core.purchasing.po_view) of a multi-line PO with a prior sent PO to the same
supplier, read on SQLite and PostgreSQL: every line with its last sent price, the chain, who may
read it and who may decide it now."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from decimal import Decimal

import pytest

from core.approval import decisions, opening
from core.approval.approval_policy import import_policy
from core.approval.decisions import Review
from core.approval.policies import ApprovalPolicy, Outcome, Policy, Role, Rules, Verdict
from core.approval.routes import StageReason
from core.drafting.drafts import Draft, DraftLine, Flag, short_hash
from core.drafting.flags import FlagCode
from core.errors import AlreadyDecided, NotAnApprover, ReadRefused, SelfApproval
from core.jobs.jobs import Stamp
from core.jobs.states import State
from core.outbox import dispatch
from core.outbox.dispatch import Attempted
from core.people import people
from core.purchasing.po_view import LastSent, po_view
from store.sql import SqlStore
from tests.helpers.documents import with_document
from tests.helpers.factories import APPROVER_A, APPROVER_B, OUTSIDER, REQUESTER, T0, new_job
from tests.helpers.routing import soft_budget

RULES = Rules(approval=ApprovalPolicy(ttl=timedelta(hours=24)))
DEFAULT = Policy.default(500_000 * 100)
LEASE = timedelta(seconds=60)
SENT_AT = T0 + timedelta(hours=1)
LATER = T0 + timedelta(days=2)
# The managers approve; a line more than 10% above its last sent price adds the owners' stage.
POLICY = (
    '[groups]\nmanagers = "Managers"\nowners = "Owners"\n'
    '[[rules]]\nname = "chain"\nstages = [{ group = "managers" }]\n'
    '[drift]\npercent = 10\nadd_stage = { group = "owners" }\n'
)


def draft(po: str, charger: int, cable: int, **more: object) -> Draft:
    return Draft(
        po_number=po,
        supplier_id="SUP-LHR-01",
        supplier_name="Hall Road Electronics",
        recipient_email="orders@supplier.example",
        terms_version="terms-2026-11",
        lines=(
            DraftLine("ADP-65W", "65 W charger", 10, charger, "for Eid", "chargers"),
            DraftLine("CBL-USB-C-1M", "USB-C cable 1 m", 50, cable),
            DraftLine("HUB-7P", "7-port hub", 4, 300_000),  # never sent before
        ),
        **more,  # type: ignore[arg-type]
    )


async def sent_before(store: SqlStore) -> None:
    """PO-2026-0041, the charger at Rs 4,000 and the cable at Rs 250, approved and sent."""
    first = draft("PO-2026-0041", 400_000, 25_000)
    earlier = replace(first, lines=first.lines[:2])
    job = await opening.open_job(store, new_job(), earlier, T0, RULES)
    review = Review(job.po_number, APPROVER_A, Verdict.APPROVE, 1, job.draft_hash or "")
    await decisions.decide(store, review, T0, RULES)
    [claimed] = await dispatch.claim(store, SENT_AT, "runner", LEASE, 10)
    await with_document(store, claimed, SENT_AT)
    order = await dispatch.start_attempt(store, claimed.key, "runner", SENT_AT, LEASE, RULES)
    assert order is not None
    done = Attempted("runner", result={"message_id": "<a@b>"})
    assert await dispatch.finish_attempt(store, order, done, SENT_AT, RULES, 0.5) is State.SENT


async def waiting(store: SqlStore):
    """PO-2026-0042 under POLICY: the charger up 12.5% (a drift), the cable unchanged."""
    await import_policy(store, POLICY, T0, "cli:test")
    for who, group in ((APPROVER_A, "managers"), (APPROVER_B, "owners")):
        await people.set_groups(store, who, [group], Stamp("test", T0), DEFAULT)
    await sent_before(store)
    async with store.begin() as tx:
        await tx.met(APPROVER_A, "Ali", T0, started=True)
        await tx.met(REQUESTER, "Bilal", T0, started=True)
    drift = Flag(FlagCode.PRICE_CHANGED, "ADP-65W", (400_000, 450_000), "PO-2026-0041")
    made = draft("PO-2026-0042", 450_000, 25_000, flags=(drift,))
    return await opening.open_job(store, new_job(), made, LATER, RULES)


async def view(store: SqlStore, viewer: int, roles=None):
    async with store.reading() as tx:
        return await po_view(tx, "PO-2026-0042", viewer, LATER, RULES, roles=roles)


async def test_every_line_shows_its_last_sent_price_and_the_drift(store):
    job = await waiting(store)
    seen = await view(store, APPROVER_A)
    assert (seen.draft_version, seen.draft_hash, seen.short_hash) == (
        1,
        job.draft_hash,
        short_hash(job.draft_hash),
    )
    assert (seen.supplier_name, seen.supplier_email) == (
        "Hall Road Electronics",
        "or***@supplier.example",
    )
    assert seen.requester == "Bilal" and seen.deadline == LATER + timedelta(hours=24)
    assert seen.total_paisa == 10 * 450_000 + 50 * 25_000 + 4 * 300_000
    charger, cable, hub = seen.lines
    assert (charger.number, charger.sku, charger.quantity, charger.amount_paisa) == (
        1,
        "ADP-65W",
        10,
        4_500_000,
    )
    assert charger.last == LastSent("PO-2026-0041", 400_000, SENT_AT)
    assert (charger.note, charger.category, cable.note) == ("for Eid", "chargers", "")
    assert (charger.drift_percent, charger.drifted) == (Decimal("12.5"), True)
    assert cable.last == LastSent("PO-2026-0041", 25_000, SENT_AT)
    assert (cable.drift_percent, cable.drifted) == (Decimal("0.0"), False)
    assert (hub.number, hub.last, hub.drift_percent) == (3, None, None)
    assert [f.code for f in seen.flags] == [FlagCode.PRICE_CHANGED]
    assert seen.terms_version == "terms-2026-11"


async def test_the_chain_shows_each_stage_who_decided_and_which_waits(store):
    job = await waiting(store)
    first = await view(store, APPROVER_A)
    assert [(s.group, s.title, s.reason, s.approvals, s.waiting) for s in first.chain] == [
        ("managers", "Managers", StageReason.RULE, 1, True),
        ("owners", "Owners", StageReason.DRIFT, 1, False),
    ]
    assert first.refusal is None and first.may_decide and not first.needs_reason
    review = Review(job.po_number, APPROVER_A, Verdict.APPROVE, 1, job.draft_hash)
    await decisions.decide(store, review, LATER, RULES)
    after = await view(store, APPROVER_A)
    [ali] = after.chain[0].decisions
    assert (ali.reviewer, ali.verdict, ali.at, ali.on_behalf_of) == (
        "Ali",
        Verdict.APPROVE,
        LATER,
        None,
    )
    assert [s.waiting for s in after.chain] == [False, True] and after.outcome is Outcome.PENDING
    assert isinstance(after.refusal, AlreadyDecided)  # Ali counted: the owners' turn
    assert (await view(store, APPROVER_B)).refusal is None


@pytest.mark.parametrize(
    ("viewer", "roles", "refusal"),
    [
        # the requester reads their PO, and may not decide it (no approver)
        (REQUESTER, None, NotAnApprover),
        # nor as an approver too
        (REQUESTER, frozenset({Role.REQUESTER, Role.APPROVER}), SelfApproval),
        # an admin who is no approver (configured, so the shell passes the role) reads it
        (OUTSIDER, frozenset({Role.ADMIN}), NotAnApprover),
        # the manager it waits for reads it and may decide
        (APPROVER_A, None, None),
    ],
    ids=["requester", "requester-approver", "admin", "manager"],
)
async def test_who_may_read_it_and_what_stops_them_deciding(store, viewer, roles, refusal):
    await waiting(store)
    if roles and Role.APPROVER in roles:  # the decision's check reads the stored roles
        async with store.begin() as tx:
            await tx.grant(viewer, Role.APPROVER, "test", T0)
    seen = await view(store, viewer, roles)
    if refusal is None:
        assert seen.refusal is None
    else:
        assert isinstance(seen.refusal, refusal)


@pytest.mark.parametrize(
    "viewer",
    [
        OUTSIDER,  # nobody the bot knows
        APPROVER_B,  # an owner: asked only once the managers approved, not yet
    ],
    ids=["stranger", "owner-not-yet-asked"],
)
async def test_someone_never_asked_may_not_read_it(store, viewer):
    await waiting(store)
    with pytest.raises(ReadRefused):
        await view(store, viewer)


async def test_a_sent_po_reads_as_approved_long_after_its_approvals_expired(store):
    await sent_before(store)
    async with store.reading() as tx:
        seen = await po_view(tx, "PO-2026-0041", REQUESTER, LATER, RULES)
    assert seen.job.state is State.SENT and seen.outcome is Outcome.APPROVED
    assert [s.waiting for s in seen.chain] == [False]
    assert [d.reviewer for d in seen.chain[0].decisions] == [f"user {APPROVER_A}"]
    # Its own lines are not their last price: no other PO was sent.
    assert [line.last for line in seen.lines] == [None, None]


BUDGETED = soft_budget(40_000)


async def test_the_budget_shows_the_month_and_an_approval_over_it_asks_for_a_reason(store):
    await import_policy(store, BUDGETED, T0, "cli:test")
    made = draft("PO-2026-0042", 450_000, 25_000)  # Rs 45,000 of chargers: over Rs 40,000
    await opening.open_job(store, new_job(), made, LATER, RULES)
    seen = await view(store, APPROVER_A)
    [month] = seen.budgets
    assert (month.category, month.budget_paisa, month.committed_paisa, month.uses_paisa) == (
        "chargers",
        4_000_000,
        0,
        4_500_000,
    )
    assert month.over and seen.needs_reason and seen.refusal is None
    assert [(s.group, s.reason) for s in seen.chain] == [
        ("approvers", StageReason.RULE),
        ("owners", StageReason.BUDGET),
    ]

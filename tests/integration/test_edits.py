"""The Mini App's decisions (SQLite and PostgreSQL): a client's decision id makes a replay, or
two at once, one decision; approve with changes makes a new version and approves it."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from core.approval import decisions as deciding
from core.approval import opening
from core.approval.approval_policy import import_policy
from core.approval.decisions import Review
from core.approval.policies import ApprovalPolicy, Outcome, Policy, Role, Rules, Verdict
from core.drafting.drafts import Draft, DraftLine, LineDiff, draft_hash, short_hash
from core.errors import (
    ClientIdReused,
    DraftChanged,
    EditProblem,
    EditRefused,
    NotAnApprover,
    ReasonRequired,
    SelfApproval,
)
from core.jobs.jobs import Stamp
from core.jobs.notices import NoticeKind, NoticeStatus
from core.jobs.states import State
from core.people import people
from core.purchasing.edits import Edit, LineChange, approve_with_changes
from store.sql import SqlStore
from tests.helpers.factories import APPROVER_A, APPROVER_B, REQUESTER, T0, new_job
from tests.helpers.routing import soft_budget

RULES = Rules(approval=ApprovalPolicy(ttl=timedelta(hours=24)))
DEFAULT = Policy.default(500_000 * 100)
PO = "PO-2026-0042"
ON_THE_PHONE = datetime(2026, 11, 29, 8, 58, 30, tzinfo=UTC)  # queued offline, sent at T0
# Managers, then owners: APPROVER_A manages, APPROVER_B owns.
CHAIN = (
    '[groups]\nmanagers = "Managers"\nowners = "Owners"\n'
    '[[rules]]\nname = "chain"\nstages = [{ group = "managers" }, { group = "owners" }]\n'
)


def three_lines() -> Draft:
    return Draft(
        po_number=PO,
        supplier_id="SUP-LHR-01",
        supplier_name="Hall Road Electronics",
        recipient_email="orders@supplier.example",
        terms_version="terms-2026-11",
        lines=(
            DraftLine("ADP-65W", "65 W charger", 10, 450_000),
            DraftLine("CBL-USB-C-1M", "USB-C cable 1 m", 50, 25_000),
            DraftLine("HUB-7P", "7-port hub", 4, 300_000),
        ),
    )


async def chain(store: SqlStore) -> None:
    """The managers-then-owners policy in force."""
    await import_policy(store, CHAIN, T0, "cli:test")
    for who, group in ((APPROVER_A, "managers"), (APPROVER_B, "owners")):
        await people.set_groups(store, who, [group], Stamp("test", T0), DEFAULT)


async def opened(store: SqlStore):
    return await opening.open_job(store, new_job(), three_lines(), T0, RULES)


def review(job, who=APPROVER_A, verdict=Verdict.APPROVE, client_id="offline-1", **more):
    return Review(
        job.po_number, who, verdict, job.draft_version, job.draft_hash, client_id=client_id,
        device_time=ON_THE_PHONE, **more,
    )  # fmt: skip


def trim(job, who=APPROVER_A, client_id=None, **more) -> Edit:
    """Line 2 from 50 to 30, line 3 dropped."""
    changes = (LineChange(2, 30), LineChange(3, 0))
    return Edit(
        job.po_number, who, job.draft_version, job.draft_hash, changes, client_id=client_id,
        device_time=ON_THE_PHONE, **more,
    )  # fmt: skip


async def stored(store: SqlStore, job):
    async with store.reading() as tx:
        now = await tx.job(job.id)
        return (
            now,
            await tx.decisions(job.id),
            await tx.effects_for(job.id),
            await tx.notices_for(job.id),
            await tx.audit(job.id),
        )


# --- client decision ids ------------------------------------------------------------------------


async def test_a_replayed_decision_is_recorded_once_and_answered_as_a_replay(store):
    job = await opened(store)
    first = await deciding.decide(store, review(job), T0, RULES)
    again = await deciding.decide(store, review(job), T0 + timedelta(minutes=5), RULES)
    assert (first.replay, again.replay) == (False, True)
    assert first.job.state is State.APPROVED and again.outcome is Outcome.APPROVED
    assert again.decision == first.decision
    now, decisions, effects, _, trail = await stored(store, job)
    assert now.state is State.APPROVED and len(decisions) == 1 and len(effects) == 1
    [approve] = [e for e in trail if e.action == "approve"]
    # The time on the phone beside the server's own.
    assert approve.at == T0 and approve.detail["device_time"] == ON_THE_PHONE.isoformat()
    assert approve.detail["client_id"] == "offline-1"


async def test_two_replays_at_once_make_one_decision(store):
    job = await opened(store)
    results = await asyncio.gather(
        *(deciding.decide(store, review(job), T0, RULES) for _ in range(3))
    )
    assert sorted(r.replay for r in results) == [False, True, True]
    assert {r.decision.at for r in results} == {T0}
    now, decisions, effects, _, _ = await stored(store, job)
    assert now.state is State.APPROVED and len(decisions) == 1 and len(effects) == 1


@pytest.mark.parametrize(
    "other",
    [
        {"verdict": Verdict.REJECT, "reason": "too dear"},  # the same id, another verdict
        {"who": APPROVER_B},  # the same id, another approver
    ],
    ids=["verdict", "person"],
)
async def test_a_client_id_reused_for_another_request_is_refused(store, other):
    job = await opened(store)
    await deciding.decide(store, review(job), T0, RULES)
    with pytest.raises(ClientIdReused):
        await deciding.decide(store, review(job, **other), T0, RULES)
    _, decisions, _, _, _ = await stored(store, job)
    assert len(decisions) == 1


async def test_a_client_id_reused_for_another_po_is_refused(store):
    job = await opened(store)
    other = await opening.open_job(
        store,
        new_job(),
        replace(three_lines(), po_number="PO-2026-0043"),
        T0,
        RULES,
    )
    await deciding.decide(store, review(job), T0, RULES)
    with pytest.raises(ClientIdReused):
        await deciding.decide(store, review(other), T0, RULES)


async def test_an_edits_id_reused_for_a_plain_decision_is_refused(store):
    await chain(store)
    job = await opened(store)
    await approve_with_changes(store, trim(job, client_id="offline-1"), T0, RULES)
    with pytest.raises(ClientIdReused):
        await deciding.decide(store, review(job), T0, RULES)  # the same id, no changes
    with pytest.raises(ClientIdReused):  # the same id, other changes
        await approve_with_changes(
            store, replace(trim(job, client_id="offline-1"), changes=(LineChange(1, 9),)), T0, RULES
        )


async def test_a_queued_decision_on_a_draft_that_changed_meanwhile_is_refused(store):
    job = await opened(store)
    lines = three_lines().lines
    changed = replace(three_lines(), lines=(lines[0], lines[1]))
    stamp = Stamp(f"user:{REQUESTER}", T0)
    await opening.revise(store, PO, opening.Revision(changed), stamp, RULES)  # meanwhile
    with pytest.raises(DraftChanged):
        await deciding.decide(store, review(job), T0 + timedelta(minutes=1), RULES)
    async with store.reading() as tx:
        assert await tx.client_decision("offline-1") is None  # nothing kept: it may be sent anew


# --- approve with changes -----------------------------------------------------------------------


async def test_an_edit_on_a_one_approver_policy_sends_the_trimmed_po(store):
    job = await opened(store)
    edited = await approve_with_changes(store, trim(job), T0, RULES)
    assert edited.diff == (
        LineDiff(2, "CBL-USB-C-1M", 50, 30),
        LineDiff(3, "HUB-7P", 4, 0),
    )
    assert edited.approval is not None and edited.approval.outcome is Outcome.APPROVED
    now, decisions, [send], notices, trail = await stored(store, job)
    async with store.reading() as tx:
        sent = await tx.draft(job.id, 2)
    assert [(line.sku, line.quantity) for line in sent.lines] == [
        ("ADP-65W", 10),
        ("CBL-USB-C-1M", 30),
    ]
    assert now.state is State.APPROVED and now.draft_version == 2
    assert now.draft_hash == draft_hash(sent) != job.draft_hash
    assert now.total_paisa == 10 * 450_000 + 30 * 25_000
    # The e-mail goes out for the trimmed version, under its own hash.
    assert send.key == f"send-po:{PO}:v2:{short_hash(now.draft_hash)}"
    [decision] = decisions
    assert (decision.reviewer_id, decision.draft_version) == (APPROVER_A, 2)
    # The requester is owed the news of what changed and who changed it.
    [news] = [n for n in notices if n.event == f"edited:{APPROVER_A}"]
    assert (news.kind, news.user_id, news.draft_version) == (NoticeKind.STATUS, REQUESTER, 2)
    # The cards of version 1 are edited to say so: superseded.
    assert any(n.kind is NoticeKind.CARD_EDITS and n.event == "AWAITING_APPROVAL" for n in notices)
    [revise] = [e for e in trail if e.action == "revise"]
    assert revise.detail["editor"] == APPROVER_A
    assert revise.detail["diff"] == [
        {"line": 2, "sku": "CBL-USB-C-1M", "before": 50, "after": 30},
        {"line": 3, "sku": "HUB-7P", "before": 4, "after": 0},
    ]
    assert revise.detail["device_time"] == ON_THE_PHONE.isoformat()


async def test_an_edit_on_a_two_stage_policy_counts_the_editor_and_asks_the_next_stage(store):
    await chain(store)
    job = await opened(store)
    edited = await approve_with_changes(store, trim(job), T0, RULES)
    assert edited.approval is not None
    assert (edited.approval.outcome, edited.approval.tally.stage) == (Outcome.PENDING, 1)
    now, [decision], effects, notices, _ = await stored(store, job)
    assert now.state is State.AWAITING_APPROVAL and now.draft_version == 2 and effects == []
    assert (decision.draft_version, decision.stage) == (2, 0)
    cards = {n.key: n.status for n in notices if n.kind is NoticeKind.CARD}
    assert cards[f"card:{PO}:v2:{APPROVER_B}"] is NoticeStatus.PENDING  # the owners' turn
    # The editor approved version 2 already: its card would only ask them again.
    assert cards[f"card:{PO}:v2:{APPROVER_A}"] is NoticeStatus.CANCELLED
    done = await deciding.decide(store, review(now, APPROVER_B, client_id=None), T0, RULES)
    assert done.job.state is State.APPROVED


async def test_an_editor_whose_stage_the_new_version_does_not_wait_for_is_not_counted(store):
    await chain(store)
    job = await opened(store)
    await deciding.decide(store, review(job, client_id=None), T0, RULES)  # managers: done
    edited = await approve_with_changes(store, trim(job, APPROVER_B), T0, RULES)
    # The new version starts at the managers again: the owner's edit waits for them.
    assert edited.approval is None and edited.job.draft_version == 2
    _, decisions, _, notices, _ = await stored(store, job)
    assert [d.draft_version for d in decisions] == [1]
    assert f"card:{PO}:v2:{APPROVER_A}" in {n.key for n in notices}


async def test_a_replayed_edit_is_made_once(store):
    job = await opened(store)
    edits = [trim(job, client_id="edit-7") for _ in range(3)]
    results = await asyncio.gather(*(approve_with_changes(store, e, T0, RULES) for e in edits))
    assert sorted(r.replay for r in results) == [False, True, True]
    assert {r.job.draft_version for r in results} == {2}
    assert all(r.diff == results[0].diff for r in results)
    now, decisions, effects, _, _ = await stored(store, job)
    assert (now.draft_version, now.state, len(decisions), len(effects)) == (
        2,
        State.APPROVED,
        1,
        1,
    )


@pytest.mark.parametrize(
    ("who", "changes", "refusal"),
    [
        # the requester, an approver too, never edits their own request
        (REQUESTER, (LineChange(2, 30),), SelfApproval),
        # someone without the approver role
        (3001, (LineChange(2, 30),), NotAnApprover),
        # more than the requester asked for
        (APPROVER_A, (LineChange(2, 51),), EditRefused),
        # every line dropped
        (APPROVER_A, (LineChange(1, 0), LineChange(2, 0), LineChange(3, 0)), EditRefused),
    ],
    ids=["requester", "outsider", "above-shown", "nothing-left"],
)
async def test_a_refused_edit_writes_nothing(store, who, changes, refusal):
    async with store.begin() as tx:
        await tx.grant(REQUESTER, Role.APPROVER, "test", T0)
    job = await opened(store)
    before = await stored(store, job)
    edit = Edit(PO, who, 1, job.draft_hash, changes, client_id="edit-1")
    with pytest.raises(refusal):
        await approve_with_changes(store, edit, T0, RULES)
    assert await stored(store, job) == before
    async with store.reading() as tx:
        assert await tx.client_decision("edit-1") is None


async def test_an_edit_of_an_old_version_is_refused(store):
    await chain(store)
    job = await opened(store)
    await approve_with_changes(store, trim(job), T0, RULES)  # now v2 waits for the owners
    with pytest.raises(DraftChanged):
        await approve_with_changes(store, trim(job, APPROVER_B), T0, RULES)


async def test_the_requester_news_says_what_changed_and_who(store):
    from core.messaging.delivery import news_to_send

    async with store.begin() as tx:
        await tx.met(APPROVER_A, "Ali", T0, started=True)
    job = await opened(store)
    await approve_with_changes(store, trim(job), T0, RULES)
    _, _, _, notices, _ = await stored(store, job)
    [notice] = [n for n in notices if n.event.startswith("edited:")]
    assert notice.status is NoticeStatus.PENDING
    news = await news_to_send(store, notice, T0, DEFAULT)
    assert news is not None and news.editor == "Ali"
    assert news.changes == (LineDiff(2, "CBL-USB-C-1M", 50, 30), LineDiff(3, "HUB-7P", 4, 0))
    assert news.total_paisa == 10 * 450_000 + 30 * 25_000


async def test_an_unchanged_edit_is_refused_with_its_code(store):
    job = await opened(store)
    edit = Edit(PO, APPROVER_A, 1, job.draft_hash, (LineChange(2, 50),))
    with pytest.raises(EditRefused) as refused:
        await approve_with_changes(store, edit, T0, RULES)
    assert refused.value.code is EditProblem.NO_CHANGE


# --- budgets --------------------------------------------------------------------------------------

BUDGETED = soft_budget(50_000)


async def over_budget(store: SqlStore):
    """Ten chargers at Rs 10,000 under a Rs 50,000 month: the owners' stage is on its route."""
    await import_policy(store, BUDGETED, T0, "cli:test")
    await people.set_groups(store, APPROVER_B, ["owners"], Stamp("test", T0), DEFAULT)
    charger = DraftLine("ADP-65W", "65 W charger", 10, 1_000_000, category="chargers")
    made = replace(three_lines(), lines=(charger, *three_lines().lines[1:]))
    job = await opening.open_job(store, new_job(), made, T0, RULES)
    assert [s[0] for s in (job.route or {})["stages"]] == ["approvers", "owners"]
    return job


async def test_an_edit_within_the_budget_is_routed_afresh_without_the_budget_stage(store):
    job = await over_budget(store)
    edit = Edit(PO, APPROVER_A, 1, job.draft_hash, (LineChange(1, 4),))  # Rs 40,000: within
    edited = await approve_with_changes(store, edit, T0, RULES)
    assert [s[0] for s in (edited.job.route or {})["stages"]] == ["approvers"]
    assert edited.job.state is State.APPROVED


async def test_an_edit_still_over_the_budget_needs_the_reason_its_approval_does(store):
    job = await over_budget(store)
    before = await stored(store, job)
    bare = Edit(PO, APPROVER_A, 1, job.draft_hash, (LineChange(1, 6),))  # Rs 60,000: over
    with pytest.raises(ReasonRequired):
        await approve_with_changes(store, bare, T0, RULES)
    assert await stored(store, job) == before  # no new version without the approval
    edited = await approve_with_changes(store, replace(bare, reason="Eid rush"), T0, RULES)
    assert edited.approval is not None and edited.approval.decision.reason == "Eid rush"
    assert (edited.job.state, edited.approval.tally.stage) == (State.AWAITING_APPROVAL, 1)

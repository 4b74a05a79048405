"""Delegation on SQLite and PostgreSQL: the delegate is owed the cards of the one away and
decides for them; the delegation ends at its time (the runner's sweep), by /back, by a new
delegation or when either loses the approver role, and the cards go back; all audited."""

from __future__ import annotations

from datetime import timedelta

import pytest

from core.approval import decisions, opening
from core.approval.approval_policy import import_policy
from core.approval.decisions import Review
from core.approval.policies import Outcome, Policy, Role, Rules, Verdict
from core.approval.standing import standing
from core.errors import DelegationEnded, DelegationRefused, NotAnAdmin
from core.jobs.jobs import Stamp
from core.jobs.notices import NoticeKind
from core.people import delegating, people
from core.people.users import Acting
from tests.helpers.factories import APPROVER_A, APPROVER_B, T0, make_draft, new_job
from tests.helpers.store import grant_cast

DEFAULT = Policy.default(500_000 * 100)
APPROVER_C = 2003
PO = "PO-2026-0101"
MANAGERS = (
    '[groups]\nmanagers = "Managers"\n[[rules]]\nname = "one"\nstages = [{ group = "managers" }]\n'
)


async def waiting_for_ali(store):
    """Ali is the one manager; Sana and Chand are approvers of no group; one PO waits."""
    await grant_cast(store)
    async with store.begin() as tx:
        await tx.grant(APPROVER_C, Role.APPROVER, "test", T0)
    await import_policy(store, MANAGERS, T0, "cli:test")
    await people.set_groups(store, APPROVER_A, ["managers"], Stamp("test", T0), DEFAULT)
    return await opening.open_job(store, new_job(), make_draft(PO), T0, Rules())


async def card_keys(store, job):
    async with store.begin() as tx:
        return sorted(n.key for n in await tx.notices_for(job.id) if n.kind is NoticeKind.CARD)


async def edits(store, job):
    async with store.begin() as tx:
        notices = await tx.notices_for(job.id)
    return [n.key for n in notices if n.kind is NoticeKind.CARD_EDITS]


def review(job, reviewer):
    return Review(PO, reviewer, Verdict.APPROVE, job.draft_version, job.draft_hash)


async def test_a_delegation_ends_at_its_time_and_the_cards_go_back(store):
    job = await waiting_for_ali(store)
    assert await card_keys(store, job) == [f"card:{PO}:v1:{APPROVER_A}"]
    at = T0 + timedelta(minutes=1)
    made = await delegating.delegate(
        store, APPROVER_A, APPROVER_B, T0 + timedelta(hours=1), Stamp("user:2001", at), DEFAULT
    )
    assert (made.delegator, made.delegate, made.ended_at) == (APPROVER_A, APPROVER_B, None)
    assert f"card:{PO}:v1:{APPROVER_B}:for{APPROVER_A}" in await card_keys(store, job)

    assert await delegating.end_due_delegations(store, T0 + timedelta(minutes=30), DEFAULT) == []
    later = T0 + timedelta(hours=2)
    [ended] = await delegating.end_due_delegations(store, later, DEFAULT)
    assert ended.id == made.id and ended.ended_at == made.until  # at its time, not the sweep's
    assert await delegating.end_due_delegations(store, later, DEFAULT) == []  # once only
    assert f"card:{PO}:v1:{APPROVER_A}:back{made.id}" in await card_keys(store, job)
    assert any(key.endswith(f":back{made.id}") for key in await edits(store, job))

    with pytest.raises(DelegationEnded, match=f"no longer act for user {APPROVER_A}"):
        await decisions.decide(store, review(job, APPROVER_B), later, Rules())
    result = await decisions.decide(store, review(job, APPROVER_A), later, Rules())
    assert result.decision.on_behalf_of is None and result.job.state.value == "APPROVED"
    async with store.begin() as tx:
        actions = [(e.actor, e.action) for e in await tx.audit(None)]
    assert ("user:2001", "delegate") in actions and ("runner", "end_delegation") in actions


async def test_the_delegates_approval_counts_as_the_delegators(store):
    job = await waiting_for_ali(store)
    until = T0 + timedelta(days=1)
    await delegating.delegate(store, APPROVER_A, APPROVER_B, until, Stamp("user:2001", T0), DEFAULT)
    result = await decisions.decide(store, review(job, APPROVER_B), T0, Rules())
    assert result.decision.on_behalf_of == APPROVER_A
    assert result.job.state.value == "APPROVED"
    async with store.begin() as tx:
        [approve] = [e for e in await tx.audit(job.id) if e.action == "approve"]
    assert approve.detail["for"] == APPROVER_A and approve.actor == f"user:{APPROVER_B}"


async def test_a_new_delegation_or_a_lost_role_ends_the_one_before(store):
    job = await waiting_for_ali(store)
    until = T0 + timedelta(days=1)
    first = await delegating.delegate(store, APPROVER_A, APPROVER_B, until, Stamp("t", T0), DEFAULT)
    at = T0 + timedelta(minutes=5)
    second = await delegating.delegate(
        store, APPROVER_A, APPROVER_C, until, Stamp("t", at), DEFAULT
    )
    assert second.id != first.id
    assert f"card:{PO}:v1:{APPROVER_C}:for{APPROVER_A}" in await card_keys(store, job)
    assert f"card:{PO}:v1:{APPROVER_A}:back{first.id}" not in await card_keys(store, job)
    with pytest.raises(DelegationEnded):
        await decisions.decide(store, review(job, APPROVER_B), at, Rules())

    gone = T0 + timedelta(minutes=10)
    await people.revoke_roles(store, APPROVER_C, Stamp("cli:root", gone), frozenset(), DEFAULT)
    assert f"card:{PO}:v1:{APPROVER_A}:back{second.id}" in await card_keys(store, job)
    with pytest.raises(DelegationRefused, match="no delegation to end"):
        await delegating.come_back(store, APPROVER_A, Stamp("t", gone), DEFAULT)


NONE: frozenset[int] = frozenset()  # no MANZOORI_ADMIN_IDS


async def test_only_an_admin_sets_or_ends_someone_elses_delegation(store):
    await waiting_for_ali(store)
    until = T0 + timedelta(days=1)
    with pytest.raises(NotAnAdmin):
        await delegating.delegate(
            store, APPROVER_A, APPROVER_B, until, Stamp("t", T0), DEFAULT, Acting(APPROVER_C, NONE)
        )
    admin = 9001
    made = await delegating.delegate(
        store,
        APPROVER_A,
        APPROVER_B,
        until,
        Stamp("t", T0),
        DEFAULT,
        Acting(admin, frozenset({admin})),
    )
    with pytest.raises(NotAnAdmin):
        await delegating.come_back(
            store, APPROVER_A, Stamp("t", T0), DEFAULT, Acting(APPROVER_B, NONE)
        )
    ended = await delegating.come_back(
        store, APPROVER_A, Stamp("t", T0), DEFAULT, Acting(APPROVER_A, NONE)
    )  # one's own: no admin needed
    assert ended.id == made.id and ended.ended_at == T0


async def test_a_hand_over_after_approval_does_not_undo_it_at_send_time(store):
    await grant_cast(store)
    async with store.begin() as tx:
        await tx.grant(APPROVER_C, Role.APPROVER, "test", T0)
    two = MANAGERS.replace('{ group = "managers" }', '{ group = "managers", approvals = 2 }')
    await import_policy(store, two, T0, "cli:test")
    for manager in (APPROVER_A, APPROVER_C):
        await people.set_groups(store, manager, ["managers"], Stamp("test", T0), DEFAULT)
    job = await opening.open_job(store, new_job(), make_draft(PO), T0, Rules())
    await decisions.decide(store, review(job, APPROVER_A), T0, Rules())
    done = await decisions.decide(
        store, review(job, APPROVER_C), T0 + timedelta(minutes=1), Rules()
    )
    assert done.job.state.value == "APPROVED"
    later = T0 + timedelta(minutes=2)
    until = T0 + timedelta(days=1)
    await delegating.delegate(store, APPROVER_A, APPROVER_C, until, Stamp("t", later), DEFAULT)
    async with store.reading() as tx:
        job = await tx.job_by_po(PO)
        where = await standing(tx, job, later, DEFAULT)
    assert where.tally.outcome is Outcome.APPROVED  # two people when they approved

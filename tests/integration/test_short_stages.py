"""A stage that can no longer be completed is the admins' news at once, on SQLite and
PostgreSQL, whatever made it so: routed to too few people, a decision, a member leaving the
group or losing the role, a delegation making two members one person. The alert is owed once
per draft version and stage, says why when it goes out, and is moot once the stage can be
completed again or the PO is decided."""

from __future__ import annotations

from datetime import timedelta

from core.approval import decisions, opening
from core.approval.approval_policy import import_policy
from core.approval.decisions import Review
from core.approval.policies import Policy, Role, Rules, Verdict
from core.jobs.jobs import Job, Stamp
from core.jobs.notices import SHORT_STAGE, Notice, NoticeKind, NoticeStatus
from core.messaging import delivery
from core.people import delegating, people
from store.sql import SqlStore
from tests.helpers.factories import APPROVER_A, APPROVER_B, REQUESTER, T0, make_draft, new_job
from tests.helpers.store import grant_cast

DEFAULT = Policy.default(500_000 * 100)
APPROVER_C = 2003
ADMIN = 9001
PO = "PO-2026-0201"
TWO_MANAGERS = (
    '[groups]\nmanagers = "Managers"\n'
    '[[rules]]\nname = "two"\nstages = [{ group = "managers", approvals = 2 }]\n'
)
SOON = T0 + timedelta(minutes=1)


async def managers(store: SqlStore, *members: int) -> None:
    """The two-managers policy in force, with these approvers in managers."""
    await grant_cast(store)
    async with store.begin() as tx:
        await tx.grant(APPROVER_C, Role.APPROVER, "test", T0)
        await tx.grant(REQUESTER, Role.APPROVER, "test", T0)  # a requester who approves too
    await import_policy(store, TWO_MANAGERS, T0, "cli:test")
    for member in members:
        await people.set_groups(store, member, ["managers"], Stamp("test", T0), DEFAULT)


async def short_alerts(store: SqlStore, job: Job) -> list[Notice]:
    async with store.reading() as tx:
        found = await tx.notices_for(job.id)
    return [n for n in found if n.kind is NoticeKind.ALERT and n.event.startswith(SHORT_STAGE)]


def approval(job: Job, reviewer: int) -> Review:
    return Review(PO, reviewer, Verdict.APPROVE, job.draft_version, job.draft_hash)


async def open_po(store: SqlStore) -> Job:
    return await opening.open_job(store, new_job(), make_draft(PO), T0, Rules())


async def test_routed_to_one_approver_and_the_requester_the_admins_are_told_at_once(store):
    await managers(store, APPROVER_A, REQUESTER)
    job = await open_po(store)
    [alert] = await short_alerts(store, job)
    assert alert.event == f"{SHORT_STAGE}:0" and alert.status is NoticeStatus.PENDING
    news = await delivery.news_to_send(store, alert, SOON, DEFAULT)
    assert news is not None and news.short is not None and news.stages == 1
    short = news.short
    assert (short.group, short.needed, short.eligible, short.members) == ("managers", 2, 1, 2)
    assert short.requester
    # Ali approves: still short (one more needed, nobody left), and still one alert.
    result = await decisions.decide(store, approval(job, APPROVER_A), SOON, Rules())
    assert result.job.state.value == "AWAITING_APPROVAL"
    assert len(await short_alerts(store, job)) == 1
    news = await delivery.news_to_send(store, alert, SOON, DEFAULT)
    assert news is not None and news.short is not None
    assert (news.short.needed, news.short.eligible) == (1, 0)


async def test_a_member_leaving_the_group_after_routing_is_news(store):
    await managers(store, APPROVER_A, APPROVER_B)
    job = await open_po(store)
    assert await short_alerts(store, job) == []  # Ali and Sana: two, as it asks
    await people.set_groups(store, APPROVER_B, [], Stamp("cli:admin", SOON), DEFAULT)
    [alert] = await short_alerts(store, job)
    news = await delivery.news_to_send(store, alert, SOON, DEFAULT)
    assert news is not None and news.short is not None
    assert (news.short.needed, news.short.eligible, news.short.members) == (2, 1, 1)


async def test_a_member_losing_the_approver_role_after_routing_is_news(store):
    await managers(store, APPROVER_A, APPROVER_B)
    job = await open_po(store)
    await people.revoke_roles(store, APPROVER_B, Stamp("cli:admin", SOON), frozenset(), DEFAULT)
    [alert] = await short_alerts(store, job)
    assert alert.event == f"{SHORT_STAGE}:0"


async def test_a_delegation_making_two_members_one_person_is_news(store):
    await managers(store, APPROVER_A, APPROVER_B)
    job = await open_po(store)
    until = T0 + timedelta(days=2)
    await delegating.delegate(
        store, APPROVER_B, APPROVER_A, until, Stamp("user:2002", SOON), DEFAULT
    )
    [alert] = await short_alerts(store, job)
    news = await delivery.news_to_send(store, alert, SOON, DEFAULT)
    assert news is not None and news.short is not None
    assert (news.short.eligible, news.short.joined) == (1, 1)


async def test_the_alert_is_moot_once_the_stage_can_be_completed_again(store):
    await managers(store, APPROVER_A, REQUESTER)
    job = await open_po(store)
    [alert] = await short_alerts(store, job)
    await people.set_groups(store, APPROVER_C, ["managers"], Stamp("cli:admin", SOON), DEFAULT)
    assert await delivery.fan_out(store, alert, SOON, frozenset({ADMIN}), DEFAULT) == 0
    [cancelled] = await short_alerts(store, job)
    assert cancelled.status is NoticeStatus.CANCELLED


async def test_a_stage_that_can_be_completed_owes_no_alert(store):
    await managers(store, APPROVER_A, APPROVER_B, APPROVER_C)
    job = await open_po(store)
    await decisions.decide(store, approval(job, APPROVER_A), SOON, Rules())
    await people.set_groups(store, APPROVER_C, [], Stamp("cli:admin", SOON), DEFAULT)
    assert await short_alerts(store, job) == []  # Sana can still give the second


async def test_an_approval_that_uses_up_a_later_stages_only_member_is_news(store):
    chain = (
        '[groups]\nmanagers = "Managers"\nowners = "Owners"\n[[rules]]\nname = "two"\n'
        'stages = [{ group = "managers", approvals = 2 }, { group = "owners" }]\n'
    )
    await managers(store, APPROVER_A, APPROVER_B)
    await import_policy(store, chain, T0, "cli:test")
    await people.set_groups(store, APPROVER_B, ["managers", "owners"], Stamp("t", T0), DEFAULT)
    job = await open_po(store)
    assert await short_alerts(store, job) == []  # Ali and Sana, then Sana as owner: it can pass
    await decisions.decide(store, approval(job, APPROVER_B), SOON, Rules())  # Sana, as manager
    [alert] = await short_alerts(store, job)
    assert alert.event == f"{SHORT_STAGE}:1"
    news = await delivery.news_to_send(store, alert, SOON, DEFAULT)
    assert news is not None and news.short is not None and news.stages == 2
    assert (news.short.group, news.short.eligible, news.short.counted) == ("owners", 0, 1)

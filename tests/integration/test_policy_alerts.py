"""A policy put in force with a group nobody can approve for owes the admins an alert, in the
import's own transaction, on SQLite and PostgreSQL; the alert is about no job, is owed once
per version, and is moot once the group has someone or another policy is in force."""

from __future__ import annotations

from datetime import timedelta

from core.approval.approval_policy import import_policy
from core.approval.policies import Policy
from core.jobs.notices import EVERYONE, UNSTAFFED_POLICY, Notice, NoticeKind, NoticeStatus
from core.messaging import delivery
from store import schema
from store.rows import notice_from_row
from store.sql import SqlStore
from tests.helpers.factories import APPROVER_A, T0

ADMIN = 9001
DEFAULT = Policy.default(500_000 * 100)
GROUPS = '[groups]\nmanagers = "Managers"\nowners = "Owners"\n'
CHAIN = (
    GROUPS + '[[rules]]\nname = "chain"\nstages = [{ group = "managers" }, { group = "owners" }]\n'
)
MANAGERS_ONLY = GROUPS + '[[rules]]\nname = "one"\nstages = [{ group = "managers" }]\n'


async def notices(store: SqlStore) -> list[Notice]:
    async with store.reading() as tx:
        rows = await tx.conn.execute(schema.notices.select().order_by(schema.notices.c.key))
        return [notice_from_row(row) for row in rows]


async def manager(store: SqlStore) -> None:
    """Ali, an approver who pressed Start, is in managers."""
    async with store.begin() as tx:
        await tx.met(APPROVER_A, "Ali", T0, started=True)
        await tx.set_groups(APPROVER_A, ["managers"], "test", T0)


async def test_an_import_owes_the_admins_an_alert_about_no_job(store: SqlStore) -> None:
    await manager(store)
    done = await import_policy(store, CHAIN, T0, "cli:ayesha")
    assert done.created and done.unreachable == ("owners",)
    [alert] = await notices(store)
    assert (alert.kind, alert.user_id, alert.job_id) == (NoticeKind.ALERT, EVERYONE, None)
    assert alert.event == f"{UNSTAFFED_POLICY}:{done.version}"
    assert (alert.status, alert.next_attempt_at) == (NoticeStatus.PENDING, T0)
    again = await import_policy(store, CHAIN, T0 + timedelta(hours=1), "cli:ayesha")
    assert not again.created and again.unreachable == ("owners",)
    assert len(await notices(store)) == 1  # owed once, by the import that put it in force


async def test_a_policy_every_group_of_which_has_someone_owes_nothing(store: SqlStore) -> None:
    await manager(store)
    done = await import_policy(store, MANAGERS_ONLY, T0, "cli:ayesha")
    assert done.created and done.unreachable == ()
    assert await notices(store) == []


async def test_the_alert_says_which_groups_and_goes_to_every_admin(store: SqlStore) -> None:
    done = await import_policy(store, CHAIN, T0, "cli:ayesha")
    [alert] = await notices(store)
    assert await delivery.fan_out(store, alert, T0, frozenset({ADMIN}), DEFAULT) == 1
    copy = next(n for n in await notices(store) if n.user_id == ADMIN)
    news = await delivery.news_to_send(store, copy, T0, DEFAULT)
    assert news is not None and news.job is None and news.policy_version == done.version
    assert news.unstaffed == (("managers", "Managers"), ("owners", "Owners"))
    await manager(store)  # by delivery time, managers has Ali: only owners is said
    news = await delivery.news_to_send(store, copy, T0, DEFAULT)
    assert news is not None and news.unstaffed == (("owners", "Owners"),)


async def test_the_alert_is_moot_once_staffed_or_superseded(store: SqlStore) -> None:
    await import_policy(store, MANAGERS_ONLY, T0, "cli:ayesha")
    [first] = await notices(store)
    await manager(store)  # managers has someone before the alert went out
    assert await delivery.fan_out(store, first, T0, frozenset({ADMIN}), DEFAULT) == 0
    await import_policy(store, CHAIN, T0 + timedelta(seconds=1), "cli:ayesha")  # owners: nobody
    [second] = [n for n in await notices(store) if n.key != first.key]
    later = await import_policy(store, MANAGERS_ONLY, T0 + timedelta(seconds=2), "cli:ayesha")
    assert later.created and later.unreachable == ()
    # Another policy is in force.
    assert await delivery.news_to_send(store, second, T0, DEFAULT) is None
    assert [n.status for n in await notices(store)] == [NoticeStatus.CANCELLED] * 2

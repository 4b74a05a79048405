"""Routing scenes the e2e tests share: a policy of managers and owners, a team to fill it,
and the cards a pass of the notice runner delivers."""

from __future__ import annotations

from bot.telegram.notices import NoticeRunner
from core.approval.approval_policy import import_policy
from core.approval.policies import Policy, Role
from core.jobs.jobs import Stamp
from core.people import people
from tests.helpers.bot import deliveries_done
from tests.helpers.factories import APPROVER_A, APPROVER_B, T0

APPROVER_C = 2003  # a second manager
GROUPS = '[groups]\nmanagers = "Managers"\nowners = "Owners"\n'
CHAIN = (
    GROUPS + '[[rules]]\nname = "chain"\nstages = [{ group = "managers" }, { group = "owners" }]\n'
)
COMMITTEE = (
    GROUPS + '[[rules]]\nname = "committee"\nstages = [{ group = "managers", approvals = 2 }]\n'
)
DEFAULT = Policy.default(500_000 * 100)


def soft_budget(chargers_pkr: int) -> str:
    """A policy of one approvers' stage, with a soft monthly budget of `chargers_pkr` rupees
    for the chargers category: a PO that goes over it also needs the owners."""
    return f"""
[groups]
approvers = "Approvers"
owners = "Owners"

[[rules]]
name = "default"
stages = [{{ group = "approvers" }}]

[budgets]
mode = "soft"
over_budget_stage = {{ group = "owners" }}
monthly_pkr = {{ chargers = {chargers_pkr:_} }}
"""


async def team(botapi, run, policy: str) -> dict[int, object]:
    """The policy in force; Ali and Chand are managers, Sana an owner, all reachable."""
    version = (await import_policy(run.store, policy, T0, "cli:test")).version
    assert version
    async with run.store.begin() as tx:
        for user_id, name in ((APPROVER_A, "Ali"), (APPROVER_B, "Sana"), (APPROVER_C, "Chand")):
            botapi.user(user_id, name, started=True)
            await tx.met(user_id, name, T0, started=True)
    async with run.store.begin() as tx:
        await tx.grant(APPROVER_C, Role.APPROVER, "test", T0)
    for user_id, group in ((APPROVER_A, "managers"), (APPROVER_C, "managers"),
                           (APPROVER_B, "owners")):  # fmt: skip
        await people.set_groups(run.store, user_id, [group], Stamp("test", T0), DEFAULT)
    return {"version": version}


async def cards(botapi, run, *user_ids: int) -> dict[int, object]:
    """Deliver what is owed (the pass, or a tap's own delivery); each of `user_ids` now holds
    a card."""
    await deliveries_done(run)
    await NoticeRunner(run.store, run.app.bot, run.settings).run_once()
    got = {}
    for user_id in user_ids:
        got[user_id] = await botapi.user(user_id).next_message()
        assert "approval needed" in got[user_id].text
    return got

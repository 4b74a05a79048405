"""Use cases of the approval policy: put a checked file in force, and say which is in force."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import datetime

from core.approval.policies import Policy, content_hash
from core.approval.policy_file import parse_policy
from core.approval.shortfalls import ThinStage, thin_stages
from core.drafting.terms import version_id
from core.jobs.notices import policy_alert
from core.jobs.transitions import retry_on_stale
from core.ports import Offload, ReadTx, Store, run_inline
from core.problems import Problem
from core.versions import FileKind, keep_version


@dataclass(frozen=True)
class PolicyImport:
    """What an import did: the version in force, whether it is new, its groups nobody can
    approve for (by name) and its stages asking for more approvals than their group has
    members; or the problems."""

    problems: tuple[Problem, ...] = ()
    version: str = ""
    created: bool = False
    unreachable: tuple[str, ...] = ()
    thin: tuple[ThinStage, ...] = ()


def check_policy(text: str) -> tuple[Policy | None, tuple[Problem, ...]]:
    """`manzoori policy check`: the policy, or every problem with its line, in line order."""
    policy, problems = parse_policy(text)
    return policy, tuple(problems)  # parse_policy sorts them by line


async def import_policy(
    store: Store, text: str, now: datetime, actor: str, *, offload: Offload = run_inline
) -> PolicyImport:
    """Check a policy file (through `offload`: a large one is CPU work) and put it in force as
    a new version, unless the policy in force says the same (layout and comments aside).
    Stored as written, with who and when; if a group it needs has nobody the bot can write
    to, the admins are owed an alert in the same transaction (core.jobs.notices.policy_alert)."""
    policy, problems = await offload(functools.partial(check_policy, text))
    if policy is None:
        return PolicyImport(problems=problems)
    return await _store(store, text, policy, now, actor)


async def staffing(store: Store, policy: Policy) -> PolicyImport:
    """`manzoori policy check`: what an import of `policy` would warn of, storing nothing: its
    groups nobody can approve for, and its stages asking for more approvals than their group
    has members now (core.approval.shortfalls.thin_stages)."""
    async with store.reading() as tx:
        missing = tuple(await unreachable_groups(tx, policy))
        return PolicyImport(unreachable=missing, thin=await _thin(tx, policy))


async def _thin(tx: ReadTx, policy: Policy) -> tuple[ThinStage, ...]:
    return thin_stages(policy, await tx.group_members(set(policy.groups)))


async def unreachable_groups(tx: ReadTx, policy: Policy) -> list[str]:
    """The policy's groups that a rule, the drift or the budget stage needs and that have no
    member the bot can write to (an approver who pressed Start and has not blocked it):
    requests needing them would wait for nobody."""
    needed: list[str] = []
    stages = [s for rule in policy.rules for s in rule.stages]
    if policy.drift is not None:
        stages.append(policy.drift.add_stage)
    if policy.budgets is not None and policy.budgets.over_budget_stage is not None:
        stages.append(policy.budgets.over_budget_stage)
    for stage in stages:
        if stage.group not in needed:
            needed.append(stage.group)
    members = await tx.group_members(needed)
    missing = []
    for group in needed:
        users = [await tx.telegram_user(p) for p in members[group]]
        if not any(u is not None and u.reachable for u in users):
            missing.append(group)
    return missing


@retry_on_stale
async def _store(
    store: Store, text: str, policy: Policy, now: datetime, actor: str
) -> PolicyImport:
    sha = content_hash(policy)
    async with store.begin() as tx:
        kept = await keep_version(tx, FileKind.POLICY, text, sha, version_id(sha, now), now, actor)
        missing = tuple(await unreachable_groups(tx, policy))
        if missing and kept.created:  # delivered by the bot's notice runner, whoever imported it
            await tx.insert_notice(policy_alert(kept.version, now))
        thin = await _thin(tx, policy)
        return PolicyImport(
            version=kept.version, created=kept.created, unreachable=missing, thin=thin
        )

"""Use cases of the approval policy: put a checked file in force, and say which is in force."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from core.policies import Policy, content_hash
from core.policy_file import parse_policy
from core.ports import ReadTx, Store
from core.tables import summarise
from core.terms import version_id
from core.workflow import retry_on_stale


@dataclass(frozen=True)
class PolicyImport:
    """What an import did: the version in force, whether it is new, or the problems."""

    problems: tuple[str, ...] = ()
    version: str = ""
    created: bool = False


def check_policy(text: str) -> tuple[Policy | None, tuple[str, ...]]:
    """`manzoori policy check`: the policy, or every problem with its line, in line order."""
    policy, problems = parse_policy(text)
    return policy, tuple(summarise(problems))


async def import_policy(store: Store, text: str, now: datetime, actor: str) -> PolicyImport:
    """Check a policy file and put it in force as a new version, unless the policy in force
    says the same (layout and comments aside). Stored as written, with who and when."""
    policy, problems = check_policy(text)
    if policy is None:
        return PolicyImport(problems=problems)
    return await _store(store, text, content_hash(policy), now, actor)


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
async def _store(store: Store, text: str, sha: str, now: datetime, actor: str) -> PolicyImport:
    async with store.begin() as tx:
        current = await tx.policy_version(for_update=True)
        if current is not None and (await tx.policy_record(current) or {}).get("sha256") == sha:
            return PolicyImport(version=current, created=False)
        version = version_id(sha, now)
        if await tx.policy_record(version) is not None:  # in force earlier within this second
            await tx.set_current_policy(version, now)
        else:
            await tx.insert_policy(version, sha, text, now, actor)
        return PolicyImport(version=version, created=True)

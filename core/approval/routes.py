"""The way a draft must go: the rule of the policy that applies to it, then the stages a drift
or an over-budget month adds (Route). A request keeps its route until its next draft, which
is routed afresh on the policy then in force."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from core.approval.policies import Drift, Policy, Stage
from core.drafting.drafts import Draft, Flag
from core.drafting.flags import FlagCode


class StageReason(StrEnum):
    """Why a stage is on a request's route."""

    RULE = "rule"  # one of the rule's own stages
    DRIFT = "drift"  # a line priced above the drift tolerance (Policy.drift)
    BUDGET = "budget"  # the PO takes a category over its month (Policy.budgets, soft mode)


@dataclass(frozen=True)
class Route:
    """The way one draft of a request must go: the policy version and rule it follows, and
    its stages in order (the rule's, then those a drift or an over-budget month added). The
    request keeps it until its next draft, which is routed afresh on the policy then in
    force."""

    policy_version: str
    rule: str
    stages: tuple[Stage, ...]
    reasons: tuple[StageReason, ...]  # one per stage

    def plain(self) -> dict[str, Any]:
        """As JSON for the job's row."""
        return {
            "policy_version": self.policy_version,
            "rule": self.rule,
            "stages": [
                [s.group, s.approvals, r.value]
                for s, r in zip(self.stages, self.reasons, strict=True)
            ],
        }

    @classmethod
    def from_plain(cls, data: Mapping[str, Any]) -> Route:
        """Back from plain()."""
        stages = [(Stage(g, int(n)), StageReason(r)) for g, n, r in data["stages"]]
        return cls(
            str(data["policy_version"]),
            str(data["rule"]),
            tuple(s for s, _ in stages),
            tuple(r for _, r in stages),
        )

    def basis(self, index: int) -> str:
        """What a decision in stage `index` satisfies, in words for the audit trail."""
        stage = self.stages[index]
        version = self.policy_version or "default"
        why = "" if self.reasons[index] is StageReason.RULE else f", {self.reasons[index]}"
        return (
            f"policy {version}, rule {self.rule}, stage {index + 1} of {len(self.stages)}: "
            f"{stage.approvals} of {stage.group}{why}"
        )


def drifts(flags: Iterable[Flag], drift: Drift | None) -> tuple[Flag, ...]:
    """The PRICE_CHANGED flags of a draft (the last sent PO's price, the price now) whose line
    is priced more than the drift tolerance above the last sent PO's."""
    if drift is None:
        return ()
    return tuple(
        flag
        for flag in flags
        if flag.code == FlagCode.PRICE_CHANGED
        and (flag.amounts[1] - flag.amounts[0]) * 100 > drift.percent * flag.amounts[0]
    )


def drifted(flags: Iterable[Flag], drift: Drift | None) -> bool:
    """Whether a line of a draft is priced more than the drift tolerance above the last sent
    PO's (drifts)."""
    return bool(drifts(flags, drift))


def route_draft(policy: Policy, draft: Draft, *, over_budget: bool = False) -> Route:
    """The route a draft takes under `policy`: route_for its total, supplier and lines'
    categories, with the drift stage if a line drifted and the budget stage if it goes over
    a category's month (core.approval.budgets.over_budget)."""
    return route_for(
        policy,
        draft.total_paisa,
        draft.supplier_id,
        {line.category for line in draft.lines if line.category},
        drifted=drifted(draft.flags, policy.drift),
        over_budget=over_budget,
    )


def route_for(
    policy: Policy,
    total_paisa: int,
    supplier_id: str,
    categories: Iterable[str] = (),
    *,
    drifted: bool = False,
    over_budget: bool = False,
) -> Route:
    """The route a draft of this total, supplier and line categories takes: its rule's
    stages, then the drift stage if a line drifted, then the budget stage if it goes over a
    category's month (soft mode; hard mode refuses such a sheet before it is drafted)."""
    rule = policy.rule_for(total_paisa, supplier_id, categories)
    stages = list(rule.stages)
    reasons = [StageReason.RULE] * len(stages)
    if drifted and policy.drift is not None:
        stages.append(policy.drift.add_stage)
        reasons.append(StageReason.DRIFT)
    if over_budget and policy.budgets is not None and policy.budgets.over_budget_stage:
        stages.append(policy.budgets.over_budget_stage)
        reasons.append(StageReason.BUDGET)
    return Route(policy.version, rule.name, tuple(stages), tuple(reasons))

"""The approval policy in words, in the reader's language: /policy, the reply to a policy
file, and `manzoori policy show` / `check` (in English). Core holds the policy as data
(core.approval.policies, core.approval.ladder); this is the one place that says it."""

from __future__ import annotations

from bot.words.i18n import ENGLISH, Translator
from core.approval.ladder import Ladder, shown
from core.approval.policies import Condition, Policy, Stage
from core.drafting.money import format_pkr

_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")  # as the policy file writes them


def policy_lines(policy: Policy, *, tr: Translator = ENGLISH) -> list[str]:
    """The policy, one line each: version, groups, rules, drift, budgets, reminders, and how
    silent suppliers are chased."""
    version = policy.version or tr("none imported (the configured default)")
    groups = tr(", ").join(
        tr("{group} ({title})", group=name, title=title) for name, title in policy.groups.items()
    )
    lines = [tr("Version: {version}", version=version), tr("Groups: {groups}", groups=groups)]
    for number, rule in enumerate(policy.rules, start=1):
        stages = tr(" then ").join(_stage(s, policy, tr) for s in rule.stages)
        when = condition_text(rule.when, tr=tr)
        lines.append(tr("Rule {number}, {name}: {when}: {stages}", number=number, name=rule.name,
                        when=when, stages=stages))  # fmt: skip
    if policy.drift is not None:
        drift = policy.drift
        lines.append(
            tr(
                "Drift: a line more than {percent}% above the last sent PO adds {stage}",
                percent=drift.percent,
                stage=_stage(drift.add_stage, policy, tr),
            )
        )
    if policy.budgets is not None:
        lines.append(_budgets(policy, tr))
    if policy.reminders is not None:
        lines.append(tr("Reminders: {ladder}", ladder=ladder_text(policy.reminders, tr=tr)))
    if policy.suppliers is not None:
        lines.append(
            tr(
                "Suppliers: reminded after {remind}, the team told after {escalate} without an "
                "answer",
                remind=shown(policy.suppliers.remind_after),
                escalate=shown(policy.suppliers.escalate_after),
            )
        )
    return lines


def condition_text(when: Condition, *, tr: Translator = ENGLISH) -> str:
    """A rule's condition in words; "every request" for none."""
    parts = []
    if when.total_above_paisa is not None:
        parts.append(tr("total above {amount}", amount=format_pkr(when.total_above_paisa)))
    if when.total_at_most_paisa is not None:
        parts.append(tr("total at most {amount}", amount=format_pkr(when.total_at_most_paisa)))
    if when.suppliers:
        parts.append(tr("supplier {names}", names=tr(" or ").join(sorted(when.suppliers))))
    if when.categories:
        parts.append(tr("category {names}", names=tr(" or ").join(sorted(when.categories))))
    return tr(", ").join(parts) or tr("every request")


def ladder_text(ladder: Ladder, *, tr: Translator = ENGLISH) -> str:
    """The reminder ladder in words: its steps, then the working hours they keep to."""
    parts = [tr("remind after {after}", after=shown(ladder.remind_after))]
    if ladder.escalate_after is not None:
        after = shown(ladder.escalate_after)
        if ladder.escalate_to:
            parts.append(
                tr("escalate to the admins and {group} after {after}",
                   group=ladder.escalate_to, after=after)
            )  # fmt: skip
        else:
            parts.append(tr("escalate to the admins after {after}", after=after))
    if ladder.before_expiry is not None:
        parts.append(tr("warn {before} before expiry", before=shown(ladder.before_expiry)))
    if ladder.digest_at is not None:
        parts.append(tr("digest at {at}", at=f"{ladder.digest_at:%H:%M}"))
    hours = ladder.working_hours
    days = ",".join(_DAYS[d] for d in sorted(hours.days))
    span = f"{hours.start // 60:02}:{hours.start % 60:02}-{hours.end // 60:02}:{hours.end % 60:02}"
    steps = tr(", ").join(parts)
    return tr("{steps}; working hours {days} {span}", steps=steps, days=days, span=span)


def _budgets(policy: Policy, tr: Translator) -> str:
    """The budgets line: the mode, each category's month, and what going over does."""
    budgets = policy.budgets
    assert budgets is not None
    months = tr(", ").join(
        tr("{category} {amount}", category=c, amount=format_pkr(p))
        for c, p in sorted(budgets.monthly_paisa.items())
    )
    mode = budgets.mode.value
    if budgets.over_budget_stage:
        stage = _stage(budgets.over_budget_stage, policy, tr)
        return tr(
            "Budgets ({mode}), a month: {months}; over budget adds {stage} and a reason",
            mode=mode,
            months=months,
            stage=stage,
        )
    return tr("Budgets ({mode}), a month: {months}; a sheet over budget is refused",
              mode=mode, months=months)  # fmt: skip


def _stage(stage: Stage, policy: Policy, tr: Translator) -> str:
    """ "2 approvals of Owners"."""
    return tr.plural(
        "{count} approval of {group}",
        "{count} approvals of {group}",
        stage.approvals,
        group=policy.title(stage.group),
    )

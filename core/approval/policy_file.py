"""The approval policy file: TOML, checked whole, every problem named by its line.

`parse_policy(text)` gives a core.approval.policies.Policy only if there is no problem at all. Three
kinds of problem, each with the line a person fixes it on:
- TOML syntax (tomllib's own message and line); arrays, tables and dotted keys nested deeper
  than core.nesting allows (found before tomllib, which would recurse out of its stack or
  take minutes); a whole number too long for Python to read;
- the schema, checked with pydantic: an unknown key, a missing one, a value of the wrong kind
  or out of range;
- cross-references: a stage naming a group the file does not define, two rules of one name,
  a rule that can never apply, no rule for every request, budget stages that contradict the
  budget mode, a category no terms file could name (core.drafting.terms.is_category), a [reminders]
  escalate_to naming no group; a duration or working hours that do not read are schema
  problems, in core.approval.ladder's words.

The first two are core.toml_files', which reads the file and places each problem on its line.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
)

from core.approval.ladder import Chase, Ladder, WorkingHours, parse_clock, parse_duration
from core.approval.policies import (
    GROUP_NAME,
    BudgetMode,
    Budgets,
    Condition,
    Drift,
    Policy,
    Rule,
    Stage,
)
from core.drafting.terms import is_category, match_key
from core.problems import Problem, ProblemCode, Value
from core.toml_files import LINE, Path, checked_file, line_of, shown, table

GroupName = Annotated[str, StringConstraints(pattern=f"^{GROUP_NAME}$")]

Title = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=64)]

Name = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=64)]

Category = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=64)]

# Whole rupees; Rs 10 billion is far above any PO and keeps paisa inside 64 bits.
Rupees = Annotated[int, Field(ge=0, le=10_000_000_000)]

MAX_APPROVALS = 20


class _Model(BaseModel):
    # Unknown keys are errors; a string is never read as a number, nor a number as a string.
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class _Stage(_Model):
    group: str
    approvals: Annotated[int, Field(ge=1, le=MAX_APPROVALS)] = 1


class _When(_Model):
    total_above_pkr: Rupees | None = None
    total_at_most_pkr: Rupees | None = None
    suppliers: Annotated[list[Name], Field(min_length=1)] | None = None
    categories: Annotated[list[Category], Field(min_length=1)] | None = None


class _Rule(_Model):
    name: Name
    when: _When = _When()
    stages: Annotated[list[_Stage], Field(min_length=1, max_length=10)]


class _Drift(_Model):
    percent: Annotated[float, Field(gt=0, le=1000)]  # strict: an int is a float too
    add_stage: _Stage


class _Budgets(_Model):
    mode: Literal["soft", "hard"]
    over_budget_stage: _Stage | None = None
    monthly_pkr: Annotated[dict[Category, Rupees], Field(min_length=1)]


def _checked(parse: Any) -> AfterValidator:
    """Text that `parse` must read (core.approval.ladder), kept as written."""

    def check(text: str) -> str:
        parse(text)
        return text

    return AfterValidator(check)


Duration = Annotated[str, _checked(parse_duration)]


class _Reminders(_Model):
    working_hours: Annotated[str, _checked(WorkingHours.parse)]
    remind_after: Duration
    escalate_after: Duration | None = None
    escalate_to: GroupName | None = None
    before_expiry: Duration | None = None
    digest_at: Annotated[str, _checked(parse_clock)] | None = None


class _Suppliers(_Model):
    remind_after: Duration
    escalate_after: Duration


class _File(_Model):
    groups: Annotated[dict[GroupName, Title], Field(min_length=1)]
    rules: Annotated[list[_Rule], Field(min_length=1, max_length=100)]
    drift: _Drift | None = None
    budgets: _Budgets | None = None
    reminders: _Reminders | None = None
    suppliers: _Suppliers | None = None


def parse_policy(text: str) -> tuple[Policy | None, list[Problem]]:
    """Check a whole policy file; the policy only if there is no problem at all. Schema and
    cross-reference problems are reported together, in line order."""
    checked = checked_file(text, _File, _cross_checks)
    return (None, checked) if isinstance(checked, list) else (_policy(checked), [])


def _cross_checks(data: dict[str, Any], lines: Mapping[Path, int]) -> list[Problem]:
    """What the schema cannot see: names that must match, rules that cannot apply, budget
    stages against the mode. Read off the raw document, so that they are reported beside the
    schema's problems; a value of the wrong kind is left to the schema."""
    problems: list[Problem] = []

    def bad(path: Path, code: ProblemCode, values: Mapping[str, Value] | None = None) -> None:
        problems.append(Problem(line_of(lines, path), shown(path), code, values or {}, LINE))

    groups = table(data.get("groups"))

    def stage(path: Path, raw: object) -> str | None:
        group = table(raw).get("group")
        if not isinstance(group, str):
            return None
        if groups and group not in groups:
            undefined = {"group": repr(group), "groups": ", ".join(groups)}
            bad((*path, "group"), ProblemCode.UNDEFINED_GROUP, undefined)
        return group

    rules = data.get("rules")
    rules = rules if isinstance(rules, list) else []
    seen: dict[str, int] = {}
    catch_all: int | None = None
    for index, raw in enumerate(rules):
        at: Path = ("rules", index)
        rule = table(raw)
        stages = rule.get("stages")
        named = [
            stage((*at, "stages", n), s)
            for n, s in enumerate(stages if isinstance(stages, list) else [])
        ]
        named = [g for g in named if g is not None]
        if len(set(named)) != len(named):
            bad((*at, "stages"), ProblemCode.GROUP_TWICE)
        name = rule.get("name")
        if isinstance(name, str):
            if name.strip() in seen:
                twice: dict[str, Value] = {"name": repr(name), "rule": seen[name.strip()] + 1}
                bad((*at, "name"), ProblemCode.RULE_NAME_TWICE, twice)
            seen.setdefault(name.strip(), index)
        when = table(rule.get("when"))
        above, most = when.get("total_above_pkr"), when.get("total_at_most_pkr")
        if isinstance(above, int) and isinstance(most, int) and most <= above:
            bad((*at, "when"), ProblemCode.NO_TOTAL, {"above": above, "most": most})
        if catch_all is not None:
            first = table(rules[catch_all]).get("name", "")
            bad(at, ProblemCode.NEVER_APPLIES, {"rule": catch_all + 1, "name": repr(first)})
        elif not when:
            catch_all = index
    if rules and catch_all is None:
        bad(("rules", len(rules) - 1), ProblemCode.NO_CATCH_ALL)
    drift = table(data.get("drift"))
    if "add_stage" in drift:
        stage(("drift", "add_stage"), drift["add_stage"])
    budgets = table(data.get("budgets"))
    mode, over = budgets.get("mode"), ("budgets", "over_budget_stage")
    if mode == "hard" and "over_budget_stage" in budgets:
        bad(over, ProblemCode.HARD_WITH_STAGE)
    elif mode == "soft" and "over_budget_stage" not in budgets:
        bad(("budgets", "mode"), ProblemCode.SOFT_WITHOUT_STAGE)
    elif "over_budget_stage" in budgets:
        stage(over, budgets["over_budget_stage"])
    escalate_to = table(data.get("reminders")).get("escalate_to")
    if isinstance(escalate_to, str) and groups and escalate_to not in groups:
        undefined = {"group": repr(escalate_to), "groups": ", ".join(groups)}
        bad(("reminders", "escalate_to"), ProblemCode.UNDEFINED_GROUP, undefined)
    chase = table(data.get("suppliers"))
    try:
        remind, escalate = (
            parse_duration(str(chase[k])) for k in ("remind_after", "escalate_after")
        )
    except (KeyError, ValueError):
        pass  # missing or unreadable: the schema says so
    else:
        if escalate <= remind:
            bad(("suppliers", "escalate_after"), ProblemCode.ESCALATE_BEFORE_REMIND)
    months = table(budgets.get("monthly_pkr"))
    categories = [c.strip().lower() for c in months]
    if len(set(categories)) != len(categories):
        bad(("budgets", "monthly_pkr"), ProblemCode.CATEGORY_TWICE)
    written: list[tuple[Path, object]] = [(("budgets", "monthly_pkr", c), c) for c in months]
    for index, raw in enumerate(rules):
        listed = table(table(raw).get("when")).get("categories")
        for n, c in enumerate(listed if isinstance(listed, list) else []):
            written.append((("rules", index, "when", "categories", n), c))
    for path, category in written:
        if isinstance(category, str) and category.strip() and not is_category(category.strip()):
            bad(path, ProblemCode.NOT_A_CATEGORY, {"value": repr(category.strip())})
    return problems


def _policy(parsed: _File) -> Policy:
    def stage(s: _Stage) -> Stage:
        return Stage(s.group, s.approvals)

    def condition(w: _When) -> Condition:
        return Condition(
            None if w.total_above_pkr is None else w.total_above_pkr * 100,
            None if w.total_at_most_pkr is None else w.total_at_most_pkr * 100,
            frozenset(match_key(s) for s in w.suppliers or ()),
            frozenset(c.lower() for c in w.categories or ()),
        )

    drift = parsed.drift
    budgets = parsed.budgets
    return Policy(
        reminders=None if parsed.reminders is None else _ladder(parsed.reminders),
        suppliers=None
        if parsed.suppliers is None
        else Chase(
            parse_duration(parsed.suppliers.remind_after),
            parse_duration(parsed.suppliers.escalate_after),
        ),
        groups=dict(parsed.groups),
        rules=tuple(
            Rule(r.name, tuple(stage(s) for s in r.stages), condition(r.when)) for r in parsed.rules
        ),
        drift=None if drift is None else Drift(_percent(drift.percent), stage(drift.add_stage)),
        budgets=None
        if budgets is None
        else Budgets(
            BudgetMode(budgets.mode),
            {c.lower(): pkr * 100 for c, pkr in budgets.monthly_pkr.items()},
            None if budgets.over_budget_stage is None else stage(budgets.over_budget_stage),
        ),
    )


def _ladder(r: _Reminders) -> Ladder:
    def duration(text: str | None) -> timedelta | None:
        return None if text is None else parse_duration(text)

    return Ladder(
        working_hours=WorkingHours.parse(r.working_hours),
        remind_after=parse_duration(r.remind_after),
        escalate_after=duration(r.escalate_after),
        escalate_to=r.escalate_to,
        before_expiry=duration(r.before_expiry),
        digest_at=None if r.digest_at is None else parse_clock(r.digest_at),
    )


def _percent(value: float) -> Decimal:
    """3 -> Decimal("3"), 4.2 -> Decimal("4.2"): as the file wrote it, without float noise."""
    return Decimal(int(value)) if value.is_integer() else Decimal(repr(value))

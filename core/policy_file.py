"""The approval policy file: TOML, checked whole, every problem named by its line.

`parse_policy(text)` gives a core.policy.Policy only if there is no problem at all. Three
kinds of problem, each with the line a person fixes it on:
- TOML syntax (tomllib's own message and line); arrays, tables and dotted keys nested deeper
  than core.nesting allows (found before tomllib, which would recurse out of its stack or
  take minutes); a whole number too long for Python to read;
- the schema, checked with pydantic: an unknown key, a missing one, a value of the wrong kind
  or out of range;
- cross-references: a stage naming a group the file does not define, two rules of one name,
  a rule that can never apply, no rule for every request, budget stages that contradict the
  budget mode, a category no terms file could name (core.terms.is_category), a [reminders]
  escalate_to naming no group; a duration or working hours that do not read are schema
  problems, in core.ladder's words.

tomllib gives no positions, so `key_lines` reads them off the text: the line each table,
key and array element starts on, by the path pydantic reports an error at.
"""

from __future__ import annotations

import re
import tomllib
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
    ValidationError,
)

from core.ladder import Ladder, Unreadable, WorkingHours, parse_clock, parse_duration
from core.nesting import MAX_DEPTH, Syntax, outside_strings, too_deep
from core.policies import (
    GROUP_NAME,
    BudgetMode,
    Budgets,
    Condition,
    Drift,
    Policy,
    Rule,
    Stage,
)
from core.problems import Place, Problem, ProblemCode, Value
from core.terms import is_category, match_key

_LINE = Place.LINE
Path = tuple[str | int, ...]

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
    """Text that `parse` must read (core.ladder), kept as written."""

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


class _File(_Model):
    groups: Annotated[dict[GroupName, Title], Field(min_length=1)]
    rules: Annotated[list[_Rule], Field(min_length=1, max_length=100)]
    drift: _Drift | None = None
    budgets: _Budgets | None = None
    reminders: _Reminders | None = None


def parse_policy(text: str) -> tuple[Policy | None, list[Problem]]:
    """Check a whole policy file; the policy only if there is no problem at all. Schema and
    cross-reference problems are reported together, in line order."""
    deep = too_deep(text, Syntax.TOML)
    if deep is not None:  # before tomllib, whose recursion a few KB of brackets exhaust
        return None, [Problem(deep, None, ProblemCode.TOO_DEEP, {"limit": MAX_DEPTH}, _LINE)]
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        return None, [_syntax(error)]
    except ValueError as error:  # int()'s own, which tomllib lets through: over 4,300 digits
        return None, [_too_long(text, error)]
    lines = key_lines(text)
    problems = _cross_checks(data, lines)
    try:
        parsed = _File.model_validate(data)
    except ValidationError as error:
        problems += [_schema(e, lines) for e in error.errors()]
    if problems:
        return None, sorted(problems, key=lambda p: p.row)
    return _policy(parsed), []


_AT = re.compile(r"\s*\(at line (\d+), column \d+\)$")
_END = re.compile(r"\s*\(at end of document\)$")


def _syntax(error: tomllib.TOMLDecodeError) -> Problem:
    message = str(error)  # tomllib's own words: what it found, and where
    found = _AT.search(message)
    if found:
        detail = {"detail": message[: found.start()]}
        return Problem(int(found[1]), None, ProblemCode.NOT_TOML, detail, _LINE)
    end = _END.search(message)
    line = 0 if end is None else 1  # "at end of document": the message says where
    return Problem(line, None, ProblemCode.NOT_TOML, {"detail": message}, _LINE)


# A decimal whole number as TOML writes it, not a float's fraction or exponent.
_WHOLE = re.compile(r"(?<![\w.+-])[+-]?\d(?:_?\d)*")


def _too_long(text: str, error: ValueError) -> Problem:
    """The whole number too long for int() to read, placed on its line: the longest written
    outside strings and comments (tomllib's error says neither which nor where)."""
    code = outside_strings(text, Syntax.TOML)
    longest = max(_WHOLE.finditer(code), key=lambda n: len(n[0].replace("_", "")), default=None)
    if longest is None:  # not a number's after all: the error's own words, about the file
        return Problem(0, None, ProblemCode.NOT_TOML, {"detail": str(error)}, _LINE)
    digits = len(longest[0].replace("_", "").lstrip("+-"))
    line = code.count("\n", 0, longest.start()) + 1
    return Problem(line, None, ProblemCode.NUMBER_TOO_LONG, {"digits": digits}, _LINE)


def _schema(error: Mapping[str, Any], lines: Mapping[Path, int]) -> Problem:
    loc: Path = tuple(error["loc"])
    loc = tuple(p for p in loc if not (isinstance(p, str) and _UNION_MEMBER.match(p)))
    kind = error["type"]
    if kind in ("extra_forbidden", "missing"):
        parent, key = loc[:-1], {"key": repr(loc[-1])}
        code = ProblemCode.UNKNOWN_KEY if kind == "extra_forbidden" else ProblemCode.MISSING_KEY
        at = line_of(lines, loc if kind == "extra_forbidden" else parent)
        return Problem(at, shown(parent) or None, code, key, _LINE)
    code, values = _message(error)
    return Problem(line_of(lines, loc), shown(loc) or None, code, values, _LINE)


_UNION_MEMBER = re.compile(r"^\[key\]$")  # pydantic's mark of a dict key's own error


# pydantic's error types that need no value, and the problem each is.
_KINDS = {
    "int_type": ProblemCode.NOT_WHOLE_NUMBER,
    "int_from_float": ProblemCode.NOT_WHOLE_NUMBER,
    "float_type": ProblemCode.NOT_A_NUMBER,
    "string_type": ProblemCode.NOT_TEXT,
    "list_type": ProblemCode.NOT_A_LIST,
    "dict_type": ProblemCode.NOT_A_TABLE,
    "model_type": ProblemCode.NOT_A_TABLE,
    "model_attributes_type": ProblemCode.NOT_A_TABLE,
    "too_short": ProblemCode.NOT_EMPTY,
    "string_too_short": ProblemCode.NOT_EMPTY,
    "string_pattern_mismatch": ProblemCode.NOT_A_GROUP_NAME,
}


def _message(error: Mapping[str, Any]) -> tuple[ProblemCode, dict[str, Value]]:
    """A schema error as a problem code and its values."""
    kind, ctx = error["type"], error.get("ctx", {})
    if kind in _KINDS:
        return _KINDS[kind], {}
    match kind:
        case "greater_than_equal":
            return ProblemCode.AT_LEAST, {"bound": _number(ctx["ge"])}
        case "greater_than":
            return ProblemCode.MORE_THAN, {"bound": _number(ctx["gt"])}
        case "less_than_equal":
            return ProblemCode.AT_MOST, {"bound": _number(ctx["le"])}
        case "too_long":
            return ProblemCode.TOO_MANY_ENTRIES, {"limit": int(ctx["max_length"])}
        case "string_too_long":
            return ProblemCode.TEXT_TOO_LONG, {"limit": int(ctx["max_length"])}
        case "literal_error":
            return ProblemCode.ONE_OF, {"choices": str(ctx["expected"])}
        case "value_error" if isinstance(ctx.get("error"), Unreadable):  # core.ladder's
            return ctx["error"].code, dict(ctx["error"].values)
    return ProblemCode.UNREADABLE_VALUE, {"detail": str(error["msg"]).lower()}


def _number(value: float) -> str:
    """A bound as a person writes it: 0, 1,000, 2.5."""
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,}"


def shown(path: Path) -> str:
    """A path as a person reads it: rules[2].stages[1].approvals (arrays counted from 1)."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part + 1}]"
        else:
            text += f".{part}" if text else str(part)
    return text


def line_of(lines: Mapping[Path, int], path: Path) -> int:
    """The line of the deepest part of `path` the file wrote; 0 if none (the whole file)."""
    for end in range(len(path), 0, -1):
        if path[:end] in lines:
            return lines[path[:end]]
    return 0


def _cross_checks(data: dict[str, Any], lines: Mapping[Path, int]) -> list[Problem]:
    """What the schema cannot see: names that must match, rules that cannot apply, budget
    stages against the mode. Read off the raw document, so that they are reported beside the
    schema's problems; a value of the wrong kind is left to the schema."""
    problems: list[Problem] = []

    def bad(path: Path, code: ProblemCode, values: Mapping[str, Value] | None = None) -> None:
        problems.append(Problem(line_of(lines, path), shown(path), code, values or {}, _LINE))

    groups = _table(data.get("groups"))

    def stage(path: Path, raw: object) -> str | None:
        group = _table(raw).get("group")
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
        rule = _table(raw)
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
        when = _table(rule.get("when"))
        above, most = when.get("total_above_pkr"), when.get("total_at_most_pkr")
        if isinstance(above, int) and isinstance(most, int) and most <= above:
            bad((*at, "when"), ProblemCode.NO_TOTAL, {"above": above, "most": most})
        if catch_all is not None:
            first = _table(rules[catch_all]).get("name", "")
            bad(at, ProblemCode.NEVER_APPLIES, {"rule": catch_all + 1, "name": repr(first)})
        elif not when:
            catch_all = index
    if rules and catch_all is None:
        bad(("rules", len(rules) - 1), ProblemCode.NO_CATCH_ALL)
    drift = _table(data.get("drift"))
    if "add_stage" in drift:
        stage(("drift", "add_stage"), drift["add_stage"])
    budgets = _table(data.get("budgets"))
    mode, over = budgets.get("mode"), ("budgets", "over_budget_stage")
    if mode == "hard" and "over_budget_stage" in budgets:
        bad(over, ProblemCode.HARD_WITH_STAGE)
    elif mode == "soft" and "over_budget_stage" not in budgets:
        bad(("budgets", "mode"), ProblemCode.SOFT_WITHOUT_STAGE)
    elif "over_budget_stage" in budgets:
        stage(over, budgets["over_budget_stage"])
    escalate_to = _table(data.get("reminders")).get("escalate_to")
    if isinstance(escalate_to, str) and groups and escalate_to not in groups:
        undefined = {"group": repr(escalate_to), "groups": ", ".join(groups)}
        bad(("reminders", "escalate_to"), ProblemCode.UNDEFINED_GROUP, undefined)
    months = _table(budgets.get("monthly_pkr"))
    categories = [c.strip().lower() for c in months]
    if len(set(categories)) != len(categories):
        bad(("budgets", "monthly_pkr"), ProblemCode.CATEGORY_TWICE)
    written: list[tuple[Path, object]] = [(("budgets", "monthly_pkr", c), c) for c in months]
    for index, raw in enumerate(rules):
        listed = _table(_table(raw).get("when")).get("categories")
        for n, c in enumerate(listed if isinstance(listed, list) else []):
            written.append((("rules", index, "when", "categories", n), c))
    for path, category in written:
        if isinstance(category, str) and category.strip() and not is_category(category.strip()):
            bad(path, ProblemCode.NOT_A_CATEGORY, {"value": repr(category.strip())})
    return problems


def _table(value: object) -> dict[str, Any]:
    """A TOML table, or {} for anything else (the schema reports what it is instead)."""
    return value if isinstance(value, dict) else {}


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


# --- where each key is written -------------------------------------------------------------

_BARE = re.compile(r"[A-Za-z0-9_-]+")


def key_lines(text: str) -> dict[Path, int]:
    """The line (from 1) on which each table, key and array element of a TOML document that
    tomllib accepted starts, by its path: ("rules", 1, "stages", 0, "group") for the group of
    the first stage of the second [[rules]] table."""
    return _Scanner(text).scan()


class _Scanner:
    """A reader of just enough TOML to place keys: tables, arrays of tables, dotted keys,
    inline tables, arrays, and the strings and comments that may hide brackets."""

    def __init__(self, text: str) -> None:
        self.text, self.pos, self.line = text, 0, 1
        self.lines: dict[Path, int] = {}
        self.tables: dict[Path, int] = {}  # array of tables -> elements so far

    def scan(self) -> dict[Path, int]:
        base: Path = ()
        while self._skip(newlines=True):
            if self._peek() == "[":
                base = self._header()
            else:
                self._pair(base)
        return self.lines

    def _peek(self, ahead: int = 0) -> str:
        at = self.pos + ahead
        return self.text[at] if at < len(self.text) else ""

    def _skip(self, *, newlines: bool) -> bool:
        """Past spaces, comments and (if allowed) line ends; False at the end of the text."""
        while self.pos < len(self.text):
            c = self.text[self.pos]
            if c in " \t\r":
                self.pos += 1
            elif c == "\n" and newlines:
                self.pos += 1
                self.line += 1
            elif c == "#":
                while self.pos < len(self.text) and self.text[self.pos] != "\n":
                    self.pos += 1
            else:
                return True
        return False

    def _header(self) -> Path:
        many = self._peek(1) == "["
        self.pos += 2 if many else 1
        path = self._key()
        self._skip(newlines=False)
        self.pos += 2 if many else 1
        if many:
            index = self.tables.get(path, 0)
            self.tables[path] = index + 1
            self.lines.setdefault(path, self.line)
            path = (*path, index)
        self.lines.setdefault(path, self.line)
        return path

    def _key(self) -> Path:
        """A dotted key."""
        parts: list[str | int] = []
        while True:
            self._skip(newlines=False)
            c = self._peek()
            if c in "\"'":
                start = self.pos
                self._string()
                parts.append(tomllib.loads(f"k = {self.text[start : self.pos]}")["k"])
            else:
                found = _BARE.match(self.text, self.pos)
                if found is None:
                    break
                parts.append(found[0])
                self.pos = found.end()
            self._skip(newlines=False)
            if self._peek() != ".":
                break
            self.pos += 1
        return tuple(parts)

    def _pair(self, base: Path) -> None:
        """key = value, recording the key (and each prefix of a dotted key) and the value's
        inner keys and elements."""
        line = self.line
        key = self._key()
        for end in range(1, len(key) + 1):
            self.lines.setdefault((*base, *key[:end]), line)
        self._skip(newlines=False)
        self.pos += 1  # "="
        self._value((*base, *key))

    def _value(self, path: Path) -> None:
        self._skip(newlines=True)
        c = self._peek()
        if c == "{":
            self.pos += 1
            while self._skip(newlines=True) and self._peek() != "}":
                if self._peek() == ",":
                    self.pos += 1
                    continue
                self._pair(path)
            self.pos += 1
        elif c == "[":
            self.pos += 1
            index = 0
            while self._skip(newlines=True) and self._peek() != "]":
                if self._peek() == ",":
                    self.pos += 1
                    continue
                self.lines.setdefault((*path, index), self.line)
                self._value((*path, index))
                index += 1
            self.pos += 1
        elif c in "\"'":
            self._string()
        else:  # a number, date, boolean: up to the next delimiter
            while self.pos < len(self.text) and self.text[self.pos] not in ",]}#\n":
                self.pos += 1

    def _string(self) -> None:
        quote = self._peek()
        triple = self.text.startswith(quote * 3, self.pos)
        end = quote * 3 if triple else quote
        self.pos += len(end)
        while self.pos < len(self.text):
            c = self.text[self.pos]
            if c == "\\" and quote == '"':
                self.pos += 2
                continue
            if c == "\n":
                self.line += 1
            if self.text.startswith(end, self.pos):
                self.pos += len(end)
                # A multi-line string may end with up to two more quotes of its own.
                while triple and self._peek() == quote:
                    self.pos += 1
                return
            self.pos += 1

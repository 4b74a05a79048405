"""The company file: TOML naming the buyer and its branches, checked whole, every problem named
by its line, as the approval policy file is (core.approval.policy_file).

`parse_company(text)` gives a core.company.company.Company only if there is no problem at all.
Three kinds of problem, each with the line a person fixes it on:
- TOML syntax, nesting too deep, a whole number too long to read (core.toml_files);
- the schema, checked with pydantic: an unknown key, a missing one, a value of the wrong kind or
  length, and an NTN, STRN or phone number that is not written as one (each its own problem,
  raised as a core.toml_files.ValueProblem);
- cross-references: a branch id that is not one (core.company.company.BRANCH_ID), two default
  branches, several branches and no default.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
)

from core.company.company import BRANCH_ID, Branch, Buyer, Company
from core.problems import Problem, ProblemCode, Value
from core.toml_files import LINE, Path, ValueProblem, checked_file, line_of, shown, table

# A company has a branch or a few; a hundred is a chain, and keeps /branch's list readable.
MAX_BRANCHES = 100

# The FBR's National Tax Number: 7 digits and a check digit, as 1234567-8.
_NTN = re.compile(r"[0-9]{7}-[0-9]")
# The Sales Tax Registration Number: 13 digits written 2-2-4-3-2, as 32-77-8761-234-56.
_STRN = re.compile(r"[0-9]{2}-[0-9]{2}-[0-9]{4}-[0-9]{3}-[0-9]{2}")
# A phone number as people write it: digits and + - ( ) and spaces, nothing else ([0-9], not
# \d, which takes any script's digits).
_PHONE = re.compile(r"[0-9 +()-]+")
# E.164 numbers are at most 15 digits; a Pakistani landline without its code is 7.
_PHONE_DIGITS = range(7, 16)
_BRANCH_ID = re.compile(BRANCH_ID)


def _text(most: int) -> StringConstraints:
    """Text of 1 to `most` characters, spaces around it dropped."""
    return StringConstraints(strip_whitespace=True, min_length=1, max_length=most)


def _written(matches: Callable[[str], object], code: ProblemCode, what: str) -> AfterValidator:
    """Text (spaces around it dropped) that `matches` accepts; else the problem `code`."""

    def check(text: str) -> str:
        text = text.strip()
        if not matches(text):
            raise ValueProblem(f"{text!r} is not {what}", code, {"value": repr(text)})
        return text

    return AfterValidator(check)


def _is_phone(text: str) -> bool:
    return _PHONE.fullmatch(text) is not None and sum(c.isdigit() for c in text) in _PHONE_DIGITS


Ntn = Annotated[str, _written(_NTN.fullmatch, ProblemCode.NOT_AN_NTN, "an NTN")]
Strn = Annotated[str, _written(_STRN.fullmatch, ProblemCode.NOT_AN_STRN, "an STRN")]
Phone = Annotated[str, _written(_is_phone, ProblemCode.NOT_A_PHONE, "a phone number")]


class _Model(BaseModel):
    # Unknown keys are errors; a string is never read as a number, nor a number as a string.
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class _Buyer(_Model):
    name: Annotated[str, _text(200)]
    address: Annotated[str, _text(400)]
    ntn: Ntn | None = None
    strn: Strn | None = None
    phone: Phone | None = None


class _Branch(_Model):
    name: Annotated[str, _text(100)]
    address: Annotated[str, _text(400)]
    default: bool = False


class _File(_Model):
    buyer: _Buyer
    # Keys are branch ids, checked in _cross_checks: the problem names the key it is about.
    branches: Annotated[dict[str, _Branch], Field(min_length=1, max_length=MAX_BRANCHES)]


def parse_company(text: str) -> tuple[Company | None, list[Problem]]:
    """Check a whole company file; the company only if there is no problem at all. Schema and
    cross-reference problems are reported together, in line order."""
    checked = checked_file(text, _File, _cross_checks)
    return (None, checked) if isinstance(checked, list) else (_company(checked), [])


def _cross_checks(data: dict[str, Any], lines: Mapping[Path, int]) -> list[Problem]:
    """What the schema cannot see: branch ids (keys, named beside their table), and which branch
    is the default. Read off the raw document, so that they are reported beside the schema's
    problems; a value of the wrong kind is left to the schema."""
    problems: list[Problem] = []
    branches = data.get("branches")
    if not isinstance(branches, dict) or not branches:
        return problems
    for branch_id in branches:
        if _BRANCH_ID.fullmatch(branch_id) is None:
            at = line_of(lines, ("branches", branch_id))
            values: dict[str, Value] = {"value": repr(branch_id)}
            problems.append(Problem(at, "branches", ProblemCode.NOT_A_BRANCH_ID, values, LINE))
    defaults = [b for b, raw in branches.items() if table(raw).get("default") is True]
    for branch_id in defaults[1:]:
        path: Path = ("branches", branch_id, "default")
        twice: dict[str, Value] = {"branch": repr(branch_id), "first": repr(defaults[0])}
        code = ProblemCode.DEFAULT_BRANCH_TWICE
        problems.append(Problem(line_of(lines, path), shown(path), code, twice, LINE))
    # A `default` that is not true or false is the schema's problem: no default is then unknown.
    unread = any(
        not isinstance(table(raw).get("default", False), bool) for raw in branches.values()
    )
    if len(branches) > 1 and not defaults and not unread:
        at = line_of(lines, ("branches",))  # [branches], or the first branch's own table
        problems.append(Problem(at, "branches", ProblemCode.NO_DEFAULT_BRANCH, {}, LINE))
    return problems


def _company(parsed: _File) -> Company:
    buyer = parsed.buyer
    branches = tuple(
        Branch(b, branch.name, branch.address) for b, branch in parsed.branches.items()
    )
    defaults = [b for b, branch in parsed.branches.items() if branch.default]
    return Company(
        buyer=Buyer(buyer.name, buyer.address, buyer.ntn, buyer.strn, buyer.phone),
        branches=branches,
        # The cross checks leave exactly one default, or one branch and none.
        default_branch=defaults[0] if defaults else branches[0].branch_id,
    )

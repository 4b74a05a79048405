"""A request typed in a message: each line a SKU and a quantity, read into RequestLines
(core.purchasing.requests), with every line that cannot be read named by its number.

The forms a line may take (docs/requester.md, "Typing a request"):

    CBL-USBC-1M 40            SKU, then quantity
    CBL-USBC-1M: 40 pcs       a colon, "=", "," or "-" between; pcs, pc, units, nos after
    CHG-65W-GAN x 10          x (or ×, or "qty") before the quantity
    40 CBL-USBC-1M            quantity first; "40 x CBL-USBC-1M" and "40 pcs CBL-…" too
    PB-20K 6 for Liberty      anything after is the line's note; "for <branch>" alone, where
                              <branch> is one of the company's branches (id or name), is
                              where that line is delivered instead

Digits may be Urdu or Arabic-Indic (۴۰); invisible marks pasted with the text (a right-to-left
mark, a zero-width space) are dropped; empty lines are skipped but lines keep their number.
A SKU holds a letter and a digit or one of - _ . / (so "ok 2" is no order line), unless it is
a SKU of the terms as it is. Nothing here looks anything up: the SKUs and branches come in as
arguments, and whether a SKU is offered is the intake's to say, as it is for a sheet.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace

from rapidfuzz import fuzz, process, utils

from core.drafting.tables import quote
from core.problems import Place, Problem, ProblemCode
from core.purchasing.requests import RequestLine, as_lines
from core.texts import INVISIBLE

# A phone's message is at most 4,096 characters; a pasted list longer than this is no request
# to read line by line, and the intake's own limits stay far away.
MAX_CHARS = 16_000
# Lines to order in one message: more than a chat summary can show, fewer than a sheet's limit
# (a longer list is a sheet's job).
MAX_LINES = 200
# A line longer than this is not read (its note would be over the intake's 300 characters).
MAX_LINE_CHARS = 400
# Quantity digits read at most: the intake refuses over 1,000,000; more digits are unreadable.
MAX_DIGITS = 9
# Suggestions offered for an unknown or unreadable SKU, and how alike they must be (0-100).
SUGGESTIONS = 3
SUGGESTION_CUTOFF = 60.0

_DIGITS = str.maketrans("۰۱۲۳۴۵۶۷۸۹٠١٢٣٤٥٦٧٨٩", "01234567890123456789")
_INVISIBLE = re.compile(f"[{''.join(sorted(INVISIBLE))}]")
_SKU = r"[A-Za-z0-9][A-Za-z0-9._/-]*"
_QTY = rf"\d{{1,3}}(?:,\d{{3}})+|\d{{1,{MAX_DIGITS}}}"
_UNIT = r"(?:\s*(?:pcs|pc|pieces|piece|units|unit|nos|no|ea)\b\.?)?"
_BY = r"(?:[x×*]|qty)"
_SKU_FIRST = re.compile(
    rf"^(?P<sku>{_SKU})(?:\s*[:=,]\s*|\s*-\s+|\s+)(?:{_BY}\s*)?(?P<qty>{_QTY}){_UNIT}"
    rf"(?P<rest>(?:[\s,;:(–—-].*)?)$",
    re.IGNORECASE,
)
_QTY_FIRST = re.compile(
    rf"^(?P<qty>{_QTY}){_UNIT}\s*(?:{_BY}|of)?\s+(?P<sku>{_SKU})(?P<rest>(?:[\s,;:(–—-].*)?)$",
    re.IGNORECASE,
)
_CODE_LIKE = re.compile(r"(?=.*[A-Za-z])(?=.*[0-9._/-])")
_BULLET = re.compile(r"^(?:[-•*·]\s+)")
_FOR = re.compile(r"^for\s+(?P<branch>.+)$", re.IGNORECASE)


@dataclass(frozen=True)
class Typed:
    """What a message said: its order lines and the message line each is on, or its problems
    (each at its message line). `looks_like_request`: at least one line reads as an order line,
    so the message is answered as a request; otherwise it is ordinary text."""

    lines: tuple[RequestLine, ...] = ()
    numbers: tuple[int, ...] = ()  # the message line of each of `lines`, from 1
    problems: tuple[Problem, ...] = ()
    looks_like_request: bool = False


@dataclass(frozen=True)
class Known:
    """What the terms and the company file offer to read a message by: the SKUs of the terms
    in force, and the branches by id, each with its name (matched without regard to case)."""

    skus: Sequence[str] = ()
    branches: Mapping[str, str] = field(default_factory=dict)


def normalise(text: str) -> str:
    """A line as it is read: invisible marks dropped, digits in ASCII, spaces collapsed."""
    return " ".join(_INVISIBLE.sub("", text).translate(_DIGITS).split())


def read_message(text: str, known: Known = Known()) -> Typed:
    """Every line of a message as an order line, or every line that is not one, by number."""
    skus = {sku.casefold() for sku in known.skus}
    branches = _branch_names(known.branches)
    numbered = [(n, normalise(raw)) for n, raw in enumerate(text[:MAX_CHARS].splitlines(), 1)]
    numbered = [(n, line) for n, line in numbered if line]
    if len(text) > MAX_CHARS or len(numbered) > MAX_LINES:
        looks = any(_read_line(line, skus, branches) for _, line in numbered[:MAX_LINES])
        limit = (
            Problem(0, None, ProblemCode.MESSAGE_TOO_LONG, {"limit": MAX_CHARS})
            if len(text) > MAX_CHARS
            else Problem(0, None, ProblemCode.TOO_MANY_LINES, {"limit": MAX_LINES})
        )
        return Typed(problems=(limit,), looks_like_request=looks)
    lines, numbers, problems = [], [], []
    for n, line in numbered:
        read = _read_line(line, skus, branches)
        if read is None:
            problems.append(_unreadable(n, line, known.skus))
        else:
            lines.append(read)
            numbers.append(n)
    if not lines:  # not a request at all: ordinary text
        return Typed()
    if problems:
        return Typed(problems=tuple(problems), looks_like_request=True)
    return Typed(tuple(lines), tuple(numbers), looks_like_request=True)


def at_message_lines(
    typed: Typed, problems: Sequence[Problem], known_skus: Sequence[str]
) -> tuple[Problem, ...]:
    """The intake's problems with the lines of a typed request (row n: its n-th order line) at
    the message's line numbers, an unknown SKU with the nearest SKUs of the terms."""
    placed = []
    for problem in as_lines(problems):
        if 1 <= problem.row <= len(typed.numbers):
            line = typed.lines[problem.row - 1]
            problem = replace(problem, row=typed.numbers[problem.row - 1])
            if problem.code is ProblemCode.UNKNOWN_SKU:
                problem = _with_suggestions(problem, line.sku, known_skus)
            first = problem.values.get("first")
            if problem.code is ProblemCode.ALREADY_ON_ROW and isinstance(first, int):
                at = typed.numbers[first - 1] if 1 <= first <= len(typed.numbers) else first
                values = {**problem.values, "first": at}
                problem = replace(problem, code=ProblemCode.ALREADY_ON_LINE, values=values)
        placed.append(problem)
    return tuple(placed)


def suggest(text: str, skus: Sequence[str], limit: int = SUGGESTIONS) -> tuple[str, ...]:
    """The SKUs most like `text`, most alike first; none if nothing is alike enough."""
    if not text or not skus:
        return ()
    found = process.extract(
        text[:MAX_LINE_CHARS],
        skus,
        scorer=fuzz.ratio,
        processor=utils.default_process,
        limit=limit,
        score_cutoff=SUGGESTION_CUTOFF,
    )
    return tuple(sku for sku, _, _ in found)


def _read_line(line: str, skus: Collection[str], branches: Mapping[str, str]) -> RequestLine | None:
    """One line as an order line, or None if it is not one."""
    if len(line) > MAX_LINE_CHARS:
        return None
    line = _BULLET.sub("", line)
    for form in (_SKU_FIRST, _QTY_FIRST):
        match = form.match(line)
        if match is None:
            continue
        sku = match["sku"]
        if not (_CODE_LIKE.match(sku) or sku.casefold() in skus):
            continue
        quantity = int(match["qty"].replace(",", ""))
        note = match["rest"].strip().lstrip(",;:–—-").strip()
        if note.startswith("(") and note.endswith(")"):
            note = note[1:-1].strip()
        to = _FOR.match(note)
        branch = branches.get(to["branch"].casefold()) if to else None
        if branch is not None:
            return RequestLine(sku, quantity, ship_to=branch)
        return RequestLine(sku, quantity, note=note)
    return None


def _branch_names(branches: Mapping[str, str]) -> dict[str, str]:
    """Each branch by its id and by its name, in lower case, to its id."""
    named = {name.casefold(): branch_id for branch_id, name in branches.items() if name}
    return {**named, **{branch_id.casefold(): branch_id for branch_id in branches}}


def _unreadable(number: int, line: str, skus: Sequence[str]) -> Problem:
    """A line that is not an order line, with the SKUs its first word is most like."""
    values: dict[str, str | int] = {"value": quote(line)}
    first = line.split(" ", 1)[0] if line else ""
    near = suggest(first, skus) if _CODE_LIKE.match(first) else ()
    if near:
        values["suggestions"] = ", ".join(near)
        return Problem(number, None, ProblemCode.UNREADABLE_LINE_NEAR, values, Place.LINE)
    return Problem(number, None, ProblemCode.UNREADABLE_LINE, values, Place.LINE)


def _with_suggestions(problem: Problem, sku: str, skus: Sequence[str]) -> Problem:
    near = suggest(sku, skus)
    if not near:
        return problem
    values = {**problem.values, "suggestions": ", ".join(near)}
    return replace(problem, code=ProblemCode.UNKNOWN_SKU_NEAR, values=values)

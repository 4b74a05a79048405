"""A request made without a spreadsheet: lines typed in a message, or a cart from the Mini App's
catalogue. Either becomes the sheet the intake reads (core.purchasing.submissions), so it gets
the same checks, the same pricing, the same POs and the same duplicate protection as a file.

A request carries an id its maker generated once (the draft summary's, or the cart's on the
phone): the sheet's sha256 is taken over that id and the lines, so the same request submitted
twice (a double tap on Submit, a queued cart sent again after a lost connection) is the earlier
submission and makes its POs once, while the same lines asked for again next week are new."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import date
from enum import StrEnum

from core.drafting.sheets import OPTIONAL, REQUIRED
from core.drafting.tables import Cell, Row, Table
from core.problems import Place, Problem
from core.purchasing.submissions import Sheet


class Source(StrEnum):
    """Where a request came from; it names the submission as a file name would."""

    TYPED = "typed request"
    CATALOGUE = "catalogue request"


@dataclass(frozen=True)
class RequestLine:
    """One thing asked for: a SKU and a quantity, with what a sheet row may say besides."""

    sku: str
    quantity: int
    note: str = ""
    supplier_id: str | None = None
    ship_to: str | None = None  # a branch id; None: the requester's own branch
    needed_by: date | None = None


_COLUMNS = (*REQUIRED, *OPTIONAL)


def request_sheet(source: Source, request_id: str, lines: Sequence[RequestLine]) -> Sheet:
    """The lines as the sheet the intake reads: the header first, then line n as row n, so a
    problem's number is the line's (see `as_lines`)."""
    header = Row(0, _COLUMNS)
    rows = [header] + [Row(n, _cells(line)) for n, line in enumerate(lines, start=1)]
    return Sheet(str(source), request_digest(request_id, lines), Table(tuple(rows)))


def request_digest(request_id: str, lines: Sequence[RequestLine]) -> str:
    """The sha256 a request is known by: its id and its lines, in order."""
    body = json.dumps(
        {"id": request_id, "lines": [list(map(_text, _cells(line))) for line in lines]},
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(body.encode()).hexdigest()


def as_lines(problems: Sequence[Problem]) -> tuple[Problem, ...]:
    """A request's problems counted by line (1 is the first line) rather than by sheet row."""
    return tuple(replace(problem, place=Place.LINE) for problem in problems)


def _cells(line: RequestLine) -> tuple[Cell, ...]:
    values: dict[str, Cell] = {
        "sku": line.sku,
        "quantity": line.quantity,
        "supplier_id": line.supplier_id,
        "notes": line.note or None,
        "ship_to": line.ship_to,
        "needed_by": line.needed_by,
    }
    return tuple(values[name] for name in _COLUMNS)


def _text(value: Cell) -> str | int | None:
    if value is None or isinstance(value, str | int):
        return value
    return str(value)

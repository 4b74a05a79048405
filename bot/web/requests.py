"""A cart the catalogue page sends: read strictly, submitted as the sheet the intake reads
(core.purchasing.requests.request_sheet, then core.purchasing.submissions.submit_sheet), and
answered with the POs made or the problems named by the cart's items, in the viewer's language.

The page makes an id for a cart when it is first submitted (crypto.randomUUID) and sends the
same id every time it sends that cart again (a double tap, a queued cart after a lost
connection): the same id and lines are the same request's sha256, so submit_sheet returns
the POs the first one made, `repeated`, and the page shows them as made.

    200 {"status": "made", "repeated", "message", "orders": [{"po", "supplier", "total"}]}
    400 {"status": "invalid", "message"}       a body that is not a cart (not UTF-8 JSON,
                                               nested too deep, a field wrong, too many lines)
    403 {"status": "refused", "message"}       not a requester
    422 {"status": "problems", "message", "problems": [{"line", "sku", "text"}]}
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import date
from typing import Any

from bot.clock import numbering, utcnow
from bot.config import Settings
from bot.web.bodies import json_object
from bot.web.words import CATALOGUE_REQUEST, NOT_A_REQUESTER
from bot.words import texts
from bot.words.i18n import Translator
from bot.words.problems import problem_sentence
from core.company.company import BRANCH_ID
from core.drafting.money import format_pkr
from core.drafting.sheets import MAX_DATA_ROWS, MAX_NOTE, MAX_QUANTITY
from core.errors import NotARequester
from core.ports import Offload, Store
from core.purchasing import submissions
from core.purchasing.requests import RequestLine, Source, as_lines, request_sheet
from core.purchasing.submissions import Submission
from core.texts import flatten

_ID = re.compile(r"[A-Za-z0-9_-]{8,64}")  # crypto.randomUUID()'s, or any such page-made id
_CODE = re.compile(r"[^\s]{1,64}")  # a SKU or a supplier id as the terms have it
_BRANCH = re.compile(BRANCH_ID)
_SURROGATE = re.compile("[\ud800-\udfff]")  # half a UTF-16 pair: no character at all
_ITEM_KEYS = frozenset({"sku", "supplier_id", "quantity", "note"})


class BadCart(ValueError):
    """A body that is not a cart the page could have sent."""


@dataclass(frozen=True)
class Cart:
    """A cart as the page sent it, checked for shape: its id and its lines."""

    request_id: str
    lines: tuple[RequestLine, ...]


@dataclass(frozen=True)
class Answer:
    """The HTTP status and JSON body of the answer, and what the chat is told (None: nothing,
    as for a cart submitted before)."""

    status: int
    body: dict[str, Any]
    chat: str | None = None


def parse(raw: bytes) -> Cart:
    """The cart in a request body; BadCart saying what is wrong."""
    body = json_object(raw)
    if isinstance(body, str):
        raise BadCart(body)
    request_id, items = body.get("id"), body.get("lines")
    if not isinstance(request_id, str) or not _ID.fullmatch(request_id):
        raise BadCart("id must be 8-64 characters of A-Z a-z 0-9 _ -")
    if not isinstance(items, list) or not items:
        raise BadCart("lines must be a list of at least one line")
    if len(items) > MAX_DATA_ROWS:
        raise BadCart(f"a request has at most {MAX_DATA_ROWS:,} lines, as a sheet")
    branch, needed_by = _branch(body.get("branch")), _date(body.get("needed_by"))
    lines = tuple(_line(n, item, branch, needed_by) for n, item in enumerate(items, start=1))
    return Cart(request_id, lines)


def _branch(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not _BRANCH.fullmatch(value):
        raise BadCart("branch must be a branch id, or null")
    return value


def _date(value: object) -> date | None:
    if value is None:
        return None
    try:
        if not isinstance(value, str) or len(value) != 10:
            raise ValueError
        return date.fromisoformat(value)
    except ValueError:
        raise BadCart("needed_by must be a date as YYYY-MM-DD, or null") from None


def _line(n: int, item: object, branch: str | None, needed_by: date | None) -> RequestLine:
    if not isinstance(item, dict) or not set(item) <= _ITEM_KEYS:
        raise BadCart(f"line {n} must be an object of sku, supplier_id, quantity and note")
    sku, supplier, quantity = item.get("sku"), item.get("supplier_id"), item.get("quantity")
    note = item.get("note") or ""
    if not isinstance(sku, str) or not _CODE.fullmatch(sku):
        raise BadCart(f"line {n}: sku must be a code of 1-64 characters")
    if supplier is not None and (not isinstance(supplier, str) or not _CODE.fullmatch(supplier)):
        raise BadCart(f"line {n}: supplier_id must be a code of 1-64 characters, or null")
    if type(quantity) is not int or not 0 <= quantity <= MAX_QUANTITY:
        raise BadCart(f"line {n}: quantity must be a whole number, 0 to {MAX_QUANTITY:,}")
    if not isinstance(note, str) or len(note) > MAX_NOTE or _SURROGATE.search(note):
        raise BadCart(f"line {n}: note must be text of at most {MAX_NOTE} characters")
    return RequestLine(sku, quantity, note.strip(), supplier, branch, needed_by)


async def submit(
    store: Store,
    settings: Settings,
    requester_id: int,
    cart: Cart,
    tr: Translator,
    offload: Offload,
    *,
    admin: bool = False,
) -> Answer:
    """The cart submitted as a sheet by the requester (or an admin: core.purchasing.
    submissions.submit_sheet): its POs, or its problems by item."""
    now = utcnow()
    sheet = request_sheet(Source.CATALOGUE, cart.request_id, cart.lines)
    try:
        result = await submissions.submit_sheet(
            store,
            requester_id,
            sheet,
            now,
            settings.rules(),
            numbering(now, settings.tz),
            offload=offload,
            admin=admin,
        )
    except NotARequester:
        return Answer(403, {"status": "refused", "message": tr(NOT_A_REQUESTER)})
    result = replace(result, problems=as_lines(result.problems))
    said = texts.submission(result, tr(CATALOGUE_REQUEST), tr=tr)
    if result.problems:
        return Answer(422, _problems(result, cart, said, tr), said)
    orders = [
        {
            "po": job.po_number,
            "supplier": flatten(draft.supplier_name),
            "total": format_pkr(draft.total_paisa),
        }
        for job, draft in result.orders
    ]
    body = {"status": "made", "repeated": result.repeated, "message": said, "orders": orders}
    return Answer(200, body, None if result.repeated else said)


def _problems(result: Submission, cart: Cart, said: str, tr: Translator) -> dict[str, Any]:
    """The problems, each with the cart's line and SKU it is about (none: the whole cart)."""
    problems = []
    for problem in sorted(result.problems, key=lambda p: p.row):
        line = problem.row if 1 <= problem.row <= len(cart.lines) else None
        sku = cart.lines[line - 1].sku if line is not None else None
        problems.append({"line": line, "sku": sku, "text": problem_sentence(problem, tr=tr)})
    return {"status": "problems", "message": said.split("\n", 1)[0], "problems": problems}

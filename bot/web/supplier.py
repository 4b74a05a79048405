"""The supplier's page behind the link in a PO's e-mail (core.suppliers.pages), for a cheap
phone or a messaging app's in-app browser: HTML made on the server, one plain form, no script.

    GET  /s/{token}                        the PO as its PDF shows it, where it stands with
                                           the supplier, and the form while an answer is open
    POST /s/{token}                        the answer: 303 back to the page (Post/Redirect/Get)
    GET  /s/static/{version}/supplier.css  the style sheet, kept a year under its own hash

A GET records nothing the supplier says (mail scanners open links). A POST names the version
and hash the page showed; a refused or unreadable one is the page again, with the reason in
an alert and what was typed kept (409 if the order moved on, 400 if the answer was wrong).
Every URL the page names is relative to the link, so a prefix in MANZOORI_PUBLIC_URL's path
works. Every answer carries supplier_headers (bot/web/security.py).
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Awaitable, Callable, Mapping
from datetime import date, datetime, tzinfo
from decimal import Decimal
from functools import cache
from html import escape
from pathlib import Path
from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from bot.clock import utcnow
from bot.config import Settings
from bot.outbox.links import SUPPLIER_ROUTE
from bot.web.security import supplier_headers
from core.drafting.money import format_pkr, to_rupees
from core.errors import AnswerProblem, AnswerRefused, ExpiredToken, InvalidToken, UnknownJob
from core.purchasing.po_document import PoDocument
from core.suppliers import pages
from core.suppliers.answers import Answer, LineProposal, Reply, SupplierPage, SupplierReply
from core.suppliers.answers import SupplierStatus as Status
from core.suppliers.links import SupplierLink, verify_link
from store.sql import SqlStore

log = logging.getLogger(__name__)

CSS = Path(__file__).parent / "static" / "supplier.css"
# The form of a 200-line PO is about 6 KB; anything much larger is not from the page.
MAX_BODY = 64_000
MAX_FIELDS = 2_000  # two per line, and a few more
# A versioned asset never changes under its URL: a year, and no revalidation.
IMMUTABLE = "public, max-age=31536000, immutable"
# A refusal because the order moved on (or the page was old) is a conflict; the rest, input.
_CONFLICTS = {
    AnswerProblem.ANSWERED,
    AnswerProblem.UNDER_REVIEW,
    AnswerProblem.SUPERSEDED,
    AnswerProblem.CANCELLED,
    AnswerProblem.STALE,
}
STATUS_OF_PROBLEM = {problem: 409 if problem in _CONFLICTS else 400 for problem in AnswerProblem}
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_COUNT = re.compile(r"\d{1,3}(?:,\d{3})+|\d{1,9}")  # 12, 1,200; up to 999,999,999
_RUPEES = re.compile(r"(?:Rs\.?\s*)?(\d{1,3}(?:,\d{3})+|\d{1,12})(\.\d{1,2})?", re.IGNORECASE)
_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
_HASH = re.compile(r"[0-9a-f]{1,64}")
_VERSION = re.compile(r"[0-9]{1,5}")
_LINE_FIELD = re.compile(r"(qty|price)-([1-9][0-9]{0,5})")
# A refused answer, shown on the page again: why, the line it is about, what was typed.
Refusal = tuple[str, int | None, Mapping[str, str]]


class FormProblem(ValueError):
    """A form the page could not have sent as it is: `line` names the line it is about."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


def read_reply(fields: Mapping[str, str]) -> SupplierReply:
    """The answer a form carries; FormProblem if a value cannot be read. Only the fields of
    the answer chosen count: an accept is its date, a decline its reason."""
    try:
        reply = Reply(fields.get("answer", ""))
    except ValueError:
        raise FormProblem("Choose Accept, Decline or Propose changes.") from None
    version, prefix = fields.get("version", ""), fields.get("hash", "")
    if not _VERSION.fullmatch(version) or not _HASH.fullmatch(prefix):
        raise FormProblem("This form is damaged: please open the link again.")
    if reply is Reply.DECLINE:
        return SupplierReply(reply, int(version), prefix, reason=fields.get("reason", ""))
    when = _date(fields.get("date", "").strip())
    if reply is Reply.ACCEPT:
        return SupplierReply(reply, int(version), prefix, delivery_date=when)
    changes: dict[int, LineProposal] = {}
    for name, value in fields.items():
        field = _LINE_FIELD.fullmatch(name)
        if field is None or not value.strip():
            continue
        line = int(field[2])
        proposal = changes.get(line, LineProposal(line))
        if field[1] == "qty":
            proposal = LineProposal(line, _count(value, line), proposal.unit_price_paisa)
        else:
            proposal = LineProposal(line, proposal.quantity, _paisa(value, line))
        changes[line] = proposal
    lines = tuple(changes[line] for line in sorted(changes))
    note = fields.get("note", "")
    return SupplierReply(reply, int(version), prefix, delivery_date=when, note=note, lines=lines)


def _date(text: str) -> date | None:
    """A YYYY-MM-DD date as a date field sends it; None if blank."""
    if not text:
        return None
    try:
        if _DAY.fullmatch(text):
            return date.fromisoformat(text)
    except ValueError:
        pass
    raise FormProblem("The delivery date must be a date, like 2026-12-20.")


def _count(text: str, line: int) -> int:
    """A whole quantity, 0 or more: "12", "1,200"."""
    if not _COUNT.fullmatch(text.strip()):
        raise FormProblem(f"Line {line}: the quantity must be a whole number, like 12.", line)
    return int(text.strip().replace(",", ""))


def _paisa(text: str, line: int) -> int:
    """A price in rupees, exactly in paisa: "1250", "1,250.50", "Rs 1250.5"."""
    price = _RUPEES.fullmatch(text.strip())
    if price is None:
        raise FormProblem(f"Line {line}: the unit price must be in rupees, like 1,250.50.", line)
    return int(Decimal(price[1].replace(",", "") + (price[2] or "")).scaleb(2))


def _day(value: date) -> str:
    """ "5 Dec 2026", as the PDF writes it, whatever the process's locale."""
    return f"{value.day} {_MONTHS[value.month - 1]} {value.year}"


def _moment(at: datetime, zone: tzinfo) -> str:
    """ "5 Dec 2026, 14:03 PKT": a moment as the buyer's clock shows it."""
    local = at.astimezone(zone)
    return f"{_day(local.date())}, {local:%H:%M %Z}"


def status_text(page: SupplierPage, zone: tzinfo) -> str:
    """What the page says of where the order stands: what was recorded, and when."""
    answer, due = page.answer, page.document.delivery_date
    if page.status is Status.CANCELLED:
        return "This order was cancelled. There is nothing to answer."
    if page.status is Status.SUPERSEDED:
        return f"This order was replaced by version {page.current_version}, sent to you by e-mail."
    if answer is None:
        if page.status is Status.CHANGES_PROPOSED:
            return "Your proposed changes are with the buyer."
        return "Awaiting your answer."
    when = _moment(answer.answered_at, zone)
    if answer.reply is Reply.ACCEPT:
        due = answer.delivery_date or due
        return f"Accepted on {when}" + (f" — delivery by {_day(due)}." if due else ".")
    if answer.reply is Reply.DECLINE:
        return f"Declined on {when}. Reason: {answer.reason}"
    return f"Changes proposed on {when}; the buyer is considering them."


def _changes(answer: Answer | None, doc: PoDocument) -> str:
    """The changes a standing proposal asks for, as a list under the status."""
    if answer is None or answer.reply is not Reply.PROPOSE:
        return ""
    due = answer.delivery_date
    items = [f"Delivery by {_day(due)}"] if due else []
    for change in answer.lines:
        line = doc.lines[change.line - 1]
        parts = [f"Line {change.line} ({line.sku}):"]
        if change.quantity is not None:
            parts.append(f"quantity {line.quantity:,} → {change.quantity:,}")
        if change.unit_price_paisa is not None:
            new = format_pkr(change.unit_price_paisa)
            parts.append(f"unit price {format_pkr(line.unit_price_paisa)} → {new}")
        items.append(" ".join(parts))
    items += [f"Note: {answer.note}"] if answer.note else []
    return "<ul>" + "".join(f"<li>{escape(item)}</li>" for item in items) + "</ul>"


def _rows(rows: list[tuple[str, str | None]]) -> str:
    """A block's rows, label and value; a row without a value is left out."""
    return "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in rows if v)


def _parties(doc: PoDocument) -> str:
    """Buyer, order, supplier and delivery, as the PDF's blocks."""
    buyer, to, due = doc.buyer, doc.ship_to, doc.delivery_date
    blocks: dict[str, list[tuple[str, str | None]]] = {
        "Buyer": [
            ("Name", buyer.name),
            ("Address", buyer.address),
            ("NTN", buyer.ntn),
            ("STRN", buyer.strn),
            ("Phone", buyer.phone),
        ],
        "Order": [
            ("PO number", doc.po_number),
            ("Version", str(doc.draft_version)),
            ("Date", _day(doc.issued)),
            ("Terms version", doc.terms_version),
        ],
        "Supplier": [
            ("Name", doc.supplier_name),
            ("Supplier id", doc.supplier_id),
            ("E-mail", doc.supplier_email),
        ],
        "Delivery": [
            ("Deliver to", to.name if to else None),
            ("Address", to.address if to else None),
            ("Delivery by", _day(due) if due else None),
            ("Payment terms", doc.payment_terms),
        ],
    }
    return "".join(
        f'<section class="block"><h2>{k}</h2><dl>{_rows(rows)}</dl></section>'
        for k, rows in blocks.items()
        if any(v for _, v in rows)
    )


def _lines(doc: PoDocument, zone: tzinfo) -> str:
    """The lines' table, in a box of its own that scrolls sideways on a narrow phone; then the
    totals, and who authorised the order."""
    rows = []
    for n, line in enumerate(doc.lines, start=1):
        more = [line.note, line.needed_by and f"Needed by {_day(line.needed_by)}"]
        detail = "".join(f"<small>{escape(text)}</small>" for text in more if text)
        rows.append(
            f"<tr><td>{n}</td><td>{escape(line.sku)}</td><td>{escape(line.description)}"
            f"{detail}</td><td>{line.quantity:,}</td><td>{format_pkr(line.unit_price_paisa)}"
            f"</td><td>{format_pkr(line.total_paisa)}</td></tr>"
        )
    head = "".join(
        f"<th>{h}</th>" for h in ("#", "SKU", "Description", "Qty", "Unit price", "Amount")
    )
    totals = [("Total", doc.total_paisa)]
    if doc.taxes:  # as the PDF: the subtotal, the GST of each rate, the total with it
        taxes = [
            (f"GST {t.percent}% on {format_pkr(t.base_paisa)}", t.tax_paisa) for t in doc.taxes
        ]
        totals = [("Subtotal", doc.subtotal_paisa), *taxes, ("Total (incl. GST)", doc.total_paisa)]
    sums = "".join(f"<dt>{escape(k)}</dt><dd>{format_pkr(v)}</dd>" for k, v in totals)
    signed = "".join(
        f"<li>{escape(' — '.join(p for p in (s.name, s.stage, _moment(s.at, zone)) if p))}</li>"
        for s in doc.approvals
    )
    return (
        f'<div class="scroll"><table><thead><tr>{head}</tr></thead>'
        f'<tbody>{"".join(rows)}</tbody></table></div><dl class="totals">{sums}</dl>'
        + (f"<h2>Authorised by</h2><ul>{signed}</ul>" if signed else "")
    )


def _form(page: SupplierPage, typed: Mapping[str, str], bad_line: int | None) -> str:
    """The one form: a date and Accept; a reason and Decline; per line a quantity and a price,
    a note and Propose. Its first submit button is disabled, so Enter in a field sends
    nothing: only a button the supplier presses answers."""
    doc, chosen, due = page.document, typed.get("answer", ""), page.document.delivery_date
    earliest = f' min="{due.isoformat()}"' if due else ""
    hint = f" — not before {_day(due)}" if due else ""
    lines = []
    for n, line in enumerate(doc.lines, start=1):
        bad = ' class="bad"' if n == bad_line else ""
        lines.append(
            f'<fieldset data-testid="ack-line"{bad}>'
            f"<legend>{n}. {escape(line.sku)} · {escape(line.description)}</legend><label>"
            f'Quantity (ordered {line.quantity:,})<input name="qty-{n}" inputmode="numeric"'
            f'{_value(typed, f"qty-{n}")} data-testid="ack-qty"></label><label>Unit price, Rs '
            f'(now {to_rupees(line.unit_price_paisa):,})<input name="price-{n}" '
            f'inputmode="decimal"{_value(typed, f"price-{n}")} data-testid="ack-price"></label>'
            "</fieldset>"
        )
    decline_open = " open" if chosen == Reply.DECLINE else ""
    propose_open = " open" if chosen == Reply.PROPOSE or bad_line else ""
    return (
        '<form method="post" autocomplete="off"><button type="submit" disabled hidden></button>'
        f'<input type="hidden" name="version" value="{page.link.draft_version}">'
        f'<input type="hidden" name="hash" value="{escape(page.link.hash_prefix)}">'
        f"<h2>Your answer</h2><label>Delivery date (optional{hint})"
        f'<input type="date" name="date"{earliest}{_value(typed, "date")} '
        'data-testid="ack-date"></label><button name="answer" value="accept" class="go" '
        'data-testid="ack-accept">Accept the order</button>'
        f"<details{decline_open}><summary>Decline</summary><label>Why you decline (required)"
        f'<textarea name="reason" rows="3" maxlength="{pages.REASON_LIMIT}" '
        f'data-testid="ack-reason">{escape(typed.get("reason", ""))}</textarea></label>'
        '<button name="answer" value="decline" class="no" data-testid="ack-decline">Decline '
        f"the order</button></details><details{propose_open}><summary>Propose changes"
        "</summary><p>Per line, a lower quantity (0 if you cannot supply it) or another unit "
        "price; leave a box empty to keep it. A later delivery date goes in the date above."
        f'</p>{"".join(lines)}<label>Note (optional)<textarea name="note" rows="3" '
        f'maxlength="{pages.NOTE_LIMIT}" data-testid="ack-note">'
        f'{escape(typed.get("note", ""))}</textarea></label><button name="answer" '
        'value="propose" data-testid="ack-propose">Propose these changes</button></details>'
        "</form>"
    )


def _value(typed: Mapping[str, str], name: str) -> str:
    """An input's value attribute: what the supplier typed in it, if anything."""
    text = typed.get(name, "")
    return f' value="{escape(text)}"' if text else ""


def render_page(
    page: SupplierPage,
    zone: tzinfo,
    *,
    alert: str | None = None,
    typed: Mapping[str, str] | None = None,
    bad_line: int | None = None,
) -> str:
    """The page of `page`: an order no longer standing says so, with the buyer's details and
    nothing else; one that stands shows the PO, what was recorded, and the form while an
    answer may be given, with what the supplier `typed` and the `alert` of a refused one."""
    doc = page.document
    gone = page.status in (Status.SUPERSEDED, Status.CANCELLED)
    said = f'<p class="alert" role="alert">{escape(alert)}</p>' if alert else ""
    status = (
        f'<p class="status {page.status.value}" data-testid="ack-status" role="status">'
        f"{escape(status_text(page, zone))}</p>"
    )
    if gone:
        body = f'<section class="block"><h2>Buyer</h2><dl>{_rows([("Name", doc.buyer.name)])}'
        body += _rows([("Phone", doc.buyer.phone)]) + "</dl></section>"
    else:
        body = _changes(page.answer, doc) + _parties(doc) + _lines(doc, zone)
        if page.can_answer:
            body += _form(page, typed or {}, bad_line)
        body += (
            f'<p class="small">Please quote {escape(doc.po_number)} on your delivery note and '
            f"invoice. Reference: {escape(doc.key)}</p>"
        )
    title = f"Purchase order {escape(doc.po_number)}"
    sub = f"Version {doc.draft_version} · {_day(doc.issued)} · from {escape(doc.buyer.name)}"
    return _html(title, f'<h1>{title}</h1><p class="sub">{sub}</p>{status}{said}{body}')


def _html(title: str, main: str) -> str:
    """A whole page around `main`, with the style sheet."""
    version, _ = stylesheet()
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" '
        'content="width=device-width,initial-scale=1"><meta name="robots" content="noindex">'
        f'<title>{title}</title><link rel="stylesheet" href="static/{version}/supplier.css">'
        f"</head><body><main>{main}</main></body></html>"
    )


def notice_page(title: str, text: str) -> str:
    """A page that only says something: a link that is not valid, expired or gone."""
    return _html(escape(title), f"<h1>{escape(title)}</h1><p>{escape(text)}</p>")


@cache
def stylesheet() -> tuple[str, bytes]:
    """The style sheet's version (a hash of its content) and its bytes."""
    content = CSS.read_bytes()
    return hashlib.sha256(content).hexdigest()[:12], content


NOT_VALID = ("This link is not valid", "Please check that the whole link was opened.")
EXPIRED = (
    "This link has expired",
    "Please contact the buyer who sent you the order for a new link.",
)
GONE = ("This order is no longer available", "Please contact the buyer who sent it.")
# Said of any failure, before or after an answer was kept: the same answer again counts once.
FAILED = ("Something went wrong", "Please try again in a few minutes.")


class SupplierPages:
    """The page's handlers over the store, with the secret links are signed with and the
    buyer's time zone."""

    def __init__(self, settings: Settings, store: SqlStore) -> None:
        self.store, self.secret, self.zone = store, settings.secrets, settings.tz
        self.rules = settings.rules()

    def routes(self) -> list[BaseRoute]:
        """The page, GET and POST, and its style sheet."""
        return [
            Route(SUPPLIER_ROUTE, self.guarded(self.page), methods=["GET", "POST"]),
            Route("/s/static/{version}/supplier.css", self.css, methods=["GET"]),
        ]

    def guarded(
        self, handler: Callable[[Request], Awaitable[Response]]
    ) -> Callable[[Request], Awaitable[Response]]:
        """`handler`, whose unexpected failure is logged and answered as a plain page."""

        async def endpoint(request: Request) -> Response:
            try:
                return await handler(request)
            except Exception:  # whatever it was, the supplier learns only that it failed
                log.exception("supplier page: %s failed", request.method)
                return self.html(notice_page(*FAILED), 500)

        return endpoint

    async def page(self, request: Request) -> Response:
        """The page of the link in the path, or the answer posted to it."""
        try:
            link = verify_link(self.secret, request.path_params["token"], utcnow())
        except ExpiredToken:
            return self.html(notice_page(*EXPIRED), 410)
        except InvalidToken:
            return self.html(notice_page(*NOT_VALID), 404)
        if request.method == "POST":
            return await self.post(request, link)
        return await self.show(link)

    async def show(
        self, link: SupplierLink, status: int = 200, refused: Refusal | None = None
    ) -> Response:
        """The page as things stand; with a refused answer, its reason and what was typed."""
        try:
            page = await pages.open_page(self.store, link, utcnow(), self.zone)
        except UnknownJob:
            return self.html(notice_page(*GONE), 410)
        if refused is None:
            return self.html(render_page(page, self.zone), status)
        why, line, typed = refused
        return self.html(
            render_page(page, self.zone, alert=why, typed=typed, bad_line=line), status
        )

    async def post(self, request: Request, link: SupplierLink) -> Response:
        """An answer: recorded, then 303 to the page; the page again with why, if refused."""
        kind = request.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if kind != "application/x-www-form-urlencoded":
            return self.text("Send the form from the page.", 415)
        raw = b""
        async for chunk in request.stream():  # a body past the limit is not read to its end
            raw += chunk
            if len(raw) > MAX_BODY:
                return self.text("This form is too large.", 413)
        try:
            fields = _fields(raw)
            reply = read_reply(fields)
        except FormProblem as problem:
            return await self.show(link, 400, (str(problem), problem.line, _readable(raw)))
        try:
            await pages.answer(self.store, link, reply, utcnow(), self.zone, self.rules)
        except AnswerRefused as refused:
            status = STATUS_OF_PROBLEM[refused.code]
            return await self.show(link, status, (str(refused), refused.line, fields))
        except UnknownJob:
            return self.html(notice_page(*GONE), 410)
        # Relative to /s/{token}: the link itself, below whatever prefix the public URL has.
        return RedirectResponse(request.path_params["token"], 303, headers=supplier_headers())

    async def css(self, request: Request) -> Response:
        """The style sheet under its version; any other version is not found."""
        version, content = stylesheet()
        if request.path_params["version"] != version:
            return self.text("Not found.", 404)
        headers = {**supplier_headers(), "Cache-Control": IMMUTABLE}
        return Response(content, media_type="text/css; charset=utf-8", headers=headers)

    def html(self, text: str, status: int = 200) -> Response:
        """A page of the supplier's."""
        headers = supplier_headers()
        return Response(text, status, headers=headers, media_type="text/html; charset=utf-8")

    def text(self, text: str, status: int) -> Response:
        """A plain answer, for what no page sends."""
        return PlainTextResponse(text, status, headers=supplier_headers())


def _fields(raw: bytes) -> dict[str, str]:
    """A URL-encoded form's fields, the first value of each; FormProblem if unreadable."""
    try:
        parsed = parse_qs(
            raw.decode("utf-8"),
            keep_blank_values=True,
            strict_parsing=False,
            errors="strict",
            max_num_fields=MAX_FIELDS,
        )
    except ValueError:  # not UTF-8, or too many fields
        raise FormProblem("This form could not be read: please open the link again.") from None
    return {name: values[0] for name, values in parsed.items()}


def _readable(raw: bytes) -> dict[str, str]:
    """What can be kept of a form that could not be read whole, to show it again."""
    try:
        return _fields(raw)
    except FormProblem:
        return {}


def supplier_routes(settings: Settings, store: SqlStore) -> list[BaseRoute]:
    """The supplier's page and its style sheet: served always, whatever else is."""
    return SupplierPages(settings, store).routes()

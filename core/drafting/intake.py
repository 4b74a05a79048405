"""From checked sheet items to purchase-order drafts, one per supplier, with policy flags.

Pure: the terms, the price history and the PO numbers come in as arguments. The same
functions re-draft a waiting PO when a new terms version changes one of its lines.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from core.drafting.drafts import Draft, DraftLine, Flag
from core.drafting.flags import FlagCode, ordered
from core.drafting.sheets import Item, read_items
from core.drafting.tables import Table, quote
from core.drafting.terms import Offer, Supplier, Terms, match_key
from core.problems import Problem, ProblemCode, Value

NO_TERMS = Problem(0, None, ProblemCode.NO_TERMS)
# Five times the last order is beyond a seasonal peak: more likely 500 typed for 50.
QUANTITY_JUMP_FACTOR = 5


@dataclass(frozen=True)
class PastLine:
    """How a SKU was last ordered from a supplier, on a PO that was sent."""

    po_number: str
    unit_price_paisa: int
    quantity: int
    sent_at: datetime | None = None  # when that PO was sent (its job's last change)


# (supplier key, SKU key) -> the last sent order line; see `match_key`.
History = Mapping[tuple[str, str], PastLine]


@dataclass(frozen=True)
class OrderLine:
    """A sheet item matched to the offer it will be bought under."""

    item: Item
    offer: Offer
    chosen_by_price: bool  # no supplier_id was given: the cheapest offer was taken


@dataclass(frozen=True)
class Order:
    """Everything one supplier will be asked to deliver to one branch: one purchase order."""

    supplier: Supplier
    lines: tuple[OrderLine, ...]
    branch_id: str = ""  # "" without a company file


@dataclass(frozen=True)
class Branches:
    """Where a sheet's rows may be delivered: the ids of the company file's branches (None:
    no company file, and no row may name a branch), and the branch of a row that names none
    (the requester's, else the company's default; "" without a company file)."""

    known: tuple[str, ...] | None = None
    home: str = ""


NO_BRANCHES = Branches()


def po_number(year: int, serial: int) -> str:
    """A PO number such as PO-2026-0042: the year, and a serial the store makes unique."""
    return f"PO-{year}-{serial:04d}"


def check_sheet(
    table: Table, terms: Terms | None, branches: Branches = NO_BRANCHES
) -> tuple[list[Order], list[Problem]]:
    """Every problem with a sheet, in row order; none means the orders can be drafted."""
    items, problems = read_items(table)
    if problems and not items:  # nothing to price: no header, too many rows, no SKU at all
        return [], in_file_order(problems)
    if terms is None:
        return [], [NO_TERMS]
    orders, more = plan(items, terms, branches)
    if problems or more:
        return [], in_file_order(problems + more)
    return orders, []


def in_file_order(problems: list[Problem]) -> list[Problem]:
    """Problems by row; stable, so one row's problems keep the order they were found in."""
    return sorted(problems, key=lambda p: p.row)


def plan(
    items: Sequence[Item], terms: Terms, branches: Branches = NO_BRANCHES
) -> tuple[list[Order], list[Problem]]:
    """Match every item to an offer and a branch; group by supplier and branch; report every
    item that cannot be."""
    problems: list[Problem] = []
    chosen: dict[tuple[str, str, str], OrderLine] = {}
    for item in items:
        line = _match(item, terms, problems)
        branch = _branch(item, branches, problems)
        if line is None or branch is None:
            continue
        key = (match_key(line.offer.supplier_id), match_key(line.offer.sku), branch)
        if key in chosen:
            offer, first = line.offer, chosen[key].item.row
            values: dict[str, Value] = {"sku": offer.sku, "supplier": offer.supplier_id}
            values["first"] = first
            problems.append(Problem(item.row, "sku", ProblemCode.ALREADY_ON_ROW, values))
        else:
            chosen[key] = line
    if problems:
        return [], problems
    groups: dict[tuple[str, str], list[OrderLine]] = {}
    for (_, _, branch), line in chosen.items():
        groups.setdefault((line.offer.supplier_id, branch), []).append(line)
    orders = [
        Order(terms.suppliers[supplier_id], tuple(lines), branch)
        for (supplier_id, branch), lines in sorted(groups.items())
    ]
    return orders, []


def _branch(item: Item, branches: Branches, problems: list[Problem]) -> str | None:
    """The branch a row is delivered to: its ship_to, else the sheet's home branch; None (a
    problem recorded) when it names one the company file does not have."""
    if item.ship_to is None:
        return branches.home
    if branches.known is None:
        problems.append(Problem(item.row, "ship_to", ProblemCode.NO_COMPANY))
        return None
    if item.ship_to not in branches.known:
        known = ", ".join(branches.known)
        values: dict[str, Value] = {"value": quote(item.ship_to), "branches": known}
        problems.append(Problem(item.row, "ship_to", ProblemCode.UNKNOWN_BRANCH, values))
        return None
    return item.ship_to


def _match(item: Item, terms: Terms, problems: list[Problem]) -> OrderLine | None:
    offers = terms.offers_of(item.sku)
    supplier = terms.supplier(item.supplier_id) if item.supplier_id is not None else None
    if not offers:
        values = {"value": quote(item.sku)}
        problems.append(Problem(item.row, "sku", ProblemCode.UNKNOWN_SKU, values))
    if item.supplier_id is not None and supplier is None:
        values = {"value": quote(item.supplier_id)}
        problems.append(Problem(item.row, "supplier_id", ProblemCode.UNKNOWN_SUPPLIER, values))
    if not offers or (item.supplier_id is not None and supplier is None):
        return None
    if supplier is None:
        return OrderLine(item, offers[0], chosen_by_price=True)
    offer = terms.offer(supplier.supplier_id, item.sku)
    if offer is None:
        others = ", ".join(o.supplier_id for o in offers)
        values = {"supplier": supplier.supplier_id, "value": quote(item.sku), "others": others}
        problems.append(Problem(item.row, "sku", ProblemCode.NOT_OFFERED, values))
        return None
    return OrderLine(item, offer, chosen_by_price=False)


def build_draft(
    order: Order,
    number: str,
    terms: Terms,
    history: History,
    dual_above_paisa: int | None,
    extra: Sequence[Flag] = (),
    *,
    today: date | None = None,
    company_version: str = "",
) -> Draft:
    """The draft for one order: lines by SKU, every flag an approver should weigh. `today` (in
    the buyer's time zone) dates the delivery from the lead times; None leaves lead times out."""
    lines = sorted(order.lines, key=lambda line: match_key(line.offer.sku))
    flags = list(extra)
    for line in lines:
        flags += _line_flags(line, terms, history)
        flags += _too_soon(line, today)
    drafted = tuple(
        DraftLine(
            o.offer.sku,
            o.offer.description,
            o.item.quantity,
            o.offer.unit_price_paisa,
            o.item.note,
            o.offer.category,
            o.offer.gst_basis_points,
            o.item.needed_by,
        )
        for o in lines
    )
    # The default policy's "two approvers above the limit", shown as a flag; None under an
    # imported policy, whose stages the card shows instead. The total is Draft.total_paisa's,
    # summed here so that the draft is made (and its lines checked) once, with its flags.
    total = sum(line.gross_paisa for line in drafted)
    if dual_above_paisa is not None and total > dual_above_paisa:
        flags.append(Flag(FlagCode.DUAL_APPROVAL, "", (total, dual_above_paisa)))
    return Draft(
        po_number=number,
        supplier_id=order.supplier.supplier_id,
        supplier_name=order.supplier.name,
        recipient_email=order.supplier.email,
        terms_version=terms.version,
        lines=drafted,
        flags=ordered(flags),
        company_version=company_version,
        branch_id=order.branch_id,
        payment_terms=order.supplier.payment_terms,
        delivery_date=delivery_date(lines, today),
    )


def delivery_date(lines: Sequence[OrderLine], today: date | None) -> date | None:
    """When a PO is to be delivered: the latest date its lines are needed by, else today plus
    the longest lead time of its offers; None when neither is known."""
    needed = [line.item.needed_by for line in lines if line.item.needed_by is not None]
    if needed:
        return max(needed)
    leads = [line.offer.lead_days for line in lines if line.offer.lead_days is not None]
    if today is None or not leads:
        return None
    return today + timedelta(days=max(leads))


def _too_soon(line: OrderLine, today: date | None) -> list[Flag]:
    """A needed-by date earlier than the offer's lead time allows (or already past): flagged
    for the approver, not refused; the dates as YYYYMMDD numbers."""
    needed = line.item.needed_by
    if needed is None or today is None:
        return []
    earliest = today + timedelta(days=line.offer.lead_days or 0)
    if needed >= earliest:
        return []
    amounts = (day_number(needed), day_number(earliest), line.offer.lead_days or 0)
    return [Flag(FlagCode.NEEDED_TOO_SOON, line.offer.sku, amounts)]


def day_number(day: date) -> int:
    """A date as the number a flag carries: 2026-12-20 -> 20261220."""
    return day.year * 10_000 + day.month * 100 + day.day


def _line_flags(line: OrderLine, terms: Terms, history: History) -> list[Flag]:
    offer, quantity, sku = line.offer, line.item.quantity, line.offer.sku
    flags: list[Flag] = []
    amounts: tuple[int, ...]
    offers = terms.offers_of(sku)
    cheapest = offers[0]
    if line.chosen_by_price and len(offers) > 1 and cheapest == offer:
        amounts = (offer.unit_price_paisa, offers[1].unit_price_paisa, len(offers))
        flags.append(Flag(FlagCode.LOWEST_PRICE_CHOSEN, sku, amounts, offers[1].supplier_id))
    elif cheapest.unit_price_paisa < offer.unit_price_paisa:
        amounts = (offer.unit_price_paisa, cheapest.unit_price_paisa)
        flags.append(Flag(FlagCode.CHEAPER_ELSEWHERE, sku, amounts, cheapest.supplier_id))
    if quantity < offer.min_qty:
        flags.append(Flag(FlagCode.QUANTITY_BELOW_MIN, sku, (quantity, offer.min_qty)))
    if offer.max_qty is not None and quantity > offer.max_qty:
        flags.append(Flag(FlagCode.QUANTITY_ABOVE_MAX, sku, (quantity, offer.max_qty)))
    if offer.unit_price_paisa == 0:
        flags.append(Flag(FlagCode.ZERO_PRICE, sku))
    past = history.get((match_key(offer.supplier_id), match_key(sku)))
    if past is not None and past.unit_price_paisa != offer.unit_price_paisa:
        amounts = (past.unit_price_paisa, offer.unit_price_paisa)
        flags.append(Flag(FlagCode.PRICE_CHANGED, sku, amounts, past.po_number))
    if past is not None and quantity >= QUANTITY_JUMP_FACTOR * past.quantity:
        flags.append(Flag(FlagCode.QUANTITY_JUMP, sku, (quantity, past.quantity), past.po_number))
    return flags


@dataclass(frozen=True)
class Redraft:
    """What a new terms version does to one waiting PO."""

    draft: Draft | None  # None: the supplier offers none of its lines any more
    changes: tuple[Flag, ...]  # what changed, as flags; empty: the PO is untouched


def redraft(
    draft: Draft,
    old: Terms,
    new: Terms,
    history: History,
    dual_above_paisa: int | None,
    today: date | None = None,
) -> Redraft:
    """Re-price a waiting PO under new terms, if they change a price, limit or its supplier."""
    changes: list[Flag] = []
    supplier = new.supplier(draft.supplier_id)
    before = old.supplier(draft.supplier_id)
    if supplier is not None and before is not None and _details(supplier) != _details(before):
        changes.append(Flag(FlagCode.SUPPLIER_DETAILS_CHANGED, "", (), old.version))
    kept: list[OrderLine] = []
    for line in draft.lines:
        offer = new.offer(draft.supplier_id, line.sku) if supplier else None
        if offer is None:
            changes.append(Flag(FlagCode.SKU_WITHDRAWN, line.sku, (line.quantity,), old.version))
            continue
        changes += _offer_changes(line, old.offer(draft.supplier_id, line.sku), offer, old)
        chosen = any(
            f.code == FlagCode.LOWEST_PRICE_CHOSEN and f.sku == line.sku for f in draft.flags
        )
        item = Item(0, line.sku, line.quantity, None, line.note, None, line.needed_by)
        kept.append(OrderLine(item, offer, chosen_by_price=chosen))
    if not changes:
        return Redraft(draft, ())
    if supplier is None or not kept:
        return Redraft(None, ordered(changes))
    order = Order(supplier, tuple(kept), draft.branch_id)
    rebuilt = build_draft(
        order,
        draft.po_number,
        new,
        history,
        dual_above_paisa,
        changes,
        today=today,
        company_version=draft.company_version,
    )
    return Redraft(rebuilt, ordered(changes))


def _details(supplier: Supplier) -> tuple[str, str, str]:
    """What a supplier's PO says of it: a change makes the PO a new version."""
    return supplier.name, match_key(supplier.email), supplier.payment_terms


def _offer_changes(line: DraftLine, was: Offer | None, now: Offer, old: Terms) -> list[Flag]:
    changes: list[Flag] = []
    amounts: tuple[int, ...]
    if line.unit_price_paisa != now.unit_price_paisa:
        amounts = (line.unit_price_paisa, now.unit_price_paisa)
        changes.append(Flag(FlagCode.TERMS_PRICE_CHANGED, line.sku, amounts, old.version))
    if line.gst_basis_points != now.gst_basis_points:
        amounts = (line.gst_basis_points, now.gst_basis_points)
        changes.append(Flag(FlagCode.TERMS_TAX_CHANGED, line.sku, amounts, old.version))
    if was is not None and (was.min_qty, was.max_qty) != (now.min_qty, now.max_qty):
        amounts = (was.min_qty, was.max_qty or 0, now.min_qty, now.max_qty or 0)
        changes.append(Flag(FlagCode.TERMS_LIMITS_CHANGED, line.sku, amounts, old.version))
    if line.description != now.description:  # the mail's wording changes: approve it afresh
        changes.append(Flag(FlagCode.TERMS_DESCRIPTION_CHANGED, line.sku, (), old.version))
    return changes

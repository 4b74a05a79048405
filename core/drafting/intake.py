"""From checked sheet items to purchase-order drafts, one per supplier, with policy flags.

Pure: the terms, the price history and the PO numbers come in as arguments. The same
functions re-draft a waiting PO when a new terms version changes one of its lines.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

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
    """Everything one supplier will be asked for: one purchase order."""

    supplier: Supplier
    lines: tuple[OrderLine, ...]


def po_number(year: int, serial: int) -> str:
    """A PO number such as PO-2026-0042: the year, and a serial the store makes unique."""
    return f"PO-{year}-{serial:04d}"


def check_sheet(table: Table, terms: Terms | None) -> tuple[list[Order], list[Problem]]:
    """Every problem with a sheet, in row order; none means the orders can be drafted."""
    items, problems = read_items(table)
    if problems and not items:  # nothing to price: no header, too many rows, no SKU at all
        return [], in_file_order(problems)
    if terms is None:
        return [], [NO_TERMS]
    orders, more = plan(items, terms)
    if problems or more:
        return [], in_file_order(problems + more)
    return orders, []


def in_file_order(problems: list[Problem]) -> list[Problem]:
    """Problems by row; stable, so one row's problems keep the order they were found in."""
    return sorted(problems, key=lambda p: p.row)


def plan(items: Sequence[Item], terms: Terms) -> tuple[list[Order], list[Problem]]:
    """Match every item to an offer; group by supplier; report every item that cannot be."""
    problems: list[Problem] = []
    chosen: dict[tuple[str, str], OrderLine] = {}
    for item in items:
        line = _match(item, terms, problems)
        if line is None:
            continue
        pair = (match_key(line.offer.supplier_id), match_key(line.offer.sku))
        if pair in chosen:
            offer, first = line.offer, chosen[pair].item.row
            values: dict[str, Value] = {"sku": offer.sku, "supplier": offer.supplier_id}
            values["first"] = first
            problems.append(Problem(item.row, "sku", ProblemCode.ALREADY_ON_ROW, values))
        else:
            chosen[pair] = line
    if problems:
        return [], problems
    groups: dict[str, list[OrderLine]] = {}
    for line in chosen.values():
        groups.setdefault(line.offer.supplier_id, []).append(line)
    orders = [
        Order(terms.suppliers[supplier_id], tuple(lines))
        for supplier_id, lines in sorted(groups.items())
    ]
    return orders, []


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
) -> Draft:
    """The draft for one order: lines by SKU, every flag an approver should weigh."""
    lines = sorted(order.lines, key=lambda line: match_key(line.offer.sku))
    flags = list(extra)
    for line in lines:
        flags += _line_flags(line, terms, history)
    draft = Draft(
        po_number=number,
        supplier_id=order.supplier.supplier_id,
        supplier_name=order.supplier.name,
        recipient_email=order.supplier.email,
        terms_version=terms.version,
        lines=tuple(
            DraftLine(
                o.offer.sku,
                o.offer.description,
                o.item.quantity,
                o.offer.unit_price_paisa,
                o.item.note,
                o.offer.category,
            )
            for o in lines
        ),
    )
    # The default policy's "two approvers above the limit", shown as a flag; None under an
    # imported policy, whose stages the card shows instead.
    if dual_above_paisa is not None and draft.total_paisa > dual_above_paisa:
        flags.append(Flag(FlagCode.DUAL_APPROVAL, "", (draft.total_paisa, dual_above_paisa)))
    return Draft(**{**draft.__dict__, "flags": ordered(flags)})


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
    draft: Draft, old: Terms, new: Terms, history: History, dual_above_paisa: int | None
) -> Redraft:
    """Re-price a waiting PO under new terms, if they change a price, limit or its supplier."""
    changes: list[Flag] = []
    supplier = new.supplier(draft.supplier_id)
    before = old.supplier(draft.supplier_id)
    if (
        supplier is not None
        and before is not None
        and ((supplier.name, match_key(supplier.email)) != (before.name, match_key(before.email)))
    ):
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
        item = Item(0, line.sku, line.quantity, None, line.note)
        kept.append(OrderLine(item, offer, chosen_by_price=chosen))
    if not changes:
        return Redraft(draft, ())
    if supplier is None or not kept:
        return Redraft(None, ordered(changes))
    order = Order(supplier, tuple(kept))
    rebuilt = build_draft(order, draft.po_number, new, history, dual_above_paisa, changes)
    return Redraft(rebuilt, ordered(changes))


def _offer_changes(line: DraftLine, was: Offer | None, now: Offer, old: Terms) -> list[Flag]:
    changes: list[Flag] = []
    amounts: tuple[int, ...]
    if line.unit_price_paisa != now.unit_price_paisa:
        amounts = (line.unit_price_paisa, now.unit_price_paisa)
        changes.append(Flag(FlagCode.TERMS_PRICE_CHANGED, line.sku, amounts, old.version))
    if was is not None and (was.min_qty, was.max_qty) != (now.min_qty, now.max_qty):
        amounts = (was.min_qty, was.max_qty or 0, now.min_qty, now.max_qty or 0)
        changes.append(Flag(FlagCode.TERMS_LIMITS_CHANGED, line.sku, amounts, old.version))
    if line.description != now.description:  # the mail's wording changes: approve it afresh
        changes.append(Flag(FlagCode.TERMS_DESCRIPTION_CHANGED, line.sku, (), old.version))
    return changes

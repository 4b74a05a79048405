"""Policy flags: what an approver must see before approving, and how to say it."""

from __future__ import annotations

from enum import StrEnum

from core.drafts import Flag
from core.money import format_pkr


class FlagCode(StrEnum):
    """Each flag's meaning and what its `amounts` hold."""

    DUAL_APPROVAL = "dual_approval"  # (total, threshold) paisa
    LOWEST_PRICE_CHOSEN = "lowest_price_chosen"  # (price, next price, suppliers); ref next supplier
    CHEAPER_ELSEWHERE = "cheaper_elsewhere"  # (price here, cheaper price); ref cheaper supplier
    QUANTITY_BELOW_MIN = "quantity_below_min"  # (quantity, min_qty)
    QUANTITY_ABOVE_MAX = "quantity_above_max"  # (quantity, max_qty)
    PRICE_CHANGED = "price_changed"  # (last PO's price, price now); ref last PO
    QUANTITY_JUMP = "quantity_jump"  # (quantity, last PO's quantity); ref last PO
    ZERO_PRICE = "zero_price"  # ()
    TERMS_PRICE_CHANGED = "terms_price_changed"  # (previous draft's price, new); ref old terms
    TERMS_LIMITS_CHANGED = "terms_limits_changed"  # (old min, old max, new min, new max); 0 = none
    TERMS_DESCRIPTION_CHANGED = "terms_description_changed"  # (); ref old terms
    SUPPLIER_DETAILS_CHANGED = "supplier_details_changed"  # (); ref old terms
    SKU_WITHDRAWN = "sku_withdrawn"  # (quantity,); ref old terms


_ORDER = list(FlagCode)


def ordered(flags: list[Flag]) -> tuple[Flag, ...]:
    """Flags in a fixed order (by kind, then SKU), so equal drafts hash equally."""
    return tuple(
        sorted(set(flags), key=lambda f: (_ORDER.index(FlagCode(f.code)), f.sku, f.amounts, f.ref))
    )


def _percent(before: int, after: int) -> str:
    if before == 0:
        return "was free"
    change = (after - before) * 100 / before
    return f"{change:+.1f}%"


def _limits(low: int, high: int) -> str:
    return f"{low} to {high}" if high else f"at least {low}"


def describe(flag: Flag) -> str:
    """The flag as one sentence for the approval card, a report or the CLI."""
    a, sku, ref = flag.amounts, flag.sku, flag.ref
    match FlagCode(flag.code):
        case FlagCode.DUAL_APPROVAL:
            return f"Total {format_pkr(a[0])} is above {format_pkr(a[1])}: two approvers needed"
        case FlagCode.LOWEST_PRICE_CHOSEN:
            return (
                f"{sku}: offered by {a[2]} suppliers; this one is the cheapest at "
                f"{format_pkr(a[0])} (next: {ref} at {format_pkr(a[1])})"
            )
        case FlagCode.CHEAPER_ELSEWHERE:
            return f"{sku}: {ref} offers it for {format_pkr(a[1])}, here {format_pkr(a[0])}"
        case FlagCode.QUANTITY_BELOW_MIN:
            return f"{sku}: {a[0]:,} ordered, below the supplier's minimum of {a[1]:,}"
        case FlagCode.QUANTITY_ABOVE_MAX:
            return f"{sku}: {a[0]:,} ordered, above the supplier's maximum of {a[1]:,}"
        case FlagCode.PRICE_CHANGED:
            return (
                f"{sku}: unit price {format_pkr(a[1])}, was {format_pkr(a[0])} on {ref} "
                f"({_percent(a[0], a[1])})"
            )
        case FlagCode.QUANTITY_JUMP:
            return f"{sku}: {a[0]:,} ordered, {a[0] // a[1]}× the {a[1]:,} on {ref}"
        case FlagCode.ZERO_PRICE:
            return f"{sku}: the terms price it at {format_pkr(0)}"
        case FlagCode.TERMS_PRICE_CHANGED:
            return (
                f"{sku}: new terms price {format_pkr(a[1])}, was {format_pkr(a[0])} "
                f"({_percent(a[0], a[1])})"
            )
        case FlagCode.TERMS_LIMITS_CHANGED:
            return f"{sku}: order limits now {_limits(a[2], a[3])}, were {_limits(a[0], a[1])}"
        case FlagCode.TERMS_DESCRIPTION_CHANGED:
            return f"{sku}: the new terms describe it differently"
        case FlagCode.SUPPLIER_DETAILS_CHANGED:
            return "The supplier's name or e-mail address changed in the new terms"
        case FlagCode.SKU_WITHDRAWN:
            return f"{sku}: no longer offered by this supplier; {a[0]:,} units removed from the PO"

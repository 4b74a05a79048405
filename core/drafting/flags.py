"""Policy flags: what an approver must see before approving, as codes and amounts (the shell
says them: bot.words.flags)."""

from __future__ import annotations

from enum import StrEnum

from core.drafting.drafts import Flag


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
    # (needed by, earliest the lead time allows, lead days); dates as YYYYMMDD numbers
    NEEDED_TOO_SOON = "needed_too_soon"
    TERMS_TAX_CHANGED = "terms_tax_changed"  # (old rate, new rate) hundredths of %; ref old terms


_ORDER = list(FlagCode)


def ordered(flags: list[Flag]) -> tuple[Flag, ...]:
    """Flags in a fixed order (by kind, then SKU), so equal drafts hash equally."""
    return tuple(
        sorted(set(flags), key=lambda f: (_ORDER.index(FlagCode(f.code)), f.sku, f.amounts, f.ref))
    )

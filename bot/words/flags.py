"""The ⚠️ flags of a draft in words, in the reader's language: core gives each flag a code and
its amounts (core.drafting.flags), and this is the one place that says them, for cards, replies,
superseded lists and the CLI (in English)."""

from __future__ import annotations

from datetime import date

from bot.words.i18n import ENGLISH, N_, Translator
from core.drafting.drafts import Flag
from core.drafting.flags import FlagCode
from core.drafting.money import format_pkr

# One sentence per kind of flag; the placeholders are filled by `_values`.
FLAG_TEXTS: dict[FlagCode, str] = {
    FlagCode.DUAL_APPROVAL: N_("Total {total} is above {threshold}: two approvers needed"),
    FlagCode.LOWEST_PRICE_CHOSEN: N_(
        "{sku}: offered by {count} suppliers; this one is the cheapest at {price} "
        "(next: {supplier} at {next_price})"
    ),
    FlagCode.CHEAPER_ELSEWHERE: N_("{sku}: {supplier} offers it for {cheaper}, here {price}"),
    FlagCode.QUANTITY_BELOW_MIN: N_(
        "{sku}: {quantity} ordered, below the supplier's minimum of {limit}"
    ),
    FlagCode.QUANTITY_ABOVE_MAX: N_(
        "{sku}: {quantity} ordered, above the supplier's maximum of {limit}"
    ),
    FlagCode.PRICE_CHANGED: N_("{sku}: unit price {price}, was {before} on {po} ({change})"),
    FlagCode.QUANTITY_JUMP: N_("{sku}: {quantity} ordered, {factor}× the {before} on {po}"),
    FlagCode.ZERO_PRICE: N_("{sku}: the terms price it at {price}"),
    FlagCode.TERMS_PRICE_CHANGED: N_("{sku}: new terms price {price}, was {before} ({change})"),
    FlagCode.TERMS_LIMITS_CHANGED: N_("{sku}: order limits now {limits}, were {before}"),
    FlagCode.TERMS_DESCRIPTION_CHANGED: N_("{sku}: the new terms describe it differently"),
    FlagCode.SUPPLIER_DETAILS_CHANGED: N_(
        "The supplier's name or e-mail address changed in the new terms"
    ),
    FlagCode.SKU_WITHDRAWN: N_(
        "{sku}: no longer offered by this supplier; {quantity} units removed from the PO"
    ),
    FlagCode.NEEDED_TOO_SOON: N_(
        "{sku}: needed by {needed}, but the supplier takes {days} days: {earliest} at the earliest"
    ),
    FlagCode.TERMS_TAX_CHANGED: N_("{sku}: sales tax now {rate}, was {before}"),
}


def flag_text(flag: Flag, *, tr: Translator = ENGLISH) -> str:
    """The flag as one sentence for a card, a reply, a report or the CLI."""
    code = FlagCode(flag.code)
    return tr(FLAG_TEXTS[code], **_values(code, flag, tr))


def _values(code: FlagCode, flag: Flag, tr: Translator) -> dict[str, object]:
    """The placeholders of a flag's sentence, from its amounts (core.drafting.flags.FlagCode)."""
    a, sku, ref = flag.amounts, flag.sku, flag.ref
    match code:
        case FlagCode.DUAL_APPROVAL:
            return {"total": format_pkr(a[0]), "threshold": format_pkr(a[1])}
        case FlagCode.LOWEST_PRICE_CHOSEN:
            prices = {"price": format_pkr(a[0]), "next_price": format_pkr(a[1])}
            return {"sku": sku, "count": f"{a[2]:,}", "supplier": ref, **prices}
        case FlagCode.CHEAPER_ELSEWHERE:
            prices = {"price": format_pkr(a[0]), "cheaper": format_pkr(a[1])}
            return {"sku": sku, "supplier": ref, **prices}
        case FlagCode.QUANTITY_BELOW_MIN | FlagCode.QUANTITY_ABOVE_MAX:
            return {"sku": sku, "quantity": f"{a[0]:,}", "limit": f"{a[1]:,}"}
        case FlagCode.PRICE_CHANGED:
            change = _percent(a[0], a[1], tr)
            prices = {"price": format_pkr(a[1]), "before": format_pkr(a[0])}
            return {"sku": sku, "po": ref, "change": change, **prices}
        case FlagCode.QUANTITY_JUMP:
            before, factor = f"{a[1]:,}", a[0] // a[1]
            return {
                "sku": sku,
                "quantity": f"{a[0]:,}",
                "factor": factor,
                "before": before,
                "po": ref,
            }
        case FlagCode.ZERO_PRICE:
            return {"sku": sku, "price": format_pkr(0)}
        case FlagCode.TERMS_PRICE_CHANGED:
            change = _percent(a[0], a[1], tr)
            return {
                "sku": sku,
                "price": format_pkr(a[1]),
                "before": format_pkr(a[0]),
                "change": change,
            }
        case FlagCode.TERMS_LIMITS_CHANGED:
            limits, before = _limits(a[2], a[3], tr), _limits(a[0], a[1], tr)
            return {"sku": sku, "limits": limits, "before": before}
        case FlagCode.TERMS_DESCRIPTION_CHANGED:
            return {"sku": sku}
        case FlagCode.SUPPLIER_DETAILS_CHANGED:
            return {}
        case FlagCode.SKU_WITHDRAWN:
            return {"sku": sku, "quantity": f"{a[0]:,}"}
        case FlagCode.NEEDED_TOO_SOON:
            days = {"needed": _day(a[0]), "earliest": _day(a[1]), "days": f"{a[2]:,}"}
            return {"sku": sku, **days}
        case FlagCode.TERMS_TAX_CHANGED:
            return {"sku": sku, "rate": _rate(a[1]), "before": _rate(a[0])}


def _day(number: int) -> str:
    """A flag's YYYYMMDD date as cards write dates: "20 Dec 2026"."""
    return day_text(date(number // 10_000, number // 100 % 100, number % 100))


def day_text(day: date) -> str:
    """A date as cards, replies and the PO write it: "20 Dec 2026" (English month names in
    every language, as the other dates)."""
    return f"{day.day} {day:%b %Y}"


def _rate(basis_points: int) -> str:
    """A tax rate in hundredths of a percent as a percentage: 1750 -> "17.5%"; 0 -> "0%"."""
    return f"{basis_points / 100:g}%"


def _percent(before: int, after: int, tr: Translator) -> str:
    """A price change as a signed percentage; a price that was zero has none."""
    if before == 0:
        return tr("was free")
    change = (after - before) * 100 / before
    return f"{change:+.1f}%"


def _limits(low: int, high: int, tr: Translator) -> str:
    """Order limits in words; a maximum of 0 is no maximum."""
    if high:
        return tr("{low} to {high}", low=f"{low:,}", high=f"{high:,}")
    return tr("at least {low}", low=f"{low:,}")

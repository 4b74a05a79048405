"""Money is integer paisa everywhere; this module turns it into rupees for people and files."""

from __future__ import annotations

from decimal import Decimal

from babel.numbers import format_currency

# The rupee sign, a space, Western thousands grouping, always two decimals: "Rs 1,234.50".
# Babel's own en_PK pattern prints "Rs1,234.50", which is hard to read in a plain-text e-mail.
_PKR_PATTERN = "¤ #,##0.00"
_LOCALE = "en_PK"


def to_rupees(paisa: int) -> Decimal:
    """The exact rupee amount of `paisa` (100 paisa to the rupee), never a float."""
    return Decimal(paisa).scaleb(-2)


def format_pkr(paisa: int) -> str:
    """An amount in paisa as readable Pakistani rupees, e.g. 123450 -> "Rs 1,234.50"."""
    return format_currency(
        to_rupees(paisa), "PKR", format=_PKR_PATTERN, locale=_LOCALE, currency_digits=False
    )

"""What a person types after a command, read one way in the bot and the CLI alike: a Telegram
user id and a PO number (core.texts.echo repeats typed text in a refusal). Each parser answers
with a value or None, never an exception: the public reaches them with any text at all."""

from __future__ import annotations

import re

from core.drafting.drafts import is_po_number

# The largest id the database holds (BIGINT, a signed 64-bit integer): PostgreSQL refuses a
# larger value and SQLite's driver overflows. Telegram's ids stay far below it (52 bits).
BIGINT_MAX = 2**63 - 1
# A user id as typed: ASCII digits only (int() would also take "۱۲۳", "1_000" and " 12"), and
# no more of them than BIGINT_MAX has, so that no huge string is ever converted.
_USER_ID = re.compile(r"[0-9]{1,19}")


def parse_user_id(text: str) -> int | None:
    """A Telegram user id as typed (ASCII digits, from 1 to BIGINT_MAX), or None."""
    if _USER_ID.fullmatch(text) is None:
        return None
    value = int(text)
    return value if 1 <= value <= BIGINT_MAX else None


def parse_po_number(text: str) -> str | None:
    """A PO number as typed, in any case, as the store keeps it (upper case), or None if the
    text cannot be one (core.drafting.drafts: ASCII letters and digits, at most 64)."""
    return text.upper() if is_po_number(text) else None

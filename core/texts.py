"""Outside text made safe to show: one line, no invisible characters that reorder or hide it.

Sheet notes, file names, SKUs and descriptions, the names and descriptions of a terms list and
the names Telegram gives people are written by someone else. Put on a card, a reply, an alert,
a report or an e-mail as they are, a line break in one of them forges a line of the message
("Total: Rs 1.00", "✅ Approved by Boss"), and a bidi override makes text read differently
from what it holds. `flatten` is applied wherever such text enters a message template.
"""

from __future__ import annotations

import re

# Line and paragraph separators other than the C0/C1 controls below: Telegram, mail readers and
# terminals all break lines at them.
_SEPARATORS = "\u2028\u2029"
# Every C0 and C1 control (\n \r \v \f \x85 among them), DEL, and the separators: each
# becomes a space, so the words on either side stay apart.
_BREAKS = re.compile(f"[\x00-\x1f\x7f-\x9f{_SEPARATORS}]")
# Characters that change the order or joining of what is shown without being seen: the bidi
# embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069), the directional marks
# (U+200E, U+200F, U+061C), the zero-width characters (U+200B-U+200D, U+2060, U+FEFF, U+180E),
# the invisible operators (U+2061-U+2064) and the deprecated format controls (U+206A-U+206F).
INVISIBLE = frozenset(
    "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
    "\u200b\u200c\u200d\u2060\ufeff\u180e\u2061\u2062\u2063\u2064"
    "\u206a\u206b\u206c\u206d\u206e\u206f"
)
_INVISIBLE = re.compile(f"[{''.join(sorted(INVISIBLE))}]")


def flatten(text: str) -> str:
    """`text` on one line: controls and line separators become spaces, whitespace runs one
    space, no leading or trailing space, and the INVISIBLE characters removed."""
    visible = _INVISIBLE.sub("", _BREAKS.sub(" ", text))
    return " ".join(visible.split())


# How much of a person's text a refusal repeats: enough to recognise it, short on a phone.
ECHO_LIMIT = 40


def echo(text: str) -> str:
    """Typed text as a refusal repeats it: quoted, with control, format and other unprintable
    characters escaped (a NUL, a right-to-left mark), and cut after ECHO_LIMIT characters."""
    cut = text if len(text) <= ECHO_LIMIT else text[:ECHO_LIMIT] + "…"
    return repr(cut)

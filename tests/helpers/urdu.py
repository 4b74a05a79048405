"""Telling an English sentence inside an Urdu message: what is left once the isolated
left-to-right runs (bot.words.i18n: PO numbers, SKUs, amounts, names, quoted cells) are taken out
must hold no run of three or more Latin words, but for the few tokens that stay Latin in Urdu
too (Rs, PO, SKU, file formats, commands)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from bot.dev.botapi import Emulator
from bot.words.i18n import FSI, PDI

# An isolated run with no isolate inside it: removed innermost first, until none is left.
_ISOLATED = re.compile(f"{FSI}[^{FSI}{PDI}]*{PDI}")
# A word of Latin letters (with ' or - inside it, as in "e-mail" or "supplier's").
_LATIN_WORD = re.compile(r"[A-Za-z]+(?:['’-][A-Za-z]+)*")
# Tokens an Urdu sentence keeps in Latin letters: currency, units, file kinds, programs,
# and the names of columns and keys a file must spell exactly as they are.
LATIN_IN_URDU = frozenset(
    {"Rs", "PO", "SKU", "PKT", "MB", "KB", "CSV", "UTF", "xlsx", "xls", "Excel", "Windows",
     "Number", "TOML", "ASCII", "v", "sku", "quantity", "supplier_id", "notes", "min_qty",
     "groups"}
)  # fmt: skip
# Three Latin words in a row are a sentence, not a code.
RUN = 3


def english_runs(text: str) -> list[str]:
    """Every run of RUN or more Latin words (outside isolated runs and LATIN_IN_URDU) in
    `text`; a command (/history, /invite approver) counts as a single token."""
    while _ISOLATED.search(text):
        text = _ISOLATED.sub(" ", text)
    found: list[str] = []
    run: list[str] = []
    for token in text.split():
        word = token.strip(".,;:!?()[]{}\"'`«»“”…")
        if token.startswith("/"):
            continue  # a command: Latin in every language
        if _LATIN_WORD.fullmatch(word) and word not in LATIN_IN_URDU:
            run.append(word)
            continue
        if not word or not any(c.isalpha() for c in word):
            continue  # a number or punctuation neither starts nor ends a run
        found += [" ".join(run)] if len(run) >= RUN else []
        run = []
    return found + ([" ".join(run)] if len(run) >= RUN else [])


def said_to(botapi: Emulator, user_id: int, taps: Iterable[str] = (), *, after: int) -> list[str]:
    """Everything the bot said to a person since message `after` (the one they chose their
    language on): every version of every later message in their chat (text or caption, as
    sent and after each edit), and its answers to their `taps`."""
    texts = [
        version.text or version.caption or ""
        for message in botapi.messages(user_id)
        if message.message_id > after
        for version in message.versions
    ]
    answers = [botapi.callback_answer(tap) for tap in taps]
    return texts + [a.text for a in answers if a is not None and a.text]


def english_heard(
    botapi: Emulator, user_id: int, taps: Iterable[str] = (), *, after: int = 0
) -> list[tuple[str, list[str]]]:
    """Each message or tap answer since `after` (said_to) that holds an English sentence,
    with the sentences found: what a test of an Urdu reader asserts is empty."""
    heard = said_to(botapi, user_id, taps, after=after)
    return [(text, english_runs(text)) for text in heard if english_runs(text)]

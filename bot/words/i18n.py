"""The languages the bot speaks to a person (English, the default, and Urdu) and the one way
a text is translated: a Translator, called with an English msgid and named `{placeholders}`.

The catalogues are gettext catalogues managed with Babel (`bot/words/locale/`, domain `manzoori`;
README "Languages" has the pybabel commands). At run time the Urdu `.po` is read with Babel and
compiled into memory once, on first use: no `.mo` to build or to forget, and a translation
committed is a translation served. Extraction finds `tr("…")`, `tr.plural("…", "…", n)` and
`N_("…")` (a constant marked for extraction, translated where it is sent: `tr(CONSTANT)`).

In Urdu every placeholder's value is wrapped in a first-strong isolate (U+2068 … U+2069), so a
PO number, an SKU, an amount, an e-mail mask or a Latin name keeps its own left-to-right order
inside the right-to-left sentence, and cannot reorder the words around it. Values are
flattened (core.texts) before they get here, which removes any isolate of their own.
"""

from __future__ import annotations

import gettext
from enum import StrEnum
from functools import cache
from io import BytesIO
from pathlib import Path

from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po

LOCALE_DIR = Path(__file__).parent / "locale"
DOMAIN = "manzoori"
# First strong isolate and pop directional isolate (Unicode bidi algorithm, UAX #9): the run
# between them takes the direction of its own first strong letter (Latin: left to right).
FSI, PDI = "\u2068", "\u2069"


class Language(StrEnum):
    """A language a person can choose with /language; the value is what the store keeps."""

    EN = "en"
    UR = "ur"


DEFAULT_LANGUAGE = Language.EN
# What /language's buttons say: each language in its own name.
LANGUAGE_NAMES = {Language.EN: "English", Language.UR: "اردو"}


def N_(message: str) -> str:
    """Mark a constant for extraction; it is translated where it is used (`tr(CONSTANT)`)."""
    return message


def isolated(text: str) -> str:
    """`text` as one directional run inside a sentence of the other direction."""
    return f"{FSI}{text}{PDI}"


class Translator:
    """One language's texts: `tr("Hello {name}.", name=…)`."""

    def __init__(self, language: Language, catalogue: gettext.NullTranslations) -> None:
        self.language, self._catalogue = language, catalogue
        self.rtl = language is Language.UR

    def __call__(self, message: str, /, **params: object) -> str:
        """The translation of `message`, its `{name}` placeholders filled with `params`."""
        return self._fill(self._catalogue.gettext(message), params)

    def plural(self, singular: str, plural: str, n: int, /, **params: object) -> str:
        """The form for `n` of a message with a plural (`{count}` is `n`, grouped)."""
        text = self._catalogue.ngettext(singular, plural, n)
        return self._fill(text, {"count": f"{n:,}", **params})

    def ltr(self, text: str) -> str:
        """A left-to-right run (an SKU, a PO number, an amount) as this language shows it
        outside a placeholder: isolated in Urdu, as it is in English."""
        return isolated(text) if self.rtl else text

    def _fill(self, text: str, params: dict[str, object]) -> str:
        if not params:
            return text
        if self.rtl:
            params = {name: isolated(str(value)) for name, value in params.items()}
        return text.format(**params)


def catalogue_path(language: Language) -> Path:
    """Where a language's `.po` file is kept."""
    return LOCALE_DIR / language.value / "LC_MESSAGES" / f"{DOMAIN}.po"


@cache
def translator(language: Language) -> Translator:
    """The translator of `language`, its catalogue read and compiled in memory once."""
    if language is DEFAULT_LANGUAGE:  # the msgids are the English texts
        return Translator(language, gettext.NullTranslations())
    with catalogue_path(language).open("rb") as po:
        catalogue = read_po(po, locale=language.value, domain=DOMAIN)
    compiled = BytesIO()
    write_mo(compiled, catalogue)  # fuzzy entries are left out: they are not translations yet
    compiled.seek(0)
    return Translator(language, gettext.GNUTranslations(compiled))


def language_of(stored: str | None) -> Language:
    """A stored preference as a Language; the default for none (or one no longer offered)."""
    try:
        return Language(stored) if stored else DEFAULT_LANGUAGE
    except ValueError:
        return DEFAULT_LANGUAGE


ENGLISH = translator(Language.EN)

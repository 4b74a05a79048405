"""The purchase order as a PDF: the document a supplier gets with the e-mail, and the DRAFT an
approver opens before deciding (core.purchasing.po_document says what it prints).

A4, in English, set in Debian's Noto fonts: Noto Sans for Latin text, Noto Nastaliq Urdu for
the Urdu a supplier's name, a description, a note or an address may be written in, shaped by
HarfBuzz and laid out right to left. A PO e-mailed with a supplier's link prints it on page 1,
as a link and a QR code (bot.documents.qr); a DRAFT never does. The same document always gives
the same bytes."""

from __future__ import annotations

import copy
import dataclasses
import io
import re
import tempfile
import threading
import types
import unicodedata
from collections.abc import Iterator
from datetime import UTC, date, datetime, time
from functools import cache
from itertools import chain
from pathlib import Path
from typing import Any

from fontTools import subset
from fontTools.ttLib import TTFont
from fpdf import FPDF, FontFace
from fpdf.enums import (
    Align,
    CellBordersLayout,
    MethodReturnValue,
    TableBordersLayout,
    VAlign,
    WrapMode,
    XPos,
    YPos,
)
from fpdf.fonts import SubsetMap, TTFFont
from fpdf.line_break import BREAKING_SPACE_SYMBOLS_STR, Fragment, TextLine
from fpdf.util import Padding

from bot.documents.qr import draw_qr
from core.drafting.drafts import DraftLine
from core.drafting.money import format_pkr
from core.errors import ConfigError
from core.purchasing.po_document import PoDocument, Signature

# What most POs are written in: Basic Latin, Latin-1 and Latin Extended-A and -B, general
# punctuation, currency signs, letterlike symbols, arrows, mathematical operators and
# geometric shapes. A document whose every character Noto Sans draws from these is set in a
# copy of the font cut down to them once per process (bot.documents.pdf._latin_fonts): fpdf2
# parses and subsets a font for every document, and a tenth of the glyphs is a fraction of that
# work. Any other character (Urdu, Greek, Cyrillic…) sets the document in the whole fonts.
_LATIN = frozenset(
    chain(
        range(0x20, 0x7F),
        range(0xA0, 0x250),
        range(0x2000, 0x2070),
        range(0x20A0, 0x20D0),
        range(0x2100, 0x2300),
        range(0x25A0, 0x2600),
    )
)
# Debian's fonts-noto-core puts them here; `make fonts` installs it.
FONT_DIR = Path("/usr/share/fonts/truetype/noto")
SANS = "NotoSans"
URDU = "NotoNastaliqUrdu"
_FONT_FILES = {
    (SANS, ""): "NotoSans-Regular.ttf",
    (SANS, "B"): "NotoSans-Bold.ttf",
    (URDU, ""): "NotoNastaliqUrdu-Regular.ttf",
    (URDU, "B"): "NotoNastaliqUrdu-Bold.ttf",
}
# The Arabic script's blocks: text with any of these needs the Urdu font.
_ARABIC_SCRIPT = re.compile("[\u0600-\u06ff\u0750-\u077f\u08a0-\u08ff\ufb50-\ufdff\ufe70-\ufeff]")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
DRAFT_MARK = "DRAFT — not approved, do not supply"
ANSWER_PROMPT = "Answer this order — accept, decline or propose changes:"
_ANSWER_NOTE = (
    "Or scan the code with a phone. The link is for this order alone and works for a limited "
    "time; please do not forward it."
)
HEADINGS = ("#", "SKU", "Description", "Qty", "Unit price", "Amount")

_MARGIN = 15.0  # mm, every side
_FOOTER_ROOM = 16.0  # mm at the foot of each page for the footer
# The QR code's side, quiet zone included: about 0.6 mm a module for a supplier's link (some
# 100 characters), which a phone reads from a printed page or a screen.
_QR_SIZE = 28.0
_PT = 25.4 / 72  # mm per point
# Line height as a multiple of the font size. Nastaliq's letters climb and drop far beyond
# Latin ones, so a line holding Urdu gets more room.
_LATIN_LEADING = 1.4
_URDU_LEADING = 2.1

_INK = (26, 26, 26)
_MUTED = (105, 105, 105)
_ACCENT = (31, 58, 95)
_RULE = (200, 200, 200)
_HEADING_FILL = (232, 237, 243)
_DRAFT_RED = (176, 0, 32)
_DRAFT_FILL = (253, 236, 238)
_WATERMARK = (228, 228, 228)

# multi_cell()'s options its printing of unwrapped lines follows (any other is left to fpdf2), the
# characters fpdf2's line breaking treats specially, and a margin (mm) for the rounding of a
# line's width made of its characters' widths one by one.
_UNWRAPPED_OPTIONS = frozenset(
    ("align", "border", "fill", "link", "markdown", "max_line_height", "new_x", "new_y")
) | frozenset(("output", "padding", "print_sh", "wrapmode"))
_SPECIAL = re.compile("[\r\f\u00a0\u00ad]")
_ROUNDING = 0.001

# The page count's placeholder, switched on only while a footer is drawn: fpdf2 substitutes the
# alias wherever it is printed, and a description may contain any text.
_PAGES_ALIAS = "{nb}"


def render_po_pdf(doc: PoDocument) -> bytes:
    """The PDF of `doc`: byte for byte the same each time it is rendered. Raises ConfigError
    when a font file is missing."""
    pdf = _PoPdf(doc)
    pdf.add_page()
    _title(pdf, doc)
    _parties(pdf, doc)
    _answer(pdf, doc)
    _lines(pdf, doc)
    _totals(pdf, doc)
    _authorisation(pdf, doc)
    _small_print(pdf, doc)
    return bytes(pdf.output())  # draws the last footer, then fills in the page count


class _PoPdf(FPDF):
    """An A4 page with the PO's watermark (a draft), running head and footer on every page."""

    def __init__(self, doc: PoDocument) -> None:
        super().__init__(orientation="portrait", unit="mm", format="A4")
        self.doc = doc
        self.set_margins(_MARGIN, _MARGIN, _MARGIN)
        self.set_auto_page_break(True, margin=_FOOTER_ROOM)
        texts = list(_strings(doc))
        self.urdu = any(_ARABIC_SCRIPT.search(text) for text in texts)
        _add_fonts(self, texts, urdu=self.urdu)
        # Shaping (HarfBuzz) joins and orders Urdu; Latin text needs none of it, and it is half
        # of a table's render time, so a document without Arabic script is set without it.
        self.set_text_shaping(self.urdu)
        self.set_font(SANS, "", 9.5)
        self.set_text_color(*_INK)
        self.set_draw_color(*_RULE)
        self.set_line_width(0.2)
        # Fixed dates and no clock: the same document gives the same bytes, and fpdf2's /ID is
        # a hash of those bytes and this date.
        self.set_creation_date(datetime.combine(doc.issued, time(0, 0), tzinfo=UTC))
        self.set_title(f"Purchase order {doc.po_number}")
        self.set_author(doc.buyer.name)
        self.set_lang("en")

    def _render_styled_text_line(self, text_line: TextLine, *args: Any, **kwargs: Any) -> bool:
        # fpdf2 2.8.9 (its fix of py-pdf/fpdf2#1772): when the page's font is not set yet and a
        # line starts with a fallback font's text, it sets the font inside that line's own
        # q … Q, so the lines after it print with no font or at the wrong size. Setting it on
        # the page first, as FPDF.text() does, keeps it outside.
        if not self.current_font_is_set_on_page and self.current_font is not None:
            self._out(self._set_font_for_page(self.current_font, self.font_size_pt))
        return super()._render_styled_text_line(text_line, *args, **kwargs)

    def multi_cell(  # type: ignore[override]
        self, w: float, h: float | None = None, text: str = "", **options: Any
    ) -> Any:
        """FPDF.multi_cell(), printing a text whose every line surely fits (no line to wrap) as
        fpdf2 2.8.9 would, without its line breaking: that weighs each character and the line
        so far, one by one, and was two fifths of a render, most of it the lines' table
        (FPDF.table() prints each cell with multi_cell() twice: measuring, then printing).
        Anything else is left to fpdf2."""
        lines = self._unwrapped(w, text, options) if set(options) <= _UNWRAPPED_OPTIONS else None
        if lines is None:
            return super().multi_cell(w, h, text, **options)
        # What fpdf2 2.8.9's multi_cell() does with these lines, neither border nor fill.
        h = self.font_size if h is None else h
        max_line_height = options.get("max_line_height")
        line_height = h if max_line_height is None or len(lines) == 1 else min(h, max_line_height)
        padding = Padding.new(options.get("padding", 0))
        new_x = XPos.coerce(options.get("new_x", XPos.RIGHT))
        new_y = YPos.coerce(options.get("new_y", YPos.NEXT))
        # Measuring, as FPDF.table() does every cell before printing any (to the right, at the
        # top): printing would go nowhere. What stays of it is the glyphs it adds to the font's
        # subset, in order, and the position (FPDF._render_styled_text_line()).
        measuring = not self._writing() and (new_x, new_y) == (XPos.RIGHT, YPos.TOP)
        prev_y = self.y
        self.x += padding.left
        self.y += padding.top
        page_break = False
        for index, line in enumerate(lines):
            if self._perform_page_break_if_need_be(h + padding.bottom):
                page_break = True
                self.y += padding.top
            last = index == len(lines) - 1
            if measuring:
                (fragment,) = line.fragments
                assert isinstance(fragment.font, TTFFont)
                pick = fragment.font.subset.pick
                for char in fragment.characters:
                    pick(ord(char))
                self._lasth = line_height
                if last:
                    self.x += line.max_width or 0
                else:
                    self.y += line_height
            else:
                self._render_styled_text_line(
                    line,
                    h=line_height,
                    new_x=new_x if last else XPos.LEFT,
                    new_y=new_y if last else YPos.NEXT,
                    border=0,
                    fill=False,
                    link=options.get("link"),
                    padding=Padding(0, padding.right, 0, padding.left),
                    prevent_font_change=False,
                )
        total_height = line_height * len(lines)
        if total_height < h:
            if new_y == YPos.NEXT:
                self.y += h - total_height
            total_height = h
        if page_break and new_y == YPos.TOP:
            prev_y = self.y
        if new_y == YPos.TOP:
            self.y = prev_y
        elif new_y == YPos.NEXT:
            self.y += padding.bottom
        if new_x == XPos.RIGHT:
            self.x += padding.right
        elif new_x == XPos.LEFT:
            self.x -= padding.left
        output = MethodReturnValue.coerce(options.get("output", MethodReturnValue.PAGE_BREAK))
        results: list[bool | float] = []
        if output & MethodReturnValue.PAGE_BREAK:
            results.append(page_break)
        if output & MethodReturnValue.HEIGHT:
            results.append(total_height + padding.top + padding.bottom)
        return results[0] if len(results) == 1 else tuple(results)

    def _writing(self) -> bool:
        """Whether what is printed now goes into the document: fpdf2 2.8.9's
        FPDF._disable_writing(), which FPDF.table() measures its cells in, replaces the method
        _out() with a function that drops it."""
        return isinstance(self._out, types.MethodType)

    def _unwrapped(self, w: float, text: str, options: dict[str, Any]) -> list[TextLine] | None:
        """The lines fpdf2 2.8.9's line breaking makes of `text` in a multi_cell() of width `w`
        with these `options`, when it breaks them only at the text's line breaks: plain text
        (no shaping, no markdown, no character spacing or stretching, no character that
        breaks, joins or hyphenates specially) in a single font, each line non-empty and
        narrower than the room by more than rounding. Else None."""
        align = Align.coerce(options.get("align", Align.J))
        output = MethodReturnValue.coerce(options.get("output", MethodReturnValue.PAGE_BREAK))
        if (
            not text
            or self.text_shaping
            or options.get("markdown")
            or options.get("border")
            or options.get("fill")
            or align == Align.X
            or output & MethodReturnValue.LINES
            or self.char_spacing
            or self.font_stretching != 100
            or not self.page
            or _SPECIAL.search(text)
        ):
            return None
        fragments = self._preload_font_styles(self.normalize_text(text), False)
        if len(fragments) != 1 or type(fragments[0]) is not Fragment:
            return None
        (fragment,) = fragments
        if w == 0:
            w = self.w - self.r_margin - self.x
        padding = Padding.new(options.get("padding", 0))
        width = w - padding.right - padding.left
        room = width - self.c_margin * ((not padding.left) + (not padding.right))
        pieces = "".join(fragment.characters).split("\n")
        lines: list[TextLine] = []
        for index, piece in enumerate(pieces):
            line = fragment.clone(characters=list(piece), link=fragment.link)
            text_width = line.get_width(initial_cs=False)
            if not 0 < text_width < room - _ROUNDING:
                return None
            lines.append(
                TextLine(
                    fragments=[line],
                    text_width=text_width,
                    number_of_spaces=sum(piece.count(s) for s in BREAKING_SPACE_SYMBOLS_STR),
                    align=Align.L if align == Align.J else align,
                    height=fragment.font_size,
                    max_width=width,
                    trailing_nl=index < len(pieces) - 1,
                )
            )
        return lines

    def header(self) -> None:
        """The DRAFT watermark under everything else, and after page 1 a running head."""
        self.alias_nb_pages("")  # see _PAGES_ALIAS: the body's text is printed as it is
        if self.doc.draft:
            with self.local_context(text_color=_WATERMARK):
                self.set_font(SANS, "B", 120)
                width = self.get_string_width("DRAFT")
                with self.rotation(45, x=self.w / 2, y=self.h / 2):
                    self.text(self.w / 2 - width / 2, self.h / 2 + 15, "DRAFT")
        if self.page_no() > 1:
            with self.local_context(text_color=_MUTED):
                self.set_font(SANS, "", 8)
                self.cell(0, 5, f"Purchase order {self.doc.po_number} (continued)", align="R")
            self.set_y(_MARGIN + 8)

    def footer(self) -> None:
        """The draft's warning, the PO number and "page N of M"."""
        self.alias_nb_pages(_PAGES_ALIAS)
        self.set_y(-12)
        self.line(_MARGIN, self.y - 1.5, self.w - _MARGIN, self.y - 1.5)
        with self.local_context(text_color=_MUTED):
            self.set_font(SANS, "", 8)
            if self.doc.draft:
                with self.local_context(text_color=_DRAFT_RED):
                    self.set_font(SANS, "B", 8)
                    self.cell(self.epw / 2, 5, DRAFT_MARK)
            page = f"{self.doc.po_number} · page {self.page_no()} of {_PAGES_ALIAS}"
            self.set_x(self.w / 2)
            self.cell(self.w / 2 - self.r_margin, 5, page, align="R")


def prepare() -> None:
    """Make now what a process's first document would otherwise wait for: the Latin cut of
    Noto Sans (_latin_fonts), half a second, parsed (_parsed_font). Without the fonts it does
    nothing: a render says what is missing."""
    if not _missing_fonts():
        for style, path in _latin_fonts(FONT_DIR)[0].items():
            _parsed_font(path, style)


def _missing_fonts() -> list[str]:
    """The font files the PDF needs that FONT_DIR does not hold."""
    return [name for name in _FONT_FILES.values() if not (FONT_DIR / name).is_file()]


def _add_fonts(pdf: FPDF, texts: list[str], *, urdu: bool) -> None:
    """Noto Sans (its Latin cut when that draws every one of the document's `texts`), and Noto
    Nastaliq Urdu as its fallback when the document has Arabic script."""
    missing = _missing_fonts()
    if missing:
        raise ConfigError(
            f"the PO's PDF needs fonts missing from {FONT_DIR}: {', '.join(missing)}; "
            "`make fonts` installs them (Debian's fonts-noto-core)"
        )
    latin = _latin_fonts(FONT_DIR)[0] if not urdu and _latin_only(texts) else {}
    for (family, style), name in _FONT_FILES.items():
        # fpdf2 embeds each font added, used or not (9 KB for the Urdu ones): only if needed.
        if family == SANS or urdu:
            key = f"{family.lower()}{style}"  # as add_font() names it
            parsed = _parsed_font(latin.get(style, FONT_DIR / name), style)
            pdf.fonts[key] = parsed.for_document(key, len(pdf.fonts) + 1)
    if urdu:
        pdf.set_fallback_fonts([URDU])


@dataclasses.dataclass(frozen=True)
class _ParsedFont:
    """A font file as fpdf2 2.8.9's FPDF.add_font() reads it, once per process: parsing it
    (fontTools, its glyph names made from its cmap) was a seventh of a render. Nothing here is
    written to after _parsed_font() made it, so documents rendered in several threads at once
    share it; each gets its own TTFFont from for_document()."""

    template: TTFFont  # what add_font() makes; never added to a document, never output
    data: bytes  # the file
    glyph_order: tuple[str, ...]  # its glyphs' names, in order

    def for_document(self, key: str, index: int) -> TTFFont:
        """What FPDF.add_font() would make as a document's font `key`, the `index`th it adds:
        the template's read-only parts (metrics, cmap, glyph ids…) shared, and a fresh copy of
        what a document writes to. fpdf2 2.8.9 writes the glyphs a document uses to `subset` and
        `missing_glyphs`, the largest size to `biggest_size_pt`, missing characters' default
        width to `cw` (a defaultdict), the object's name and number to `desc`; at output it
        subsets `ttfont` in place, then closes it and drops `_hbfont` (HarfBuzz's font, whose
        size shaping sets)."""
        font = copy.copy(self.template)
        font.fontkey, font.i = key, index
        font.cw = copy.copy(self.template.cw)
        font.desc = copy.copy(self.template.desc)
        font.missing_glyphs = []
        font.biggest_size_pt = 0
        font._hbfont = None  # loaded from the file on first use, as add_font()'s is
        # A TTFont over the bytes in memory reads its tables as output's subsetting asks for
        # them; given the glyph order, it need not make glyph names from the cmap again.
        ttfont = TTFont(io.BytesIO(self.data), recalcTimestamp=False, lazy=True)
        ttfont.setGlyphOrder(list(self.glyph_order))
        # The subset embedded at output keeps each glyph's outline as it is, and so its stored
        # bounding box: recalculating them would decompile and recompile every glyph kept, a
        # fifth of the render.
        ttfont.recalcBBoxes = False
        # fpdf2 2.8.9 drops these tables from the font it embeds, but fontTools' subsetter
        # (4.68) reads them whole before it does: most of an Urdu render, Nastaliq's being
        # large. Shaping reads the file (HarfBuzz), not this TTFont.
        for tag in _LAYOUT_TABLES:
            if tag in ttfont:
                del ttfont[tag]
        font.ttfont = ttfont
        font.subset = SubsetMap(font)
        return font


_LAYOUT_TABLES = ("GDEF", "GPOS", "GSUB")
_PARSING = threading.Lock()


@cache
def _parsed_font(path: Path, style: str) -> _ParsedFont:
    """The font file at `path` parsed once per process (by path: `_latin_fonts` writes each cut
    to its own)."""
    with _PARSING:
        template = TTFFont(FPDF(), path, "", style)
        glyph_order = tuple(template.ttfont.getGlyphOrder())
        template.close()
        return _ParsedFont(template, path.read_bytes(), glyph_order)


def _latin_only(texts: list[str]) -> bool:
    """Whether the Latin cut of Noto Sans draws every character of `texts`."""
    drawn = _latin_fonts(FONT_DIR)[1]
    return all(ord(char) in drawn for text in texts for char in text)


def _strings(value: object) -> Iterator[str]:
    """Every string in a document, its lines, parties and signatures included."""
    if isinstance(value, str):
        yield value
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            yield from _strings(getattr(value, field.name))
    elif isinstance(value, tuple | list):
        for item in value:
            yield from _strings(item)


_CUTTING = threading.Lock()


@cache
def _latin_fonts(font_dir: Path) -> tuple[dict[str, Path], frozenset[int]]:
    """Noto Sans regular and bold cut down to `_LATIN`, written once per process to a temporary
    folder removed at exit, by style; and the characters they draw."""
    with _CUTTING:
        folder = tempfile.TemporaryDirectory(prefix="manzoori-fonts-")
        _FOLDERS.append(folder)  # kept, so the folder lasts as long as the process
        paths: dict[str, Path] = {}
        drawn: set[int] = set()
        for (family, style), name in _FONT_FILES.items():
            if family != SANS:
                continue
            options = subset.Options(notdef_outline=True, layout_features=[])
            font = TTFont(font_dir / name, recalcTimestamp=False)
            cutter = subset.Subsetter(options)
            cutter.populate(unicodes=_LATIN)
            cutter.subset(font)
            paths[style] = Path(folder.name) / name
            font.save(paths[style])
            drawn |= set(font.getBestCmap())
        return paths, frozenset(drawn)


_FOLDERS: list[tempfile.TemporaryDirectory[str]] = []


def _right_to_left(text: str) -> bool:
    """Whether the text's first strong character is written right to left (Unicode's rule for
    a paragraph's direction, as fpdf2 applies it): such text is aligned to the right."""
    for char in text:
        kind = unicodedata.bidirectional(char)
        if kind in ("R", "AL"):
            return True
        if kind == "L":
            return False
    return False


def _line_height(size_pt: float, text: str) -> float:
    leading = _URDU_LEADING if _ARABIC_SCRIPT.search(text) else _LATIN_LEADING
    return size_pt * _PT * leading


def _day(value: date) -> str:
    """ "5 Dec 2026": English month names whatever the process's locale."""
    return f"{value.day} {_MONTHS[value.month - 1]} {value.year}"


def _signed_at(at: datetime) -> str:
    """ "5 Dec 2026 14:05 PKT": the aware time as it was in its own zone."""
    return f"{_day(at.date())} {at:%H:%M %Z}"


def _signature_text(signature: Signature) -> str:
    """ "Ayesha Khan — finance — 5 Dec 2026 14:05 PKT"; no stage under the default policy."""
    parts = (signature.name, signature.stage, _signed_at(signature.at))
    return " — ".join(part for part in parts if part)


def _title(pdf: _PoPdf, doc: PoDocument) -> None:
    with pdf.local_context(text_color=_ACCENT):
        pdf.set_font(SANS, "B", 20)
        pdf.cell(pdf.epw * 0.6, 10, "PURCHASE ORDER")
        pdf.set_font(SANS, "B", 13)
        pdf.cell(0, 10, doc.po_number, align="R", new_x=XPos.LMARGIN, new_y=YPos.NEXT)
    if doc.draft:
        pdf.ln(1)
        with pdf.local_context(text_color=_DRAFT_RED, fill_color=_DRAFT_FILL):
            pdf.set_font(SANS, "B", 10.5)
            pdf.cell(0, 7, DRAFT_MARK, align="C", fill=True, new_x=XPos.LMARGIN, new_y=YPos.NEXT)
    pdf.ln(2)
    pdf.line(pdf.l_margin, pdf.y, pdf.w - pdf.r_margin, pdf.y)
    pdf.ln(3)


# One row of a block: a label (None: the value takes the whole width), the value, bold or not.
_Row = tuple[str | None, str, bool]


def _parties(pdf: _PoPdf, doc: PoDocument) -> None:
    """Buyer and order side by side, then supplier and delivery."""
    buyer = doc.buyer
    buyer_rows: list[_Row] = [(None, buyer.name, True)]
    buyer_rows += [(None, buyer.address, False)] if buyer.address else []
    buyer_rows += [
        (label, value, False)
        for label, value in (("NTN", buyer.ntn), ("STRN", buyer.strn), ("Phone", buyer.phone))
        if value
    ]
    order_rows: list[_Row] = [
        ("PO number", doc.po_number, True),
        ("Version", str(doc.draft_version), False),
        ("Date", _day(doc.issued), False),
        ("Terms version", doc.terms_version, False),
    ]
    supplier_rows: list[_Row] = [
        (None, doc.supplier_name, True),
        ("Supplier id", doc.supplier_id, False),
        ("E-mail", doc.supplier_email, False),
    ]
    delivery_rows: list[_Row] = []
    if doc.ship_to is not None:
        delivery_rows += [("Deliver to", doc.ship_to.name, True)]
        delivery_rows += [("", doc.ship_to.address, False)] if doc.ship_to.address else []
    if doc.delivery_date is not None:
        delivery_rows.append(("Delivery by", _day(doc.delivery_date), False))
    if doc.payment_terms:
        delivery_rows.append(("Payment terms", doc.payment_terms, False))
    _side_by_side(pdf, ("Buyer", buyer_rows), ("Order", order_rows))
    _side_by_side(pdf, ("Supplier", supplier_rows), ("Delivery", delivery_rows))


def _side_by_side(pdf: _PoPdf, left: tuple[str, list[_Row]], right: tuple[str, list[_Row]]) -> None:
    gap = 8.0
    width = (pdf.epw - gap) / 2
    top = pdf.y
    bottoms = [
        _block(pdf, x, top, width, heading, rows)
        for x, (heading, rows) in ((pdf.l_margin, left), (pdf.l_margin + width + gap, right))
        if rows
    ]
    pdf.set_xy(pdf.l_margin, max(bottoms) + 3)


def _block(pdf: _PoPdf, x: float, y: float, width: float, heading: str, rows: list[_Row]) -> float:
    """A heading and its rows in a column at (x, y); returns where the column ends."""
    label_width = 24.0
    pdf.set_xy(x, y)
    with pdf.local_context(text_color=_ACCENT):
        pdf.set_font(SANS, "B", 8)
        pdf.cell(width, 5, heading.upper(), new_x=XPos.LEFT, new_y=YPos.NEXT)
    pdf.line(x, pdf.y, x + width, pdf.y)
    pdf.set_y(pdf.y + 1.2)
    for label, value, bold in rows:
        size = 10.0 if bold and label is None else 9.0
        height = _line_height(size, value)
        pdf.set_x(x)
        value_width = width
        if label is not None:
            with pdf.local_context(text_color=_MUTED):
                pdf.set_font(SANS, "", 8.5)
                pdf.cell(label_width, height, label)
            value_width -= label_width
        pdf.set_font(SANS, "B" if bold else "", size)
        pdf.multi_cell(value_width, height, value, new_x=XPos.LEFT, new_y=YPos.NEXT)
    pdf.set_font(SANS, "", 9.5)
    return pdf.y


def _answer(pdf: _PoPdf, doc: PoDocument) -> None:
    """On page 1, above the lines: the supplier's link, as a link and a QR code, so that a
    printed PO can be answered too. Nothing on a DRAFT, or without a link."""
    if not doc.link or doc.draft:
        return
    _keep_room(pdf, _QR_SIZE + 3)
    top, text_width = pdf.y, pdf.epw - _QR_SIZE - 5
    with pdf.local_context(text_color=_ACCENT):
        pdf.set_font(SANS, "B", 10)
        pdf.set_y(top + 3)
        pdf.multi_cell(text_width, 6, ANSWER_PROMPT, new_x=XPos.LMARGIN, new_y=YPos.NEXT)
        pdf.set_font(SANS, "U", 8)
        # The token is one long word: break it anywhere rather than overflow the column.
        pdf.multi_cell(
            text_width,
            4.5,
            doc.link,
            link=doc.link,
            wrapmode=WrapMode.CHAR,
            new_x=XPos.LMARGIN,
            new_y=YPos.NEXT,
        )
    pdf.ln(1.5)
    with pdf.local_context(text_color=_MUTED):
        pdf.set_font(SANS, "", 8)
        pdf.multi_cell(
            text_width, 4.2, _ANSWER_NOTE, align=Align.L, new_x=XPos.LMARGIN, new_y=YPos.NEXT
        )
    left = pdf.w - pdf.r_margin - _QR_SIZE
    draw_qr(pdf, doc.link, left, top, _QR_SIZE)
    pdf.link(left, top, _QR_SIZE, _QR_SIZE, doc.link)  # the code is clickable on a screen
    pdf.set_font(SANS, "", 9.5)
    pdf.set_xy(pdf.l_margin, max(pdf.y, top + _QR_SIZE) + 2)


def _lines(pdf: _PoPdf, doc: PoDocument) -> None:
    """The lines' table: its heading row again on every page it runs onto; a line's note and
    date under its description, in smaller type, kept on one page with it."""
    bottom, none = CellBordersLayout.BOTTOM, CellBordersLayout.NONE
    size = 8.5
    # One line height for the whole table (fpdf2 has no other): Urdu's if any line needs it.
    urdu = any(_ARABIC_SCRIPT.search(line.description + line.note) for line in doc.lines)
    line_height = size * _PT * (_URDU_LEADING if urdu else _LATIN_LEADING)
    detail_style = FontFace(size_pt=7.5, color=_MUTED)
    pdf.set_font(SANS, "", size)
    with pdf.table(
        col_widths=(10, 30, 68, 16, 26, 30),
        text_align=("RIGHT", "LEFT", "LEFT", "RIGHT", "RIGHT", "RIGHT"),
        v_align=VAlign.T,
        borders_layout=TableBordersLayout.NONE,
        headings_style=FontFace(emphasis="BOLD", color=_ACCENT, fill_color=_HEADING_FILL),
        line_height=line_height,
        padding=(1.2, 1.5),
        markdown=False,  # descriptions and notes come from spreadsheets: printed as they are
    ) as table:
        heading = table.row()
        for text in HEADINGS:
            heading.cell(text, border=bottom)
        for number, line in enumerate(doc.lines, start=1):
            details = _details(line)
            span = 2 if details else 1
            row = table.row()
            row.cell(str(number), rowspan=span, border=bottom)
            row.cell(line.sku, rowspan=span, border=bottom)
            row.cell(
                line.description,
                align=_align(line.description),
                border=none if details else bottom,
                padding=(1.2, 1.5, 0.3, 1.5) if details else None,
            )
            row.cell(f"{line.quantity:,}", rowspan=span, border=bottom)
            row.cell(format_pkr(line.unit_price_paisa), rowspan=span, border=bottom)
            row.cell(format_pkr(line.total_paisa), rowspan=span, border=bottom)
            if details:
                table.row().cell(
                    details,
                    align=_align(details),
                    style=detail_style,
                    border=bottom,
                    padding=(0, 1.5, 1.2, 1.5),
                )
    pdf.set_font(SANS, "", 9.5)


def _details(line: DraftLine) -> str:
    """What goes under a line's description: the requester's note and the date needed by."""
    needed = f"Needed by {_day(line.needed_by)}" if line.needed_by is not None else ""
    return "\n".join(text for text in (line.note, needed) if text)


def _align(text: str) -> Align:
    return Align.R if _right_to_left(text) else Align.L


def _totals_rows(doc: PoDocument) -> list[tuple[str, str]]:
    """The totals under the table, label and amount: "Total" alone when the prices are final;
    else the subtotal, the sales tax of each rate and the total with it."""
    if not doc.taxes:
        return [("Total", format_pkr(doc.total_paisa))]
    taxes = [
        (f"GST {tax.percent}% on {format_pkr(tax.base_paisa)}", format_pkr(tax.tax_paisa))
        for tax in doc.taxes
    ]
    return [
        ("Subtotal", format_pkr(doc.subtotal_paisa)),
        *taxes,
        ("Total (incl. GST)", format_pkr(doc.total_paisa)),
    ]


def _totals(pdf: _PoPdf, doc: PoDocument) -> None:
    rows = _totals_rows(doc)
    height = 6.0
    _keep_room(pdf, height * len(rows) + 4)
    pdf.ln(2)
    pdf.set_font(SANS, "B", 10)  # the total's, the widest
    label_width = 62.0
    amount_width = max(34.0, max(pdf.get_string_width(amount) for _, amount in rows) + 3)
    left = pdf.w - pdf.r_margin - label_width - amount_width
    for index, (label, amount) in enumerate(rows):
        last = index == len(rows) - 1
        if last:
            pdf.line(left, pdf.y, pdf.w - pdf.r_margin, pdf.y)
        pdf.set_x(left)
        pdf.set_font(SANS, "B" if last else "", 10 if last else 9)
        pdf.cell(label_width, height, label, align="R")
        pdf.cell(amount_width, height, amount, align="R", new_x=XPos.LMARGIN, new_y=YPos.NEXT)
    pdf.set_font(SANS, "", 9.5)
    pdf.ln(4)


def _authorisation(pdf: _PoPdf, doc: PoDocument) -> None:
    """Who approved it and when; a draft nobody approved yet says it awaits approval."""
    lines = [_signature_text(s) for s in doc.approvals]
    if not lines and doc.draft:
        lines = ["Awaiting approval"]
    if not lines:
        return
    _keep_room(pdf, 6 + 5.5 * len(lines))
    with pdf.local_context(text_color=_ACCENT):
        pdf.set_font(SANS, "B", 8)
        pdf.cell(0, 5, "AUTHORISED BY", new_x=XPos.LMARGIN, new_y=YPos.NEXT)
    pdf.line(pdf.l_margin, pdf.y, pdf.l_margin + 100, pdf.y)
    pdf.ln(1.2)
    pdf.set_font(SANS, "", 9)
    # "name — stage — time" reads left to right even when a name is written in Urdu.
    pdf.set_text_shaping(pdf.urdu, direction="ltr" if pdf.urdu else None)
    for text in lines:
        pdf.multi_cell(0, _line_height(9, text), text, new_x=XPos.LMARGIN, new_y=YPos.NEXT)
    pdf.set_text_shaping(pdf.urdu)


def _small_print(pdf: _PoPdf, doc: PoDocument) -> None:
    """At the foot of the last page: how to quote the PO, and the key it was sent under."""
    texts = (
        f"Please quote {doc.po_number} on your delivery note and invoice.",
        f"Reference: {doc.key}",
    )
    height = 4.2
    room = height * len(texts) + 2
    _keep_room(pdf, room)
    pdf.set_y(pdf.page_break_trigger - room)
    with pdf.local_context(text_color=_MUTED):
        pdf.set_font(SANS, "", 7.5)
        for text in texts:
            pdf.cell(0, height, text, new_x=XPos.LMARGIN, new_y=YPos.NEXT)


def _keep_room(pdf: _PoPdf, height: float) -> None:
    """A new page unless `height` fits on this one: a block is not split across pages."""
    if pdf.y + height > pdf.page_break_trigger:
        pdf.add_page()

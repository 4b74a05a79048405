"""A QR code on a PDF page: segno makes the matrix, and its dark modules are filled as one
vector path written into fpdf2's page. No image is embedded, so it stays sharp at any zoom or
print size, weighs a few KB, and the same text always gives the same bytes."""

from __future__ import annotations

from collections.abc import Iterable

import segno
from fpdf import FPDF

# The light margin ISO/IEC 18004 asks for around the symbol, in modules: without it a camera
# may not find the code against what is printed next to it.
QUIET_ZONE = 4
# M recovers from about 15% of the symbol smudged or folded, and keeps a supplier link
# (about 100 characters) in a version a phone reads from 28 mm.
_ERROR_LEVEL = "m"


def draw_qr(pdf: FPDF, text: str, x: float, y: float, size: float) -> None:
    """Draw the QR code of `text`, quiet zone included, in the square of side `size` (the
    page's unit) whose top left corner is (x, y)."""
    code = segno.make_qr(text, error=_ERROR_LEVEL, boost_error=False)
    width, _ = code.symbol_size(border=QUIET_ZONE)
    # In PDF's own space (points, from the page's bottom left), written as operators: fpdf2's
    # path objects cost three quarters of a PO's QR code, a thousand rectangles each time.
    step = size / width * pdf.k
    left, top = x * pdf.k, (pdf.h - y) * pdf.k
    # One rectangle per run of dark modules in a row, all in one path filled at once: no
    # hairline seams between modules when a viewer smooths the edges.
    runs = " ".join(
        f"{left + start * step:.3f} {top - (row + 1) * step:.3f} {length * step:.3f} {step:.3f} re"
        for row, modules in enumerate(code.matrix_iter(scale=1, border=QUIET_ZONE))
        for start, length in _dark_runs(modules)
    )
    pdf._out(f"q 0 g {runs} f Q")  # the graphics state saved and restored around it


def _dark_runs(modules: Iterable[int]) -> list[tuple[int, int]]:
    """The runs of dark modules in one row, as (first column, length)."""
    runs: list[tuple[int, int]] = []
    start = None
    for column, dark in enumerate((*modules, 0)):
        if dark and start is None:
            start = column
        elif not dark and start is not None:
            runs.append((start, column - start))
            start = None
    return runs

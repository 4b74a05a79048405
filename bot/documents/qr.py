"""A QR code on a PDF page: segno makes the matrix, fpdf2 fills its dark modules as one vector
path. No image is embedded, so it stays sharp at any zoom or print size, weighs a few KB, and
the same text always gives the same bytes."""

from __future__ import annotations

from collections.abc import Iterable

import segno
from fpdf import FPDF
from fpdf.drawing_primitives import DeviceGray, Transform
from fpdf.enums import PathPaintRule

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
    with pdf.new_path(paint_rule=PathPaintRule.FILL_NONZERO) as path:
        path.style.fill_color = DeviceGray(0)
        # Drawn in modules, scaled and moved into place once: whole numbers, a shorter stream.
        path.transform = Transform.scaling(size / width).translate(x, y)
        # One rectangle per run of dark modules in a row: one path, filled at once, leaves no
        # hairline seams between modules when a viewer smooths the edges.
        for row, modules in enumerate(code.matrix_iter(scale=1, border=QUIET_ZONE)):
            for start, length in _dark_runs(modules):
                path.rectangle(start, row, length, 1)


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

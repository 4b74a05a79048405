"""The PO's PDF as a person sees it: page 1, rasterised by poppler's pdftoppm (`make fonts`
installs it), is drawn for an English PO and for one whose supplier, branch and lines are
written in Urdu; and another process, hashing with another seed, renders the same bytes.
Slow, as every test that starts a process (tests/conftest.py): pdftoppm, another Python.

MANZOORI_WRITE_DOC_IMAGES=1 also writes the two pages, at 80 dpi, to docs/po-en.png and
docs/po-ur.png."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from bot.documents.pdf import render_po_pdf
from tests.helpers.po_documents import english, urdu

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
WRITE = os.environ.get("MANZOORI_WRITE_DOC_IMAGES") == "1"


def _first_page_png(pdf: Path, dpi: int) -> Path:
    """Page 1 of the PDF as a PNG beside it."""
    prefix = pdf.with_name(f"page-{dpi}")
    subprocess.run(
        ["pdftoppm", "-r", str(dpi), "-png", "-f", "1", "-l", "1", "-singlefile", pdf, prefix],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return prefix.with_suffix(".png")


@pytest.mark.parametrize(("make", "name"), [(english, "po-en.png"), (urdu, "po-ur.png")])
def test_page_one_is_drawn(make: object, name: str, tmp_path: Path) -> None:
    assert callable(make)
    pdf = tmp_path / "po.pdf"
    pdf.write_bytes(render_po_pdf(make()))
    with Image.open(_first_page_png(pdf, 60)) as image:
        assert image.size == (497, 702)  # A4 at 60 dpi
        grey = image.convert("L")
        histogram = grey.histogram()
    inked = sum(histogram[:128])  # pixels darker than mid grey: text and rules
    assert inked > 0.01 * sum(histogram), f"{name}: page 1 is (nearly) blank"
    assert histogram[255] > 0.5 * sum(histogram), f"{name}: page 1 is not a white page"
    if WRITE:
        # A palette PNG, as small as it gets: a page of text needs few colours.
        with Image.open(_first_page_png(pdf, 80)) as image:
            image.convert("RGB").quantize(64).save(DOCS / name, optimize=True)
        assert (DOCS / name).stat().st_size < 150_000


def test_another_process_renders_the_same_bytes() -> None:
    script = (
        "import sys\n"
        "from bot.documents.pdf import render_po_pdf\n"
        "from tests.helpers.po_documents import english, urdu\n"
        "sys.stdout.buffer.write(render_po_pdf(english()) + render_po_pdf(urdu()))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env={**os.environ, "PYTHONHASHSEED": "12345"},
        capture_output=True,
        check=True,
        timeout=120,
    )
    here = render_po_pdf(english()) + render_po_pdf(urdu())
    assert hashlib.sha256(done.stdout).hexdigest() == hashlib.sha256(here).hexdigest()

"""The DBOS peer end to end: a real DBOS process on SQLite sending into a real SMTP server."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.peer import PeerError, run_flow
from bot.dev.smtp import running_sink

# The peer needs the bench dependency group (`uv sync --group bench`); without it there is no
# DBOS to measure, which is the bench's concern, not the product's.
pytest.importorskip("dbos")
pytestmark = pytest.mark.slow  # every test spawns a DBOS process

N = 5  # enough for several workflows waiting at once; each run still takes seconds


async def test_every_po_is_mailed_once_with_its_pdf_and_csv(tmp_path: Path) -> None:
    with running_sink() as sink:
        figures = await run_flow("sqlite", None, N, (sink.host, sink.port), str(tmp_path / "a.db"))
        messages = list(sink.messages)
    assert figures.n == N
    assert figures.lifecycles_per_s > 0 and figures.cpu_ms_per_lifecycle > 0
    subjects = sorted(str(message["Subject"]) for message in messages)
    assert subjects == [f"Purchase order PO-{i:06d} from Manzoori" for i in range(N)]
    for message in messages:
        pdf, csv = message.iter_attachments()  # the PDF made by manzoori's own renderer
        assert pdf.get_content_type() == "application/pdf"
        assert pdf.get_content().startswith(b"%PDF-")
        assert csv.get_content_type() == "text/csv"
        assert csv.get_content().startswith('"sku","description"')


async def test_a_run_whose_mail_is_refused_is_not_reported(tmp_path: Path) -> None:
    with running_sink() as sink:
        for _ in range(N):
            sink.script("DATA", "554 5.7.1 rejected")
        with pytest.raises(PeerError, match=r"exited with 1:(.|\n)*SMTPDataError: \(554"):
            await run_flow("sqlite", None, N, (sink.host, sink.port), str(tmp_path / "b.db"))

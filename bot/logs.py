"""What every log line says about where it came from: the Telegram update being handled, and
the PO (its number and job id) being worked on, from context variables each task sets
(`about`, `handling`); and the two formats, text or one JSON object per line
(MANZOORI_LOG_FORMAT). Log messages name keys and ids, never people, addresses or amounts.
"""

from __future__ import annotations

import logging
from contextvars import ContextVar

from pythonjsonlogger.json import JsonFormatter

TEXT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
_UPDATE: ContextVar[int | None] = ContextVar("log_update_id", default=None)
_PO: ContextVar[str | None] = ContextVar("log_po_number", default=None)
_JOB: ContextVar[str | None] = ContextVar("log_job_id", default=None)


def handling(update_id: int) -> None:
    """This task handles Telegram update `update_id` (and no PO, until `about` says)."""
    _UPDATE.set(update_id)
    _PO.set(None)
    _JOB.set(None)


def about(*, po_number: str | None = None, job_id: str | None = None) -> None:
    """This task works on that PO now (a runner's row, a tap's card)."""
    _PO.set(po_number)
    _JOB.set(job_id)


class Fields(logging.Filter):
    """Puts update_id, po_number and job_id on every record (None when not known)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.update_id = _UPDATE.get()
        record.po_number = _PO.get()
        record.job_id = _JOB.get()
        return True


def json_formatter() -> logging.Formatter:
    """One JSON object per line: time, level, logger, message and the fields above."""
    return JsonFormatter(
        "%(asctime)s %(levelname)s %(name)s %(message)s %(update_id)s %(po_number)s %(job_id)s",
        rename_fields={"asctime": "time", "levelname": "level", "name": "logger"},
        timestamp=False,
    )

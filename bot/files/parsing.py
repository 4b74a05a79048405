"""Uploaded files are parsed in a short-lived worker process, never in the bot's own.

The worker is forked from a fork server that has `bot.files.sheets` (and calamine) already
imported, so starting one is cheap. It limits its own address space and CPU time before it
reads a byte, and the parent gives it a wall-clock timeout: a file that makes the parser abort
(calamine is Rust; a panic aborts the process), run out of memory, spin or hang costs only that
upload, which is refused with PARSE_FAILED or PARSE_TIMEOUT. The worker parses hostile bytes,
so what it sends back is not trusted either: it is read with a size cap and unpickled with an
Unpickler that can only build a Table of plain cells, or a refusal sentence.
"""

from __future__ import annotations

import asyncio
import datetime
import io
import logging
import pickle
import resource
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from itertools import chain
from multiprocessing.connection import Connection
from types import NoneType
from typing import TYPE_CHECKING, Any, TypeGuard

from bot.files.sheets import read_csv_text, read_sheet
from bot.words.i18n import N_
from bot.workers import CONTEXT, Worker, renice
from core.drafting.tables import Row, Table
from core.errors import UnreadableSheet

if TYPE_CHECKING:  # the fork server preloads this module: keep its imports few
    from prometheus_client import Histogram

logger = logging.getLogger(__name__)

PARSE_FAILED = N_(
    "This file could not be read safely: save it as CSV, or send fewer rows, and send it again."
)
PARSE_TIMEOUT = N_(
    "Reading this file took too long: save it as CSV, or send fewer rows, and send it again."
)

Reader = Callable[[bytes], Table]


@dataclass(frozen=True)
class Limits:
    """What one worker may use: address space, CPU time, and wall-clock time to answer."""

    # A 5 MB sheet of 10,000 rows needs about 150 MB; the rest is headroom, not permission.
    memory_bytes: int = 1024 * 1024 * 1024
    # Such a sheet parses in well under a second of CPU.
    cpu_seconds: int = 20
    # Beyond the CPU limit: a worker that waits (on a lock, on swap) is killed all the same.
    timeout: float = 30.0


# A Table of 10,000 rows pickles to a few MB; anything far larger did not come from a sheet.
MAX_RESULT_BYTES = 64 * 1024 * 1024


class SheetParser:
    """Parses uploads in isolated workers, at most `limit` at a time across the process."""

    def __init__(
        self, *, limit: int = 2, limits: Limits | None = None, timer: Histogram | None = None
    ) -> None:
        self._slots = asyncio.Semaphore(limit)
        self._limits = limits or Limits()
        self._timer = timer  # each parse's duration once it has a slot (bot/web/metrics.py)

    async def sheet(self, data: bytes) -> Table:
        """A restock sheet (CSV or XLSX) as read_sheet reads it; UnreadableSheet if refused."""
        return await self.run(read_sheet, data)

    async def terms(self, data: bytes) -> Table:
        """A supplier terms CSV as read_csv_text reads it; UnreadableSheet if refused."""
        return await self.run(read_csv_text, data)

    async def run(self, reader: Reader, data: bytes) -> Table:
        """`reader(data)` in a worker; waits for a free slot, never blocks the event loop."""
        async with self._slots:
            with self._timer.time() if self._timer is not None else nullcontext():
                # The waiting (poll, recv, join) happens in a thread; the loop stays free.
                return await asyncio.to_thread(parse_isolated, reader, data, self._limits)


def parse_isolated(reader: Reader, data: bytes, limits: Limits | None = None) -> Table:
    """`reader(data)` in a fresh worker process, for callers without an event loop (the CLI).

    `reader` is a module-level function (it is pickled by name). Raises UnreadableSheet with
    the reader's sentence, PARSE_TIMEOUT, or PARSE_FAILED when the worker died or lied.
    """
    limits = limits or Limits()
    receiver, sender = CONTEXT.Pipe(duplex=False)
    worker = Worker(target=_work, args=(reader, data, sender, limits), daemon=True)
    try:
        worker.start()
        sender.close()  # the worker holds its own copy; EOF now means it is gone
        # poll is True as soon as the worker answers or dies (EOF), whichever comes first.
        if not receiver.poll(limits.timeout):
            logger.warning("sheet worker %s timed out after %.1f s", worker.pid, limits.timeout)
            raise UnreadableSheet(PARSE_TIMEOUT)
        try:
            payload = receiver.recv_bytes(maxlength=MAX_RESULT_BYTES)
        except (EOFError, OSError):  # died without answering, or answered far too much
            worker.join(limits.timeout)
            logger.warning("sheet worker %s failed, exit code %s", worker.pid, worker.exitcode)
            raise UnreadableSheet(PARSE_FAILED) from None
        return _unpacked(payload)
    finally:
        if worker.is_alive():
            worker.kill()
        if worker.pid is not None:
            worker.join()
        receiver.close()


def _work(reader: Reader, data: bytes, sender: Connection, limits: Limits) -> None:
    """In the worker: limit this process, read the file, send back the table or the refusal."""
    # Behind the bot's own process for the CPU: a burst of large uploads being parsed takes
    # what the bot leaves, so taps and replies are not held up behind it on a small machine.
    renice()
    resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
    resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # an abort leaves no core file behind
    result: Table | tuple[str, dict[str, str | int]]
    try:
        result = reader(data)
    except UnreadableSheet as refused:  # its sentence and values, translated by the parent
        result = (refused.text, refused.params)
    # Anything else propagates: the worker exits non-zero and the parent says PARSE_FAILED.
    sender.send_bytes(pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))
    sender.close()


# Everything a Table of cells is built from; pickle opcodes build tuples, frozensets, str,
# numbers, bools and None without asking for a class.
_ALLOWED = {
    ("core.drafting.tables", "Table"): Table,
    ("core.drafting.tables", "Row"): Row,
    ("datetime", "date"): datetime.date,
    ("datetime", "datetime"): datetime.datetime,
    ("datetime", "time"): datetime.time,
    ("datetime", "timedelta"): datetime.timedelta,
    ("builtins", "frozenset"): frozenset,
    ("builtins", "set"): set,
    ("builtins", "tuple"): tuple,
}
_CELL_TYPES = (str, int, float, bool, datetime.date, datetime.time, datetime.timedelta)


class _TableUnpickler(pickle.Unpickler):
    """Builds only the classes a Table is made of; any other global is refused."""

    def find_class(self, module: str, name: str) -> Any:
        """The allowed class, or UnpicklingError."""
        allowed = _ALLOWED.get((module, name))
        if allowed is None:
            raise pickle.UnpicklingError(f"{module}.{name} is not part of a table")
        return allowed


def _unpacked(payload: bytes) -> Table:
    """The worker's answer as a Table, or its refusal raised; PARSE_FAILED if malformed."""
    try:
        result = _TableUnpickler(io.BytesIO(payload)).load()
    except Exception:  # any malformed answer is the same failure
        logger.warning("sheet worker sent an answer that is not a table")
        raise UnreadableSheet(PARSE_FAILED) from None
    if _refusal(result):
        text, params = result
        try:
            refused = UnreadableSheet(text, **params)
        except (KeyError, IndexError, ValueError):  # its placeholders and values disagree
            logger.warning("sheet worker sent a refusal that does not fill in")
            raise UnreadableSheet(PARSE_FAILED) from None
        raise refused
    if not _well_formed(result):
        logger.warning("sheet worker sent a table of the wrong shape")
        raise UnreadableSheet(PARSE_FAILED)
    assert isinstance(result, Table)
    return result


def _refusal(result: object) -> TypeGuard[tuple[str, dict[str, str | int]]]:
    """Whether the worker's answer is a refusal: a sentence and the values of its placeholders."""
    if not (isinstance(result, tuple) and len(result) == 2):
        return False
    text, params = result
    return (
        isinstance(text, str)
        and isinstance(params, dict)
        and all(isinstance(k, str) and type(v) in (str, int) for k, v in params.items())
    )


def _well_formed(table: object) -> bool:
    """Whether the object is a Table exactly as a reader builds one: rows of plain cells."""
    if type(table) is not Table or not isinstance(table.rows, tuple):
        return False
    if type(table.decimal_comma) is not bool or type(table.more_rows) is not bool:
        return False
    rows = table.rows
    if not all(
        type(row) is Row
        and type(row.number) is int
        and isinstance(row.cells, tuple)
        and isinstance(row.formulas, frozenset)
        for row in rows
    ):
        return False
    # Every cell and formula column checked by its type, each type once: a 10,000-row table
    # has a handful of them, and isinstance(value, T) is issubclass(type(value), T).
    cell_types = set(map(type, chain.from_iterable(row.cells for row in rows)))
    column_types = set(map(type, chain.from_iterable(row.formulas for row in rows)))
    return all(t is NoneType or issubclass(t, _CELL_TYPES) for t in cell_types) and (
        column_types <= {int}
    )

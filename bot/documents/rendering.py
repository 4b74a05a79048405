"""PO documents rendered in long-lived worker processes (bot.workers), never in the caller's.

A render is about 60 ms of pure Python (fpdf2 subsetting fonts); in a thread it would hold the
GIL in 5 ms slices while a burst of taps waits on the event loop. The workers import fpdf2 and
load the fonts once, run reniced behind the bot, and render for the whole process (the
outbox's e-mails and the approvers' copies alike). A render is a pure function of the
document, so after a worker died (killed, out of memory) the pool is replaced and the render
made again, once; a second failure is raised to the caller, whose pass retries later.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import TypeVar

from bot.workers import CONTEXT, exit_with, renice
from core.purchasing.po_document import PoDocument

T = TypeVar("T")

# Renders at once: a burst's PDFs take both cores of a small server, while the bot, ahead of
# the reniced workers, still answers its taps first.
WORKERS = 2
_lock = threading.Lock()  # the pool is the process's, whichever event loop asks
_pool: ProcessPoolExecutor | None = None


async def render(document: PoDocument) -> bytes:
    """The PDF of `document` (bot.documents.pdf.render_po_pdf), made in a worker. Raises
    what the render raises (ConfigError for a missing font), or BrokenProcessPool when a
    fresh pool's worker died too."""
    return await _in_worker(_render, document)


async def prepare() -> None:
    """Start the workers and parse their fonts (pdf.prepare), so the first renders wait for
    neither."""
    # The pool starts a worker for each task that finds none idle: one task each.
    await asyncio.gather(*(_in_worker(_prepare) for _ in range(WORKERS)))


def worker_pids() -> list[int]:
    """The process ids of the workers running now (the benchmark counts their CPU time)."""
    with _lock:
        return [] if _pool is None else list(_pool._processes)


async def _in_worker(work: Callable[..., T], *args: object) -> T:
    loop = asyncio.get_running_loop()
    pool = _current()
    try:
        return await loop.run_in_executor(pool, work, *args)
    except BrokenProcessPool:
        _discard(pool)
        return await loop.run_in_executor(_current(), work, *args)


def _current() -> ProcessPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            _pool = ProcessPoolExecutor(
                WORKERS, mp_context=CONTEXT, initializer=_started, initargs=(os.getpid(),)
            )
        return _pool


def _discard(pool: ProcessPoolExecutor) -> None:
    global _pool
    with _lock:
        if _pool is pool:
            _pool = None
    pool.shutdown(wait=False, cancel_futures=True)


# In the worker; the parent refers to these by name and never imports fpdf2 (bot.documents).


def _started(parent: int) -> None:
    renice()
    exit_with(parent)


def _render(document: PoDocument) -> bytes:
    from bot.documents.pdf import render_po_pdf

    return render_po_pdf(document)


def _prepare() -> None:
    from bot.documents import pdf

    pdf.prepare()

"""PO documents are rendered in worker processes (bot.documents.rendering): the same bytes as
a render in this process, never fpdf2 in the caller, behind the bot for the CPU; a worker that
dies is replaced without the caller seeing it, and none outlives a killed parent."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from bot.documents import rendering
from bot.documents.pdf import render_po_pdf
from bot.workers import WORKER_NICENESS
from tests.helpers.po_documents import english, urdu

ROOT = Path(__file__).resolve().parents[2]


async def test_the_workers_render_the_same_bytes_in_other_processes() -> None:
    document = urdu()
    assert await rendering.render(document) == render_po_pdf(document)
    workers = rendering.worker_pids()
    assert workers and os.getpid() not in workers
    assert await rendering._in_worker(os.getpid) in workers


async def test_a_process_starts_every_worker_with_its_fonts_parsed() -> None:
    rendering._discard(rendering._current())  # as a process starts: no pool yet
    await rendering.prepare()
    assert len(rendering.worker_pids()) == rendering.WORKERS


async def test_the_workers_run_behind_their_parent() -> None:
    niceness = await rendering._in_worker(os.nice, 0)
    assert niceness == min(19, os.nice(0) + WORKER_NICENESS)  # 19: the lowest


async def test_a_killed_worker_is_replaced_and_the_render_made_again() -> None:
    document = english()
    first = await rendering.render(document)
    killed = rendering.worker_pids()
    for pid in killed:
        os.kill(pid, signal.SIGKILL)
    assert await rendering.render(document) == first
    assert not set(rendering.worker_pids()) & set(killed)


async def test_a_render_that_fails_raises_its_own_error() -> None:
    with pytest.raises(AttributeError):
        await rendering.render(None)  # type: ignore[arg-type]
    assert await rendering.render(english()) == render_po_pdf(english())  # the worker lives on


@pytest.mark.slow
def test_the_caller_never_imports_fpdf2() -> None:
    script = (
        "import asyncio, sys\n"
        "from bot.documents import rendering\n"
        "from tests.helpers.po_documents import english\n"
        "pdf = asyncio.run(rendering.render(english()))\n"
        "print(pdf[:5].decode(), 'fpdf' in sys.modules, 'fontTools' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=180,
    )
    assert done.stdout.split() == ["%PDF-", "False", "False"], done.stderr


@pytest.mark.slow
def test_the_workers_end_with_a_killed_parent() -> None:
    script = (
        "import asyncio, os, signal\n"
        "from bot.documents import rendering\n"
        "from tests.helpers.po_documents import english\n"
        "async def main():\n"
        "    await rendering.render(english())\n"
        "    await rendering.prepare()\n"
        "    print(*rendering.worker_pids(), flush=True)\n"
        "    os.kill(os.getpid(), signal.SIGKILL)  # as the OOM killer would\n"
        "asyncio.run(main())\n"
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    # The workers hold the parent's stdout too (inherited through the fork server): the pipe
    # ends, and communicate returns, only once every one of them has exited.
    out, _ = parent.communicate(timeout=180)  # niced workers are slow on a busy machine
    assert parent.returncode == -signal.SIGKILL
    assert len(out.split()) == rendering.WORKERS  # they had started

"""Worker processes for CPU-heavy work the bot's own process must not do: parsing uploads
(bot.files.parsing) and rendering PO documents (bot.documents.rendering).

Work done in a thread of the bot's process holds the GIL: while fpdf2 subsets a PO's fonts,
every tap waiting on the event loop waits too, a few milliseconds at a time, for as long as the
render runs. In a process of its own, reniced below the bot, the work takes the CPU the bot
leaves. Workers are forked from one fork server per process; they do not re-run the parent's
`__main__` (for `manzoori` that is the whole CLI and bot, over a second to import), only the
module of the function they run.
"""

from __future__ import annotations

import io
import os
import select
import threading
from multiprocessing import forkserver, popen_forkserver, process, reduction, spawn, util
from multiprocessing.context import ForkServerContext, set_spawning_popen
from typing import Any

# How much lower than the bot a worker runs (nice(2): 0 is the default, 19 the lowest).
WORKER_NICENESS = 10


class _WorkerPopen(popen_forkserver.Popen):
    """The fork server's Popen, except that the worker does not re-run the parent's __main__."""

    def _launch(self, process_obj: Any) -> None:
        prep_data = spawn.get_preparation_data(process_obj._name)
        prep_data.pop("init_main_from_path", None)
        prep_data.pop("init_main_from_name", None)
        buffer = io.BytesIO()
        set_spawning_popen(self)
        try:
            reduction.dump(prep_data, buffer)
            reduction.dump(process_obj, buffer)
        finally:
            set_spawning_popen(None)
        fds = self._fds  # type: ignore[attr-defined]  # set by popen_forkserver.Popen.__init__
        self.sentinel, writer = forkserver.connect_to_new_process(fds)
        # As the stdlib does: a duplicate of the data pipe's write end is the parent's
        # sentinel for the child, closed when this Popen is collected.
        parent_writer = os.dup(writer)
        close_fds = util.close_fds  # type: ignore[attr-defined]  # not in typeshed's util
        self.finalizer = util.Finalize(self, close_fds, (parent_writer, self.sentinel))
        with open(writer, "wb", closefd=True) as stream:
            stream.write(buffer.getbuffer())
        self.pid = forkserver.read_signed(self.sentinel)


class Worker(process.BaseProcess):
    """A fork-server process started through _WorkerPopen."""

    _start_method = "forkserver"

    @staticmethod
    def _Popen(process_obj: Any) -> _WorkerPopen:  # the name multiprocessing calls
        return _WorkerPopen(process_obj)


class _WorkerContext(ForkServerContext):
    """The fork-server context whose processes are Workers (for ProcessPoolExecutor)."""

    Process = Worker  # type: ignore[assignment]  # a Worker is the context's kind of process


CONTEXT = _WorkerContext()
# The fork server imports the sheet readers once, whichever worker starts it: every parse
# worker is forked with them loaded. The document renderer imports fpdf2 in its own
# long-lived workers instead (bot.documents.rendering), so parse workers stay small.
CONTEXT.set_forkserver_preload(["bot.files.parsing"])


def renice() -> None:
    """In a worker: run behind the bot's own process for the CPU."""
    os.nice(WORKER_NICENESS)


def exit_with(pid: int) -> None:
    """In a long-lived worker: exit as soon as process `pid` (the bot that started it) has
    ended, however it ended. A worker killed with its bot by SIGKILL (an OOM kill, a crash
    test) would otherwise wait on its task queue forever, holding the bot's stdout and
    stderr open."""
    try:
        watched = os.pidfd_open(pid)
    except ProcessLookupError:  # ended already
        os._exit(0)

    def watch() -> None:
        select.select([watched], [], [])  # readable once the process has ended
        os._exit(0)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()

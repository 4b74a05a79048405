"""The DBOS Transact peer: the same purchase-order flow on a durable-workflow library, measured.

`run_flow` runs `bench.peer_flow` (the flow written with DBOS) in a subprocess against a given SMTP
server and database, and returns its figures; the lifecycle section divides manzoori's throughput
by them (bench.lifecycle, which starts the SMTP server and checks what it received).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

# The subprocess finishes in about a minute for N = 2,000 on two busy cores; this only bounds a
# run that hangs (a lost approval, a dead SMTP server), well beyond any honest run.
RUN_TIMEOUT_S = 900.0
# `python -m bench.peer_flow` must find the bench package whatever the caller's directory.
REPO_ROOT = Path(__file__).resolve().parent.parent
STDERR_TAIL = 2_000  # characters of the child's stderr kept in an error: the traceback's end


class PeerError(Exception):
    """The DBOS peer run failed or did not complete every lifecycle."""


@dataclass(frozen=True)
class PeerFigures:
    """What one peer run measured: completed lifecycles over the run's wall and CPU time."""

    lifecycles_per_s: float
    cpu_ms_per_lifecycle: float
    n: int


def flow_command(
    kind: str, url: str | None, n: int, smtp: tuple[str, int], sqlite_path: str
) -> list[str]:
    """The command line that runs the peer flow once in its own Python process."""
    command = [sys.executable, "-m", "bench.peer_flow", "--kind", kind, "--n", str(n)]
    command += ["--smtp", f"{smtp[0]}:{smtp[1]}", "--path", sqlite_path]
    if url is not None:
        command += ["--url", url]
    return command


def parse_figures(stdout: str, n: int) -> PeerFigures:
    """The figures from the child's JSON line, once every lifecycle is known to have completed."""
    lines = stdout.strip().splitlines()
    if not lines:
        raise PeerError("the peer printed no figures")
    report = json.loads(lines[-1])
    # Both counts come from what the workflows recorded: their results and the PO rows.
    if report["workflows_sent"] != n or report["rows_sent"] != n:
        raise PeerError(
            f"{report['workflows_sent']} workflows and {report['rows_sent']} rows "
            f"reached SENT of {n}"
        )
    wall_s, cpu_s = float(report["wall_s"]), float(report["cpu_s"])
    return PeerFigures(lifecycles_per_s=n / wall_s, cpu_ms_per_lifecycle=cpu_s * 1000 / n, n=n)


async def run_flow(
    kind: str, url: str | None, n: int, smtp: tuple[str, int], sqlite_path: str
) -> PeerFigures:
    """Run n DBOS lifecycles on `kind` ("sqlite" or "postgres") into the SMTP server `smtp`.

    `sqlite_path` is the app's SQLite file (DBOS's system file goes beside it); for "postgres",
    `url` names an existing database beside which `<db>_peer` and `<db>_peer_dbos_sys` are
    recreated. CPU is the peer process's own, over the measured window only.
    """
    if kind not in ("sqlite", "postgres"):
        raise ValueError(f"kind must be sqlite or postgres, not {kind!r}")
    if kind == "postgres" and url is None:
        raise ValueError("the postgres peer needs a url")
    process = await asyncio.create_subprocess_exec(
        *flow_command(kind, url if kind == "postgres" else None, n, smtp, sqlite_path),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        stdout, stderr = await asyncio.wait_for(process.communicate(), RUN_TIMEOUT_S)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise PeerError(f"the {kind} peer took over {RUN_TIMEOUT_S:.0f} s") from None
    if process.returncode != 0:
        tail = stderr.decode(errors="replace")[-STDERR_TAIL:]
        raise PeerError(f"the {kind} peer exited with {process.returncode}:\n{tail}")
    return parse_figures(stdout.decode(), n)

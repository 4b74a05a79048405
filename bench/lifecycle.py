"""Lifecycle throughput on SQLite and PostgreSQL, beside the database's commit floor and the
DBOS peer (bench.peer), and the same lifecycle against an SMTP server with a relay's pace."""

from __future__ import annotations

import logging
import sys

from bench.common import Context, Result
from bench.databases import Database, databases, sqlite_database
from bench.floor import measure_floor
from bench.flow import LifecycleFigures, run_lifecycles
from bench.peer import run_flow
from bench.smtp_server import SinkProcess

THROUGHPUT = "Lifecycle throughput"
FLOOR = "Commit floor"
PEER = "DBOS peer"
RELAY = "200 ms SMTP relay"

# The N (at least 2,000) and a smoke run's; the relay's N is smaller because each send
# waits 200 ms: at the target's 40 sends/s, 300 take under 8 s.
N_FULL, N_QUICK = 2_000, 30
# The peer's N: its rate is as steady as manzoori's, and at its 15-25 lifecycles/s on two cores
# 2,000 would take minutes per database, most of the bench's time.
PEER_N_FULL, PEER_N_QUICK = 1_000, 30
RELAY_N_FULL, RELAY_N_QUICK = 300, 15
# Seconds the floor commits for: long enough for thousands of commits, short beside the rest.
FLOOR_SECONDS_FULL, FLOOR_SECONDS_QUICK = 2.0, 0.3
RELAY_DELAY_SECONDS = 0.2  # "a real relay that answers in 200–500 ms": its fast end

# The targets.
CPU_MS_TARGET = 4.0
FLOOR_SHARE_TARGET = 0.5
PEER_RATIO_TARGET = 2.0  # issue 27: the peer's send renders the same PDF with our code
RELAY_SENDS_TARGET = 40.0


async def run(ctx: Context) -> list[Result]:
    """Every lifecycle row: per database the flow, its floor and the peer; then the relay."""
    logging.getLogger("bot.outbox").setLevel(logging.WARNING)  # one INFO line per send
    n = N_QUICK if ctx.quick else N_FULL
    results: list[Result] = []
    async with SinkProcess(host=ctx.smtp_host) as sink:
        for db in databases(ctx.sqlite_dir, ctx.postgres_url, "manzoori"):
            figures = await run_lifecycles(db, n, sink)
            results.append(_throughput_row(db, figures))
            results.append(await _floor_row(db, figures, ctx))
            results.append(await _peer_row(db, figures, sink, ctx))
    if ctx.postgres_url is None:
        note = "PostgreSQL not reachable or turned off (BENCH_POSTGRES_URL)"
        results.append(Result(THROUGHPUT, "manzoori, PostgreSQL", {}, notes=note))
    async with SinkProcess(data_delay=RELAY_DELAY_SECONDS, host=ctx.smtp_host) as slow:
        relay_n = RELAY_N_QUICK if ctx.quick else RELAY_N_FULL
        relay = await run_lifecycles(sqlite_database(ctx.sqlite_dir, "relay"), relay_n, slow)
        results.append(_relay_row(relay))
    return results


def _throughput_row(db: Database, f: LifecycleFigures) -> Result:
    cpu = f.cpu_ms_per_lifecycle
    figures = {
        "N": str(f.n),
        "lifecycles/s": f"{f.lifecycles_per_s:.1f}",
        "draft/s": f"{f.rate(f.phases.draft):.1f}",
        "approve/s": f"{f.rate(f.phases.approve):.1f}",
        "send/s": f"{f.rate(f.phases.send):.1f}",
        "commits/lifecycle": f"{f.commits_per_lifecycle:.2f}",
        "statements/lifecycle": f"{f.statements_per_lifecycle:.1f}",
        "CPU ms/lifecycle": f"{cpu:.1f}",
    }
    target = f"CPU ≤ {CPU_MS_TARGET:g} ms/lifecycle"
    return Result(THROUGHPUT, f"manzoori, {db.label}", figures, target, cpu <= CPU_MS_TARGET)


async def _floor_row(db: Database, f: LifecycleFigures, ctx: Context) -> Result:
    seconds = FLOOR_SECONDS_QUICK if ctx.quick else FLOOR_SECONDS_FULL
    floor = await measure_floor(db, seconds)
    floor_rate = floor.lifecycles_per_s(f.commits_per_lifecycle)
    share = f.lifecycles_per_s / floor_rate
    figures = {
        "commits/s": f"{floor.commits_per_s:.0f}",
        "floor lifecycles/s": f"{floor_rate:.1f}",
        "manzoori lifecycles/s": f"{f.lifecycles_per_s:.1f}",
        "manzoori/floor": f"{share:.0%}",
    }
    target = f"≥ {FLOOR_SHARE_TARGET:.0%} of the floor"
    notes = f"one-row UPDATE per transaction for {seconds:g} s ÷ {f.commits_per_lifecycle:.2f}"
    met = share >= FLOOR_SHARE_TARGET
    return Result(FLOOR, db.label, figures, target, met, notes)


async def _peer_row(db: Database, f: LifecycleFigures, sink: SinkProcess, ctx: Context) -> Result:
    target = f"≥ {PEER_RATIO_TARGET:g}× DBOS"
    name = f"DBOS Transact, {db.label}"
    await sink.reset()
    path = f"{ctx.sqlite_dir}/peer.sqlite"
    url = db.url if db.kind == "postgres" else None
    try:  # DBOS runs in a process of its own (bench.peer_flow)
        peer = await run_flow(
            db.kind, url, PEER_N_QUICK if ctx.quick else PEER_N_FULL, sink.address, path
        )
    except Exception as exc:  # the peer's failure is reported in its row, not hidden
        print(f"bench: the DBOS peer failed on {db.label}: {exc!r}", file=sys.stderr)
        return Result(PEER, name, {}, target, None, f"peer failed: {type(exc).__name__}: {exc}")
    accepted = await sink.accepted()
    ratio = f.lifecycles_per_s / peer.lifecycles_per_s
    figures = {
        "N": str(peer.n),
        "peer lifecycles/s": f"{peer.lifecycles_per_s:.1f}",
        "peer CPU ms/lifecycle": f"{peer.cpu_ms_per_lifecycle:.1f}",
        "manzoori lifecycles/s": f"{f.lifecycles_per_s:.1f}",
        "manzoori/peer": f"{ratio:.2f}×",
    }
    notes = "" if accepted.distinct == peer.n else f"the server took {accepted.distinct} mails"
    return Result(PEER, name, figures, target, ratio >= PEER_RATIO_TARGET, notes)


def _relay_row(f: LifecycleFigures) -> Result:
    sends = f.rate(f.phases.send)
    figures = {
        "N": str(f.n),
        "sends/s": f"{sends:.1f}",
        "lifecycles/s": f"{f.lifecycles_per_s:.1f}",
    }
    target = f"≥ {RELAY_SENDS_TARGET:g} sends/s from one runner"
    notes = f"SQLite; the server answers each DATA after {RELAY_DELAY_SECONDS * 1000:.0f} ms"
    return Result(
        RELAY, "manzoori, one runner", figures, target, sends >= RELAY_SENDS_TARGET, notes
    )

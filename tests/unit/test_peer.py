"""The DBOS peer's driver side: its command line and how it reads, and refuses, a run's figures."""

from __future__ import annotations

import json

import pytest

from bench.peer import PeerError, PeerFigures, flow_command, parse_figures, run_flow


def report(**overrides: object) -> str:
    """The child's stdout: a log line, then its JSON figures (the last line is the one read)."""
    figures = {"n": 200, "wall_s": 4.0, "cpu_s": 3.0, "workflows_sent": 200, "rows_sent": 200}
    return "DBOS noise\n" + json.dumps({**figures, **overrides}) + "\n"


def test_figures_are_lifecycles_over_wall_and_cpu_over_n() -> None:
    assert parse_figures(report(), 200) == PeerFigures(
        lifecycles_per_s=50.0, cpu_ms_per_lifecycle=15.0, n=200
    )


@pytest.mark.parametrize(
    "overrides",
    [
        {"workflows_sent": 199},  # a workflow ended without sending (its approval expired)
        {"rows_sent": 199},  # a PO row never reached SENT
        {"workflows_sent": 201, "rows_sent": 201},  # more than were started: a stale database
    ],
)
def test_a_run_that_did_not_complete_every_lifecycle_is_refused(
    overrides: dict[str, object],
) -> None:
    with pytest.raises(PeerError, match="of 200"):
        parse_figures(report(**overrides), 200)


def test_a_run_that_printed_nothing_is_refused() -> None:
    with pytest.raises(PeerError, match="no figures"):
        parse_figures("\n", 200)


def test_the_command_names_the_database_only_for_postgres() -> None:
    sqlite = flow_command("sqlite", None, 10, ("127.0.0.1", 2525), "/tmp/p.sqlite")
    postgres = flow_command("postgres", "postgresql+asyncpg://h/b", 10, ("h", 25), "/tmp/p")
    assert sqlite[1:] == [
        *("-m", "bench.peer_flow", "--kind", "sqlite", "--n", "10"),
        *("--smtp", "127.0.0.1:2525", "--path", "/tmp/p.sqlite"),
    ]
    assert postgres[-2:] == ["--url", "postgresql+asyncpg://h/b"]


@pytest.mark.parametrize(
    ("kind", "url"),
    [
        ("mysql", None),  # not a database the peer knows
        ("postgres", None),  # PostgreSQL with nowhere to create its databases
    ],
)
async def test_a_run_that_cannot_be_set_up_is_refused_before_it_starts(
    kind: str, url: str | None
) -> None:
    with pytest.raises(ValueError):
        await run_flow(kind, url, 10, ("127.0.0.1", 2525), "/tmp/p.sqlite")

"""`python -m bench --quick`: the benchmark harness runs end to end and prints real figures.

A smoke run, not a timed test: it asserts that every section ran and that every figure is a
number, never how fast anything was.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from bench.databases import reachable
from tests.helpers.store import POSTGRES_URL

ROOT = Path(__file__).resolve().parents[2]
# The sections bench.lifecycle always prints; bench.bot's join them when that module is there.
LIFECYCLE_SECTIONS = ("Lifecycle throughput", "Commit floor", "DBOS peer", "200 ms SMTP relay")
# A figure: a count, a rate, a share or a ratio ("48.1", "2000", "1,000", "13%", "1.25×").
NUMBER = re.compile(r"^\d{1,3}(,\d{3})*(\.\d+)?(%|×)?$|^\d+(\.\d+)?(%|×)?$")


def _bench_postgres_url() -> str:
    """A database of the bench's own beside the suite's, or "" (SQLite only) without one."""
    if not POSTGRES_URL:
        return ""
    parsed = make_url(POSTGRES_URL)
    url = parsed.set(database=f"{parsed.database}_bench").render_as_string(hide_password=False)
    assert asyncio.run(reachable(url)), f"PostgreSQL at {POSTGRES_URL} is not usable"
    return url


def _tables(output: str) -> dict[str, list[dict[str, str]]]:
    """The printed report: section -> rows, each row column -> cell."""
    tables: dict[str, list[dict[str, str]]] = {}
    section, header = "", []
    for line in output.splitlines():
        if line.startswith("## "):
            section, header = line[3:].strip(), []
            tables[section] = []
        elif line.startswith("|") and not line.startswith("|---"):
            cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
            if not header:
                header = cells
            else:
                tables[section].append(dict(zip(header, cells, strict=True)))
    return tables


@pytest.mark.slow
def test_quick_bench_prints_every_section_with_numbers() -> None:
    env = {**os.environ, "BENCH_POSTGRES_URL": _bench_postgres_url()}
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--no-write"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,  # a hang guard: about 100 s alone, several times that beside the suite
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Machine: ")
    tables = _tables(done.stdout)
    assert set(LIFECYCLE_SECTIONS) <= set(tables)
    labels = ["SQLite", "PostgreSQL"] if POSTGRES_URL else ["SQLite"]
    names = [row[""] for row in tables["Lifecycle throughput"]]
    assert all(f"manzoori, {label}" in names for label in labels), names
    for section, rows in tables.items():
        assert rows, f"{section} has no rows"
        for row in rows:
            figures = {k: v for k, v in row.items() if k not in ("", "target", "met", "notes")}
            if not any(figures.values()):  # a row that could not run says why
                assert row["notes"], f"{section} / {row['']} has neither figures nor a note"
                continue
            for column, value in figures.items():
                assert value == "" or NUMBER.match(value), (section, row[""], column, value)
            assert row["met"] in ("yes", "**no**", "–")
    # The rows this tree always measures carry figures, not only notes.
    for row in tables["Lifecycle throughput"] + tables["Commit floor"]:
        if row[""].endswith(tuple(labels)):
            assert NUMBER.match(row.get("lifecycles/s") or row["floor lifecycles/s"])
    assert NUMBER.match(tables["200 ms SMTP relay"][0]["sends/s"])
    # What the libraries cost alone: taps, an e-mail, a statement, and a lifecycle's sum.
    floor = {row[""]: row for row in tables["Library floor"]}
    assert len(floor) == 4, floor
    assert all(NUMBER.match(row.get("CPU ms each") or row["CPU µs each"]) for row in floor.values())

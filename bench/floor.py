"""The database's own commit floor through manzoori's driver stack: one small UPDATE of one
row per transaction, as fast as one caller can go."""

from __future__ import annotations

import time
from dataclasses import dataclass

from sqlalchemy import text

from bench.databases import Database
from store.engine import make_engine

# A table of the bench's own beside manzoori's, so the floor writes the same file or database.
_TABLE = "bench_floor"


@dataclass(frozen=True)
class Floor:
    """How many one-row UPDATE transactions committed in how many seconds."""

    commits: int
    seconds: float

    @property
    def commits_per_s(self) -> float:
        """The raw commit rate."""
        return self.commits / self.seconds

    def lifecycles_per_s(self, commits_per_lifecycle: float) -> float:
        """The lifecycle rate the commit rate alone allows."""
        return self.commits_per_s / commits_per_lifecycle


async def measure_floor(db: Database, seconds: float) -> Floor:
    """Commit one-row UPDATEs on `db` (already migrated) for about `seconds`."""
    # make_engine: SQLite in WAL with synchronous=FULL and BEGIN IMMEDIATE, as the store runs.
    engine = make_engine(db.url)
    try:
        async with engine.begin() as conn:
            await conn.execute(text(f"DROP TABLE IF EXISTS {_TABLE}"))
            await conn.execute(text(f"CREATE TABLE {_TABLE} (id INTEGER PRIMARY KEY, n INTEGER)"))
            await conn.execute(text(f"INSERT INTO {_TABLE} (id, n) VALUES (1, 0)"))  # noqa: S608
        update = text(f"UPDATE {_TABLE} SET n = n + 1 WHERE id = :id")  # noqa: S608 - a constant
        commits = 0
        start = time.perf_counter()
        deadline = start + seconds
        while time.perf_counter() < deadline:
            async with engine.begin() as conn:
                await conn.execute(update, {"id": 1})
            commits += 1
        elapsed = time.perf_counter() - start
        async with engine.begin() as conn:
            n = (await conn.execute(text(f"SELECT n FROM {_TABLE} WHERE id = 1"))).scalar_one()  # noqa: S608
            await conn.execute(text(f"DROP TABLE {_TABLE}"))
        if n != commits:
            raise RuntimeError(f"the floor counted {commits} commits but the row says {n}")
        return Floor(commits, elapsed)
    finally:
        await engine.dispose()

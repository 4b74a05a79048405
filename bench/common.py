"""What every benchmark shares: the run's context and one result row."""
from __future__ import annotations
from dataclasses import dataclass, field

@dataclass(frozen=True)
class Context:
    quick: bool                 # a smoke run: small N, seconds not minutes
    sqlite_dir: str             # a fresh temporary directory for SQLite files
    postgres_url: str | None    # postgresql+asyncpg://... of a database the bench may wipe, or None
    smtp_host: str = "127.0.0.1"

@dataclass(frozen=True)
class Result:
    section: str                # "Lifecycle throughput", "Tap to answer", ...
    name: str                   # the row, e.g. "manzoori, SQLite"
    figures: dict[str, str]     # column -> formatted value, e.g. {"lifecycles/s": "48.1"}
    target: str = ""            # the target for this row, as text ("≥ 5× DBOS")
    met: bool | None = None     # whether the target is met; None when there is none
    notes: str = ""

"""The shell's clock: the one place that reads the time (core gets it as an argument)."""

from __future__ import annotations

from datetime import UTC, datetime


def utcnow() -> datetime:
    """Now, in UTC."""
    return datetime.now(UTC)

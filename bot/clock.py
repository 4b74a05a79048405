"""The shell's clock, and what else a runner reads from its surroundings: the one place that
reads the time (core gets it as an argument)."""

from __future__ import annotations

import os
import random
import socket
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo

from core.purchasing.submissions import Numbering


def utcnow() -> datetime:
    """Now, in UTC."""
    return datetime.now(UTC)


def numbering(now: datetime, tz: tzinfo) -> Numbering:
    """How POs made `now` are named: the year in MANZOORI_TIMEZONE, and fresh random job ids."""
    return Numbering(now.astimezone(tz).year, lambda: str(uuid.uuid4()))


def process_name() -> str:
    """This process, as leases name their owner: host and pid."""
    return f"{socket.gethostname()}:{os.getpid()}"


@dataclass(frozen=True)
class Runtime:
    """Who a runner is (its lease owner), its clock and its dice; tests pass fixed ones."""

    owner: str = field(default_factory=process_name)
    now: Callable[[], datetime] = utcnow
    rand: Callable[[], float] = random.random  # the jitter of retry delays

    @classmethod
    def of_process(cls, role: str = "") -> Runtime:
        """This process's runner of `role` ("" for the outbox), on the real clock."""
        return cls(f"{process_name()}:{role}" if role else process_name())

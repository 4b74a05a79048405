"""The runners' heartbeats behind /healthz: when each loop last completed a pass, and what the bot
works without that is failing now (the mailbox)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

# A runner is healthy while its last completed pass is at most this many poll intervals old.
STALE_AFTER_POLLS = 3


@dataclass
class Heartbeats:
    """The monotonic time of each named runner's last completed pass; `clock` for tests."""

    clock: Callable[[], float] = time.monotonic
    _last: dict[str, float] = field(default_factory=dict)
    _troubles: dict[str, str] = field(default_factory=dict)

    def expect(self, name: str) -> None:
        """Count `name` as started now, so it has three intervals for its first pass."""
        self._last.setdefault(name, self.clock())

    def beat(self, name: str) -> None:
        """`name` has just completed a pass."""
        self._last[name] = self.clock()

    def trouble(self, name: str, reason: str | None) -> None:
        """`name`, a helper the bot works without (the mailbox), is failing for `reason`, or
        (None) works again: /healthz says degraded, never unhealthy, while it fails."""
        if reason is None:
            self._troubles.pop(name, None)
        else:
            self._troubles[name] = reason

    def troubles(self) -> dict[str, str]:
        """What is failing now that the bot works without, and why."""
        return dict(sorted(self._troubles.items()))

    def ages(self) -> dict[str, float]:
        """Seconds since each expected runner's last pass (or its start)."""
        now = self.clock()
        return {name: now - at for name, at in sorted(self._last.items())}

"""Ports for the servers a test starts itself (the bot's webhook server)."""

from __future__ import annotations

import random
import socket
from pathlib import Path


def _ephemeral() -> range:
    """The ports the kernel hands out for outgoing connections and for bind(("", 0))."""
    try:
        low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    except (OSError, ValueError):
        low, high = 32768, 60999  # Linux's default
    return range(low, high + 1)


# A port bind(0) found free is free only until the machine opens its next connection: the
# bot's own to the emulator may take it before the test's server binds it ("Address already
# in use"). A port outside the ephemeral range is taken by no connection, only by a listener.
_CANDIDATES = [port for port in range(10_000, 65_536) if port not in _ephemeral()]
_handed_out: set[int] = set()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nobody listens on now, outside the ephemeral range and
    never handed out before in this process, for a server the test is about to start."""
    for port in random.sample(_CANDIDATES, 100):
        if port in _handed_out:
            continue
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
        _handed_out.add(port)
        return port
    raise RuntimeError("no free TCP port found outside the ephemeral range")

"""A local SMTP sink for the demo: a real aiosmtpd server on 127.0.0.1 that keeps what it gets."""

from __future__ import annotations

import email
import email.policy
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from email.message import EmailMessage

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, Envelope, Session


class _Keep:
    """aiosmtpd handler that accepts every message and parses it."""

    def __init__(self) -> None:
        self.messages: list[EmailMessage] = []

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        """Accept and keep the message."""
        assert isinstance(envelope.content, bytes)
        parsed = email.message_from_bytes(envelope.content, policy=email.policy.default)
        assert isinstance(parsed, EmailMessage)
        self.messages.append(parsed)
        return "250 2.0.0 Ok: kept by the Manzoori demo sink"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def smtp_sink() -> Iterator[tuple[int, list[EmailMessage]]]:
    """Run the sink for the block; yields its port and the list it fills."""
    handler = _Keep()
    controller = Controller(handler, hostname="127.0.0.1", port=_free_port())
    controller.start()
    try:
        yield controller.port, handler.messages
    finally:
        controller.stop()

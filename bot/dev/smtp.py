"""A real SMTP server for the demo and the tests: aiosmtpd on 127.0.0.1, recording what it accepts.

Replies are scripted per command. `sink.script("RCPT", "550 5.1.1 no such user")` makes the
next RCPT get that answer; queued replies are used one per command, oldest first, and once a
command's queue is empty it gets the normal answer again. A delay makes the server wait before
answering, e.g. longer than the client's timeout; `data_delay` is a standing one for every DATA
not scripted otherwise (a real relay's pace, for the benchmark). A DATA reply that starts with
"2" counts as accepted: the message is recorded at once, before any delay, because a real server
that answers late has still taken the message.
"""

from __future__ import annotations

import asyncio
import email
import email.policy
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email.message import EmailMessage
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, Envelope, Session

HOST = "127.0.0.1"
DEFAULT_REPLIES = {
    "MAIL": "250 2.1.0 Ok",
    "RCPT": "250 2.1.5 Ok",
    "DATA": "250 2.0.0 Ok: queued",
    "RSET": "250 2.0.0 Ok",
    "QUIT": "221 2.0.0 Bye",
}


@dataclass(frozen=True)
class Reply:
    """One scripted answer: the full status line, sent after `delay` seconds."""

    status: str
    delay: float = 0.0

    @property
    def accepts(self) -> bool:
        """True for a 2xx answer."""
        return self.status.startswith("2")


@dataclass
class SmtpSink:
    """What the server saw and what it will answer next; filled by the server's thread."""

    host: str = HOST
    port: int = 0
    messages: list[EmailMessage] = field(default_factory=list)
    accepted_at: list[float] = field(default_factory=list)  # time.monotonic(), one per message
    # Messages received whole but answered with a failure at the end of DATA (a 451): what
    # an attempt the relay refused carried, for tests that compare it with the retry's.
    refused: list[EmailMessage] = field(default_factory=list)
    envelopes: list[Envelope] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    data_delay: float = 0.0  # seconds before every unscripted DATA answer
    _queues: dict[str, deque[Reply]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def script(self, command: str, status: str, *, delay: float = 0.0) -> None:
        """Queue the answer to the next `command` (MAIL, RCPT, DATA, RSET or QUIT) not yet
        scripted."""
        if command not in DEFAULT_REPLIES:
            raise ValueError(f"cannot script {command}; one of {', '.join(DEFAULT_REPLIES)}")
        with self._lock:
            self._queues.setdefault(command, deque()).append(Reply(status, delay))

    def unscript(self) -> None:
        """Forget every queued answer: the server answers normally again."""
        with self._lock:
            self._queues.clear()

    def record(self, command: str) -> None:
        """Note a command that is always answered normally (EHLO): tests count them."""
        with self._lock:
            self.commands.append(command)

    def next_reply(self, command: str) -> Reply:
        """The queued answer to `command`, or the normal one; records that it was asked."""
        with self._lock:
            self.commands.append(command)
            queue = self._queues.get(command)
            if queue:
                return queue.popleft()
        delay = self.data_delay if command == "DATA" else 0.0
        return Reply(DEFAULT_REPLIES[command], delay)


class ScriptedHandler:
    """aiosmtpd hooks that answer from the sink's script and record accepted messages."""

    def __init__(self, sink: SmtpSink) -> None:
        self.sink = sink

    async def handle_EHLO(
        self,
        server: SMTP,
        session: Session,
        envelope: Envelope,
        hostname: str,
        responses: list[str],
    ) -> list[str]:
        """Answer EHLO as aiosmtpd would; one EHLO per connection, so tests count sessions."""
        self.sink.record("EHLO")
        session.host_name = hostname  # what aiosmtpd does itself when no hook is set
        return responses

    async def handle_RSET(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        """Answer RSET; a reused connection sends it after a transaction left half done."""
        return await _answer(self.sink.next_reply("RSET"))

    async def handle_MAIL(
        self, server: SMTP, session: Session, envelope: Envelope, address: str, options: list[str]
    ) -> str:
        """Answer MAIL FROM; remember the sender only if accepted (as aiosmtpd itself does)."""
        reply = self.sink.next_reply("MAIL")
        if reply.accepts:
            envelope.mail_from = address
            envelope.mail_options.extend(options)
        return await _answer(reply)

    async def handle_RCPT(
        self, server: SMTP, session: Session, envelope: Envelope, address: str, options: list[str]
    ) -> str:
        """Answer RCPT TO; add the recipient only if accepted."""
        reply = self.sink.next_reply("RCPT")
        if reply.accepts:
            envelope.rcpt_tos.append(address)
            envelope.rcpt_options.extend(options)
        return await _answer(reply)

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        """Answer the end of DATA; an accepted message is recorded before any delay."""
        reply = self.sink.next_reply("DATA")
        assert isinstance(envelope.content, bytes)
        parsed = email.message_from_bytes(envelope.content, policy=email.policy.default)
        assert isinstance(parsed, EmailMessage)
        if reply.accepts:
            self.sink.envelopes.append(envelope)
            self.sink.messages.append(parsed)
            self.sink.accepted_at.append(time.monotonic())
        else:
            self.sink.refused.append(parsed)
        return await _answer(reply)

    async def handle_QUIT(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        """Answer QUIT."""
        return await _answer(self.sink.next_reply("QUIT"))


async def _answer(reply: Reply) -> str:
    if reply.delay:
        await asyncio.sleep(reply.delay)
    return reply.status


class _EphemeralController(Controller):
    """A Controller on port 0: the OS picks a free port, read back before the first connect."""

    def _trigger_server(self) -> None:
        # Controller connects to self.port to check the server is up; by now the socket is
        # bound, so this is the moment to learn which port the OS chose.
        assert isinstance(self.server, asyncio.Server)
        self.port = self.server.sockets[0].getsockname()[1]
        super()._trigger_server()  # type: ignore[no-untyped-call]


@contextmanager
def running_sink(*, data_delay: float = 0.0, **smtp_options: Any) -> Iterator[SmtpSink]:
    """Run an SMTP server on 127.0.0.1 for the duration of the block; yields its SmtpSink,
    which answers every unscripted DATA after `data_delay` seconds."""
    sink = SmtpSink(data_delay=data_delay)
    controller = _EphemeralController(
        ScriptedHandler(sink), hostname=HOST, port=0, ready_timeout=5.0, **smtp_options
    )
    controller.start()
    sink.port = controller.port
    try:
        yield sink
    finally:
        controller.stop()

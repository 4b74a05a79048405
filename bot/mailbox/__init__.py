"""The buyer's mailbox over IMAP: the relay's Sent copies of our e-mails, and suppliers' replies
(imap: the client; reading: one message into core's values; runner: the passes).

What the settings and the runner name without reaching IMAP lives here, so that a command
that never reads the mailbox does not import imap-tools (bot.mailbox.imap)."""

from __future__ import annotations

from dataclasses import dataclass

from bot.outbox.smtp import TlsMode


class MailboxError(Exception):
    """The mailbox could not be reached, or refused us: logged, counted, never fatal."""


@dataclass(frozen=True)
class MailboxConfig:
    """Where the mailbox is and how to log in (IMAP_* settings)."""

    host: str
    port: int
    tls: TlsMode
    username: str
    password: str
    sent_folder: str
    inbox_folder: str
    timeout: float

    def __repr__(self) -> str:  # the password never in a log or a traceback
        return f"MailboxConfig(host={self.host!r}, port={self.port}, tls={self.tls.value!r})"

"""What the mail relay's own record says of one of our e-mails: the copies of it found in the
Sent folder (or a journal mailbox), by Message-ID; bot.mailbox looks, core.outbox.reconcile
decides."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class SentCopy:
    """One copy of an e-mail in a folder of the buyer's mailbox."""

    folder: str
    uid: int  # its IMAP UID in that folder
    internaldate: datetime  # when the server filed it (IMAP INTERNALDATE), aware
    message_id: str  # the Message-ID it carries, without angle brackets

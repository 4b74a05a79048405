"""A message read from the buyer's inbox (bot.mailbox reads it): who sent it, what it answers,
and its text, as plain values; which PO it belongs to is core.suppliers.replies'."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class Attachment:
    """A file a message carried: listed by name and size, never forwarded."""

    name: str
    size: int  # bytes, decoded


@dataclass(frozen=True)
class InboundMail:
    """One message of the inbox folder, read without marking it seen.

    `readable` is False for a message over the size limit or with a malformed MIME structure:
    then only its sender and size are known (`subject` may be empty), and nothing of its text.
    """

    uid: int  # its IMAP UID in the inbox folder
    sender: str  # the From address, lower-cased ("" when there is none)
    sender_name: str  # the From display name, as written
    date: datetime | None  # its Date header, aware; None when missing or unreadable
    subject: str
    message_id: str  # its Message-ID, without the angle brackets ("" when missing)
    in_reply_to: tuple[str, ...]  # Message-IDs it names, without angle brackets
    references: tuple[str, ...]
    text: str  # the whole plain text (HTML-only mail turned into text), as sent
    excerpt: str  # the new words: quoted original and signature cut, at most EXCERPT_CHARS
    attachments: tuple[Attachment, ...]
    size: int  # bytes, as the server reported it
    readable: bool = True


# How much of a reply's text goes to Telegram; the whole text is kept, sealed, in the trail.
EXCERPT_CHARS = 1_000
# A message above this size is noted by its size and sender only.
MAX_MAIL_BYTES = 5 * 1024 * 1024

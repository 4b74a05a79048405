"""One inbox message, as fetched, read into core's InboundMail: who sent it, what it answers,
its text, the new words of it, and its attachments by name and size.

The standard library's `email` package parses the MIME. HTML-only mail is turned into text by
inscriptis (Apache-2.0; html2text is GPL-3.0), which lays out blocks and line breaks as a
browser would and drops scripts and styles; the HTML itself is never kept or shown. The quoted
original and the signature are cut by the rules below, which cover what Gmail, Outlook and
the phones' mail apps write. Nothing here raises: a message that cannot be read is
`readable=False`, known by its sender and size only.
"""

from __future__ import annotations

import email.policy
import email.utils
import re
from dataclasses import replace
from datetime import UTC, datetime
from email import errors as mime_errors
from email.message import EmailMessage, Message
from typing import Any

from inscriptis import get_text

from core.suppliers.mail import EXCERPT_CHARS, MAX_MAIL_BYTES, Attachment, InboundMail

# A multipart whose parts cannot be told apart: its text and attachments would be guesses.
# (A missing header-body separator or a bad header is only noise: the parser recovers.)
MALFORMED = (
    mime_errors.StartBoundaryNotFoundDefect,
    mime_errors.MultipartInvariantViolationDefect,
    mime_errors.CloseBoundaryNotFoundDefect,
    mime_errors.NoBoundaryInMultipartDefect,
)
_MESSAGE_ID = re.compile(r"<([^<>\s]+)>")
# Where the quoted original starts: "On … wrote:" (Gmail, Apple; the Gmail line may wrap before
# "wrote:"), Outlook's separator and header block, a rule of underscores, a "> " block.
_ON_WROTE = re.compile(r"^\s*On\b.{0,300}?\bwrote:\s*$", re.IGNORECASE | re.DOTALL)
_ORIGINAL = re.compile(r"^\s*-{2,}\s*(Original Message|Forwarded message)\s*-{2,}", re.IGNORECASE)
_HEADER_LINE = re.compile(r"^\s*\**(From|Sent|Date|To|Subject|Cc)\**\s*:", re.IGNORECASE)
_RULE = re.compile(r"^\s*_{10,}\s*$")
_SIGNATURE = re.compile(r"^--\s*$")
_SENT_FROM = re.compile(
    r"^\s*(Sent from (my|Mail for)\b|Get Outlook for\b|Sent via\b)", re.IGNORECASE
)


def read_mail(raw: bytes, *, uid: int, size: int, truncated: bool = False) -> InboundMail:
    """`raw` (a whole message, or with `truncated` its header only) read; never raises."""
    try:
        message = email.message_from_bytes(raw, policy=email.policy.default)
    except Exception:  # the parser is meant to recover from anything; if it does not, noted
        return _unreadable(uid, size)
    assert isinstance(message, EmailMessage)
    head = _head(message, uid, size)
    if truncated or size > MAX_MAIL_BYTES or _malformed(message):
        return head
    try:
        text = _text(message)
        attachments = tuple(_attachments(message))
    except Exception:  # a part that cannot be decoded: the message is noted, not shown
        return head
    return replace(
        head, text=text, excerpt=excerpt_of(text), attachments=attachments, readable=True
    )


def _unreadable(uid: int, size: int) -> InboundMail:
    return InboundMail(
        uid=uid, sender="", sender_name="", date=None, subject="", message_id="",
        in_reply_to=(), references=(), text="", excerpt="", attachments=(), size=size,
        readable=False,
    )  # fmt: skip


def _head(message: EmailMessage, uid: int, size: int) -> InboundMail:
    """What the headers say, each read on its own: a garbled one is empty, not an error."""
    name, address = _sender(message)
    return InboundMail(
        uid=uid,
        sender=address,
        sender_name=name,
        date=_date(message),
        subject=" ".join(_header(message, "Subject").split()),
        message_id=next(iter(_ids(_header(message, "Message-ID"))), ""),
        in_reply_to=_ids(_header(message, "In-Reply-To")),
        references=_ids(_header(message, "References")),
        text="",
        excerpt="",
        attachments=(),
        size=size,
        readable=False,
    )


def _header(message: Message, name: str) -> str:
    try:
        value = message.get(name)
        return "" if value is None else str(value)
    except Exception:  # a header the policy cannot decode
        return ""


def _sender(message: Message) -> tuple[str, str]:
    name, address = email.utils.parseaddr(_header(message, "From"))
    return " ".join(name.split()), address.strip().lower()


def _date(message: Message) -> datetime | None:
    text = _header(message, "Date")
    if not text:
        return None
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def _ids(text: str) -> tuple[str, ...]:
    """The Message-IDs a header names, without angle brackets; bare tokens if none has them."""
    found = _MESSAGE_ID.findall(text)
    if not found:
        found = [token for token in text.split() if "@" in token]
    return tuple(dict.fromkeys(found))


def _malformed(message: Message) -> bool:
    return any(
        isinstance(defect, MALFORMED)
        for part in message.walk()
        for defect in getattr(part, "defects", ())
    )


def _text(message: EmailMessage) -> str:
    """The message's plain text: its text/plain body, else its HTML body as text."""
    body = message.get_body(preferencelist=("plain", "html"))
    if body is None:
        return ""
    content: Any = body.get_content()
    if not isinstance(content, str):
        return ""
    if body.get_content_subtype() == "html":
        content = get_text(content)
    return _tidy(content)


def _tidy(text: str) -> str:
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    return "\n".join(lines).strip("\n")


def _attachments(message: EmailMessage) -> list[Attachment]:
    found = []
    for part in message.iter_attachments():
        name = part.get_filename() or ""
        payload = part.get_payload(decode=True)
        size = len(payload) if isinstance(payload, bytes) else 0
        if name or part.get_content_disposition() == "attachment":
            found.append(Attachment(" ".join(name.split()) or "(unnamed)", size))
    return found


def excerpt_of(text: str) -> str:
    """The new words of a reply: up to the quoted original or the signature, trimmed, at most
    EXCERPT_CHARS (cut at a word, with "…"); the text's start if that leaves nothing."""
    lines = text.split("\n")
    kept = _before_quote(lines)
    words = _squeezed(kept) or _squeezed(lines)
    if len(words) <= EXCERPT_CHARS:
        return words
    cut = words[:EXCERPT_CHARS]
    space = cut.rfind(" ")
    return (cut[:space] if space > EXCERPT_CHARS // 2 else cut).rstrip() + "…"


def _before_quote(lines: list[str]) -> list[str]:
    for index, line in enumerate(lines):
        two = line + " " + (lines[index + 1] if index + 1 < len(lines) else "")
        if line.startswith(">") or _RULE.match(line) or _ORIGINAL.match(line):
            return lines[:index]
        if _ON_WROTE.match(line) or (line.lstrip().startswith("On ") and _ON_WROTE.match(two)):
            return lines[:index]
        if _SIGNATURE.match(line) or _SENT_FROM.match(line):
            return lines[:index]
        if _HEADER_LINE.match(line) and line.lstrip().lower().startswith(("from", "*from")):
            following = lines[index + 1 : index + 4]
            if any(_HEADER_LINE.match(more) for more in following):
                return lines[:index]
    return lines


def _squeezed(lines: list[str]) -> str:
    """Lines trimmed, runs of blank lines made one, none at either end."""
    out: list[str] = []
    for line in lines:
        if line.strip() or (out and out[-1]):
            out.append(line.strip() if not line.strip() else line.rstrip())
    return "\n".join(out).strip()

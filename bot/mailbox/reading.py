"""One inbox message, as fetched, read into core's InboundMail: who sent it, what it answers,
its text, the new words of it, and its attachments by name and size.

The standard library's `email` package parses the MIME. HTML-only mail is turned into text by
inscriptis (Apache-2.0; html2text is GPL-3.0), which lays out blocks and line breaks as a
browser would and drops scripts and styles; the HTML itself is never kept or shown. The quoted
original and the signature are cut by the rules below, which cover what Gmail, Outlook and
the phones' mail apps write. Nothing here raises: a message that cannot be read is
`readable=False`, known by its headers and size only.
"""

from __future__ import annotations

import codecs
import email
import email.policy
import email.utils
import re
from dataclasses import replace
from datetime import UTC, datetime
from email import errors as mime_errors
from email.message import EmailMessage, Message

from inscriptis import get_text
from inscriptis.css_profiles import CSS_PROFILES
from inscriptis.model.config import ParserConfig

from core.suppliers.mail import EXCERPT_CHARS, MAX_MAIL_BYTES, Attachment, InboundMail

# A multipart whose parts cannot be found: no start boundary, no boundary parameter, or a
# multipart the parser had to keep as one blob. Its text and attachments would be guesses.
# A missing *close* boundary is not here: the parser has found every part by then, the last
# one simply runs to the end (sloppy mailers do this), so the text is whole. Header defects
# and a missing header-body separator are noise the parser recovers from.
MALFORMED = (
    mime_errors.StartBoundaryNotFoundDefect,
    mime_errors.MultipartInvariantViolationDefect,
    mime_errors.NoBoundaryInMultipartDefect,
)
_MESSAGE_ID = re.compile(r"<([^<>\s]+)>")
# inscriptis's "strict" profile lays HTML out as a browser does; its default ("relaxed") indents
# every <div> by two spaces and pads every <span>, and mail nests both deeply.
_HTML = ParserConfig(css=CSS_PROFILES["strict"].copy())
# Where the quoted original starts: "On <date>, <name> wrote:" (Gmail, Apple, Outlook mobile,
# Thunderbird: a date always, so a digit), Outlook's separator and header block, a rule of
# underscores, a "> " block. Gmail wraps a long attribution: the second line is "wrote:" alone
# or ends the address ("<po@shop.pk> wrote:"), so "On Monday …" / "As you wrote:" stays.
_ON_WROTE = re.compile(r"^\s*On\s(?=.*\d).{0,300}\bwrote:\s*$", re.IGNORECASE)
_WROTE_WRAPPED = re.compile(r"^\s*(\S.*@.*\s)?wrote:\s*$", re.IGNORECASE)
_ORIGINAL = re.compile(r"^\s*-{2,}\s*(Original Message|Forwarded message)\s*-{2,}", re.IGNORECASE)
_FROM_LINE = re.compile(r"^\s*\**From\**\s*:", re.IGNORECASE)
_SENT_LINE = re.compile(r"^\s*\**(Sent|Date)\**\s*:", re.IGNORECASE)
_RULE = re.compile(r"^\s*_{10,}\s*$")
# RFC 3676's "-- " (the trailing space is lost to line trimming, so "--" too).
_SIGNATURE = re.compile(r"^--\s*$")
# Only at the end of the new words: "Sent from our warehouse on Monday" may be news.
_SENT_FROM = re.compile(r"^\s*(Sent from\s|Get Outlook for\s)", re.IGNORECASE)


def read_mail(raw: bytes, *, uid: int, size: int, truncated: bool = False) -> InboundMail:
    """`raw` (a whole message, or with `truncated` its header only) read; never raises."""
    try:
        message = email.message_from_bytes(raw, policy=email.policy.default)
        if not isinstance(message, EmailMessage):  # the default policy always makes one
            return _unreadable(uid, size)
        head = _head(message, uid, size)
    except Exception:  # the parser is meant to recover from anything; if it does not, noted
        return _unreadable(uid, size)
    if truncated or size > MAX_MAIL_BYTES or _malformed(message):
        return head
    try:
        body = message.get_body(preferencelist=("plain", "html"))
        text = _text(body) if body is not None else ""
        attachments = tuple(_attachments(message, body))
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
    return replace(
        _unreadable(uid, size),
        sender=address,
        sender_name=name,
        date=_date(message),
        subject=" ".join(_header(message, "Subject").split()),
        message_id=next(iter(_ids(_header(message, "Message-ID"))), ""),
        in_reply_to=_ids(_header(message, "In-Reply-To")),
        references=_ids(_header(message, "References")),
    )


def _header(message: Message, name: str) -> str:
    try:
        value = message.get(name)
        return "" if value is None else str(value)
    except Exception:  # a header the policy cannot decode
        return ""


def _sender(message: Message) -> tuple[str, str]:
    try:
        name, address = email.utils.parseaddr(_header(message, "From"))
    except Exception:  # parseaddr's own parser on hostile input
        return "", ""
    return " ".join(name.split()), address.strip().lower()


def _date(message: Message) -> datetime | None:
    text = _header(message, "Date")
    if not text:
        return None
    try:
        when = email.utils.parsedate_to_datetime(text)
    except Exception:  # garbled: unknown, not an error
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def _ids(text: str) -> tuple[str, ...]:
    """The Message-IDs a header names, without angle brackets; bare tokens if none has them."""
    found = _MESSAGE_ID.findall(text)
    if not found:
        found = [token.strip("<>,;") for token in text.split()]
    return tuple(dict.fromkeys(token for token in found if token))


def _malformed(message: Message) -> bool:
    return any(
        isinstance(defect, MALFORMED)
        for part in message.walk()
        for defect in getattr(part, "defects", ())
    )


def _text(body: Message) -> str:
    """The body part's plain text: as written, or its HTML turned into text."""
    content = _decoded(body)
    if body.get_content_subtype() == "html":
        content = get_text(content, _HTML)
    lines = content.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return "\n".join(line.rstrip() for line in lines).strip("\n")


def _decoded(part: Message) -> str:
    """A text part's characters: undecodable bytes replaced; an unknown charset read as UTF-8."""
    payload = part.get_payload(decode=True)
    if not isinstance(payload, bytes):
        return ""
    charset = part.get_content_charset() or "utf-8"
    try:
        codecs.lookup(charset)
    except LookupError:  # "x-unknown", "unknown-8bit", a typo
        charset = "utf-8"
    return payload.decode(charset, errors="replace")


def _attachments(message: EmailMessage, body: Message | None) -> list[Attachment]:
    """Every part but the body with a filename or marked an attachment, by name and size."""
    found = []
    for part in _leaves(message):
        if part is body:
            continue
        name = " ".join((part.get_filename() or "").split())
        if name or part.get_content_disposition() == "attachment":
            found.append(Attachment(name or "(unnamed)", _size(part)))
    return found


def _leaves(part: Message) -> list[Message]:
    """The parts that are not multiparts; an attached message is one part, not opened."""
    if part.get_content_maintype() != "multipart":
        return [part]
    children = part.get_payload()
    if not isinstance(children, list):
        return []
    return [leaf for child in children if isinstance(child, Message) for leaf in _leaves(child)]


def _size(part: Message) -> int:
    payload = part.get_payload(decode=True)
    if isinstance(payload, bytes):
        return len(payload)
    inner = part.get_payload()  # an attached message (message/rfc822): its bytes
    if isinstance(inner, list) and inner and isinstance(inner[0], Message):
        return len(inner[0].as_bytes())
    return 0


def excerpt_of(text: str) -> str:
    """The new words of a reply: up to the quoted original or the signature, trimmed, at most
    EXCERPT_CHARS (cut at a word, with "…"); the text's start if that leaves nothing."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    words = _squeezed(_before_quote(lines)) or _squeezed(lines)
    if len(words) <= EXCERPT_CHARS:
        return words
    cut = words[:EXCERPT_CHARS]
    if words[EXCERPT_CHARS].isspace():  # the limit falls between two words
        boundary = EXCERPT_CHARS
    else:
        boundary = max(cut.rfind(" "), cut.rfind("\n"))
    # One word longer than half the excerpt (a URL, a token) is cut inside it.
    return (cut[:boundary] if boundary > EXCERPT_CHARS // 2 else cut).rstrip() + "…"


def _before_quote(lines: list[str]) -> list[str]:
    """The lines above the first that starts the quoted original or the signature, less the
    phone's or Outlook's trailing "Sent from my …" lines."""
    kept = lines
    for index, line in enumerate(lines):
        following = lines[index + 1 : index + 4]
        if (
            line.startswith(">")
            or _RULE.match(line)
            or _ORIGINAL.match(line)
            or _SIGNATURE.match(line)
            or _ON_WROTE.match(line)
            or _wrapped_attribution(line, following[0] if following else "")
            or (_FROM_LINE.match(line) and any(_SENT_LINE.match(more) for more in following))
        ):
            kept = lines[:index]
            break
    end = len(kept)
    while end and (not kept[end - 1].strip() or _SENT_FROM.match(kept[end - 1])):
        end -= 1
    return kept[:end]


def _wrapped_attribution(line: str, following: str) -> bool:
    """Gmail's "On <date>, <name> <address> wrote:" wrapped over this line and the next."""
    return bool(_WROTE_WRAPPED.match(following) and _ON_WROTE.match(f"{line} {following}"))


def _squeezed(lines: list[str]) -> str:
    """Lines right-trimmed, each run of blank lines made one, none at either end."""
    out: list[str] = []
    for line in (line.rstrip() for line in lines):
        if line or (out and out[-1]):
            out.append(line)
    return "\n".join(out).strip()

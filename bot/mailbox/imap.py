"""The buyer's mailbox over IMAP, with imap-tools (Apache-2.0; aioimaplib, the asyncio client,
is GPL-3.0). imap-tools is synchronous, so every call runs in a thread (asyncio.to_thread),
one at a time per session, with IMAP_TIMEOUT_SECONDS on the socket.

A session (`Mailbox.session()`) is one connection, logged in, used for one pass and logged out.
Folders are opened read-only (EXAMINE) and bodies fetched with BODY.PEEK: reading never marks
a message seen, never moves or deletes one.

Every failure is mapped at this boundary, by one table (`_FAILURES`), to MailboxError: a
refused login, a lost or refused connection, a timeout, a TLS failure, a command the server
refuses. The caller logs it and tries again next pass; nothing else ever escapes.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.parser
import email.policy
import imaplib
import re
import ssl
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from imap_tools import MailBox, MailBoxStartTls, MailBoxUnencrypted
from imap_tools.errors import ImapToolsError, MailboxLoginError

from bot.mailbox import MailboxConfig, MailboxError
from bot.outbox.smtp import TlsMode
from core.outbox.evidence import SentCopy
from core.suppliers.mail import MAX_MAIL_BYTES

T = TypeVar("T")


# What each failure is called, most specific first: every error imap-tools, imaplib, ssl or the
# socket raises is one of these (tests/integration/test_mailbox_imap.py covers each row).
_FAILURES: tuple[tuple[type[BaseException], str], ...] = (
    (MailboxLoginError, "the login was refused"),
    (ImapToolsError, "the server refused a command"),
    (imaplib.IMAP4.abort, "the connection broke"),
    (imaplib.IMAP4.error, "the server answered something unexpected"),
    (ssl.SSLError, "TLS failed"),
    (TimeoutError, "the server did not answer in time"),
    (ConnectionRefusedError, "the connection was refused"),
    (OSError, "the connection failed"),
    (EOFError, "the connection broke"),
)


def mapped(error: BaseException) -> MailboxError | None:
    """`error` as a MailboxError, or None for one that is not the mailbox's (a bug)."""
    for kind, called in _FAILURES:
        if isinstance(error, kind):
            return MailboxError(f"{called} ({type(error).__name__}: {_short(error)})")
    return None


def _short(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return text if len(text) <= 200 else text[:199] + "…"


@dataclass(frozen=True)
class FetchedMail:
    """One inbox message as fetched: the whole of it, or (`truncated`) its header only."""

    uid: int
    size: int
    internaldate: datetime | None
    raw: bytes
    truncated: bool


class Mailbox:
    """The mailbox of `config`; `session()` opens a connection for one pass."""

    def __init__(self, config: MailboxConfig) -> None:
        self.config = config

    @asynccontextmanager
    async def session(self) -> AsyncIterator[MailboxSession]:
        """A logged-in connection, logged out when the block ends (MailboxError if it cannot
        be opened; the block's own MailboxErrors pass through)."""
        box = await _call(self._open)
        try:
            yield MailboxSession(box)
        finally:
            with contextlib.suppress(Exception):  # a failed LOGOUT changes nothing read
                await asyncio.to_thread(box.logout)

    def _open(self) -> Any:
        config = self.config
        match config.tls:
            case TlsMode.TLS:
                context = ssl.create_default_context()
                box: Any = MailBox(
                    config.host, config.port, timeout=config.timeout, ssl_context=context
                )
            case TlsMode.STARTTLS:
                context = ssl.create_default_context()
                box = MailBoxStartTls(
                    config.host, config.port, timeout=config.timeout, ssl_context=context
                )
            case _:
                box = MailBoxUnencrypted(config.host, config.port, timeout=config.timeout)
        try:
            return box.login(config.username, config.password, initial_folder=None)
        except BaseException:
            box.client.shutdown()
            raise


class MailboxSession:
    """One logged-in connection; its calls run one at a time, each in a thread."""

    def __init__(self, box: Any) -> None:
        self._box = box
        self._lock = asyncio.Lock()

    async def _run(self, work: Callable[[], T]) -> T:
        async with self._lock:
            return await _call(work)

    async def folders(self) -> list[str]:
        """Every folder's name, as the server lists it (decoded)."""
        return await self._run(lambda: [f.name for f in self._box.folder.list()])

    async def count(self, folder: str) -> int:
        """How many messages `folder` holds."""
        return await self._run(lambda: int(self._box.folder.status(folder)["MESSAGES"]))

    async def uid_validity(self, folder: str) -> int:
        """The folder's UIDVALIDITY: its UIDs mean the same while it stays the same."""
        status = await self._run(lambda: self._box.folder.status(folder, ["UIDVALIDITY"]))
        return int(status["UIDVALIDITY"])

    async def find_copies(
        self, folder: str, wanted: Sequence[tuple[str, str]]
    ) -> dict[str, list[SentCopy]]:
        """The copies in `folder` of each wanted e-mail, named by (Message-ID without angle
        brackets, Idempotency-Key): a message carrying either counts, once. Every wanted
        Message-ID is a key of the answer, with [] when nothing was found."""
        return await self._run(lambda: self._find(folder, wanted))

    def _find(self, folder: str, wanted: Sequence[tuple[str, str]]) -> dict[str, list[SentCopy]]:
        client = self._examine(folder)
        found: dict[str, list[SentCopy]] = {mid: [] for mid, _ in wanted}
        for mid, key in wanted:
            uids = _search(client, f'HEADER Message-ID "<{_quoted(mid)}>"')
            uids |= _search(client, f'HEADER Idempotency-Key "{_quoted(key)}"')
            if not uids:
                continue
            items = "(UID INTERNALDATE BODY.PEEK[HEADER.FIELDS (MESSAGE-ID IDEMPOTENCY-KEY)])"
            for uid, meta, header in _fetch(client, sorted(uids), items):
                fields = email.parser.BytesHeaderParser(policy=email.policy.default).parsebytes(
                    header
                )
                ids = (str(fields.get("Message-ID", "")).strip().strip("<>"),)
                keys = (str(fields.get("Idempotency-Key", "")).strip(),)
                at = _internaldate(meta)
                if (mid in ids or key in keys) and at is not None:  # HEADER search is a substring
                    found[mid].append(SentCopy(folder, uid, at, mid))
        return found

    async def new_messages(self, folder: str, after_uid: int, limit: int) -> list[FetchedMail]:
        """The messages of `folder` with a UID above `after_uid`, oldest first, at most
        `limit`; one over MAX_MAIL_BYTES comes as its header only. Nothing is marked seen."""
        return await self._run(lambda: self._new(folder, after_uid, limit))

    def _new(self, folder: str, after_uid: int, limit: int) -> list[FetchedMail]:
        client = self._examine(folder)
        # "n:*" always matches the last message, even below n: keep only what is above.
        uids = sorted(u for u in _search(client, f"UID {after_uid + 1}:*") if u > after_uid)
        uids = uids[:limit]
        if not uids:
            return []
        sizes = {
            uid: meta for uid, meta, _ in _fetch(client, uids, "(UID RFC822.SIZE INTERNALDATE)")
        }
        small = [u for u in uids if _size(sizes.get(u, b"")) <= MAX_MAIL_BYTES]
        large = [u for u in uids if u not in small]
        bodies = {uid: body for uid, _, body in _fetch(client, small, "(UID BODY.PEEK[])")}
        heads = {uid: body for uid, _, body in _fetch(client, large, "(UID BODY.PEEK[HEADER])")}
        return [
            FetchedMail(
                uid=uid,
                size=_size(sizes.get(uid, b"")),
                internaldate=_internaldate(sizes.get(uid, b"")),
                raw=bodies.get(uid, heads.get(uid, b"")),
                truncated=uid in heads,
            )
            for uid in uids
            if uid in bodies or uid in heads  # expunged meanwhile: gone
        ]

    def _examine(self, folder: str) -> imaplib.IMAP4:
        """Open `folder` read-only (EXAMINE): nothing read there is marked seen."""
        self._box.folder.set(folder, readonly=True)
        client: imaplib.IMAP4 = self._box.client
        return client


async def _call(work: Callable[[], T]) -> T:
    """`work` in a thread, its failure mapped to MailboxError (a bug passes through)."""
    try:
        return await asyncio.to_thread(work)
    except MailboxError:
        raise
    except BaseException as error:
        failure = mapped(error)
        if failure is None:
            raise
        raise failure from error


def _quoted(text: str) -> str:
    """`text` safe inside an IMAP quoted string (our ids and keys hold no such characters)."""
    return text.replace("\\", "").replace('"', "")


def _search(client: imaplib.IMAP4, criteria: str) -> set[int]:
    status, data = client.uid("SEARCH", criteria)
    if status != "OK":
        raise imaplib.IMAP4.error(f"UID SEARCH {criteria}: {status}")
    return {int(uid) for uid in b" ".join(d for d in data if d).split()}


_UID = re.compile(rb"\bUID (\d+)")
_SIZE = re.compile(rb"\bRFC822\.SIZE (\d+)")
_INTERNALDATE = re.compile(rb'\bINTERNALDATE "([^"]+)"')


def _fetch(
    client: imaplib.IMAP4, uids: Sequence[int], items: str
) -> list[tuple[int, bytes, bytes]]:
    """UID FETCH `items` of `uids`: per message its UID, the response's data items (the text
    around the literal) and the literal (b"" when there is none)."""
    if not uids:
        return []
    status, data = client.uid("FETCH", ",".join(str(u) for u in uids), items)
    if status != "OK":
        raise imaplib.IMAP4.error(f"UID FETCH: {status}")
    out: list[tuple[int, bytes, bytes]] = []
    for part in data:
        if isinstance(part, tuple):
            meta, literal = part[0], part[1]
        elif isinstance(part, bytes) and _UID.search(part):
            meta, literal = part, b""
        else:
            if out and isinstance(part, bytes):  # the items after a literal: ") INTERNALDATE …"
                uid, before, literal = out[-1]
                out[-1] = (uid, before + b" " + part, literal)
            continue
        found = _UID.search(meta)
        if found is not None:
            out.append((int(found.group(1)), meta, literal))
    return out


def _size(meta: bytes) -> int:
    found = _SIZE.search(meta)
    return int(found.group(1)) if found else 0


def _internaldate(meta: bytes) -> datetime | None:
    found = _INTERNALDATE.search(meta)
    if found is None:
        return None
    try:
        return datetime.strptime(found.group(1).decode(), "%d-%b-%Y %H:%M:%S %z")
    except ValueError:
        return None

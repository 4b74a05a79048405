"""Senders: perform one outbox effect and classify every failure at the boundary.

SmtpSender drives aiosmtplib one command at a time so that it knows how far it got:

    SESSION   connect, greeting, EHLO, STARTTLS, AUTH   nothing can have been delivered
    ENVELOPE  MAIL FROM, RCPT TO                        nothing can have been delivered
    DATA      DATA issued, message sent, final reply    the server may hold the message

and maps what went wrong into core.errors:

    a 4xx reply, in any phase                    TransientSendError   retry later
    a 5xx reply, in any phase                    PermanentSendError   retrying cannot help
    any other failure before DATA                TransientSendError   nothing was delivered
    a timeout or lost connection once in DATA    AmbiguousSendError   reconcile, never resend

A session (`SmtpSender.session()`) carries consecutive messages over one connection, each
classified alone by the same table. The connection survives only a clean reply: a refusal
leaves it open (RSET comes before the next message), anything else drops it. A reused
connection that the server closed while it sat idle fails at its first command, before anything
of the new message was sent, so that message goes on over a fresh connection, once.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, nullcontext
from dataclasses import dataclass
from email.message import EmailMessage
from enum import StrEnum
from typing import Any

import aiosmtplib
from aiosmtplib import errors as smtp_errors
from prometheus_client import Histogram

from bot.outbox.emails import render_cancellation_email, render_po_email, sender_domain
from bot.outbox.links import SupplierLinks
from bot.outbox.note_emails import render_note_email
from core.errors import (
    AmbiguousSendError,
    ConfigError,
    PermanentSendError,
    SendError,
    TransientSendError,
)
from core.jobs.effects import NOTES, EffectKind
from core.jobs.jobs import SendOrder
from core.suppliers.links import link_for

log = logging.getLogger(__name__)

# The e-mail that carries the supplier's link of its own (core.suppliers.links): the PO. A
# reminder carries its own too, and a proposal turned down the PO's again (bot.outbox.note_emails);
# a cancellation none: there is nothing left to answer.
LINKED_EMAILS = frozenset({EffectKind.SEND_PO})


class TlsMode(StrEnum):
    """How the connection to the SMTP server is secured (SMTP_TLS)."""

    NONE = "none"  # plain text: a relay on the same host or network
    STARTTLS = "starttls"  # plain text, then STARTTLS before anything is said (port 587)
    TLS = "tls"  # TLS from the first byte (port 465)


@dataclass(frozen=True)
class SmtpServer:
    """Where the mail goes and how to log in; `timeout` bounds one whole send, in seconds."""

    host: str
    port: int
    tls: TlsMode = TlsMode.STARTTLS
    timeout: float = 30.0
    username: str | None = None
    password: str | None = None  # no login without a username

    def __post_init__(self) -> None:
        object.__setattr__(self, "tls", TlsMode(self.tls))
        if self.timeout <= 0:
            raise ConfigError("SMTP_TIMEOUT_SECONDS must be positive")


# Server replies may echo an address ("550 <bob@example.com>: no such user"); errors and
# receipts end up in the database and the audit trail, which hold ids, not personal data.
_ADDRESS = re.compile(r"[^\s<>@]+@[^\s<>]+")
# Enough of a server's reply to diagnose it without letting it flood logs and rows.
_MAX_REPLY_TEXT = 200


class Phase(StrEnum):
    """How far one SMTP session got."""

    SESSION = "session"  # connect, greeting, EHLO, STARTTLS, AUTH
    ENVELOPE = "envelope"  # MAIL FROM, RCPT TO
    DATA = "data"  # DATA issued: from here on the server may hold the message


class Rule(StrEnum):
    """How an exception is read."""

    REPLY = "reply"  # the server answered with a code: 4xx transient, 5xx permanent
    REPLIES = "replies"  # several recipients refused: read the worst code
    LINK = "link"  # the connection failed, dropped or timed out
    LOCAL = "local"  # the client would not go on (missing extension, misuse)


# Every exception class aiosmtplib exports, named explicitly; tests fail when one is missing.
# The most specific class wins (method resolution order), so a connect-time reply is a REPLY.
SMTP_ERROR_RULES: dict[type[BaseException], Rule] = {
    smtp_errors.SMTPException: Rule.LOCAL,
    smtp_errors.SMTPNotSupported: Rule.LOCAL,
    smtp_errors.SMTPResponseException: Rule.REPLY,
    smtp_errors.SMTPConnectResponseError: Rule.REPLY,
    smtp_errors.SMTPHeloError: Rule.REPLY,
    smtp_errors.SMTPAuthenticationError: Rule.REPLY,
    smtp_errors.SMTPSenderRefused: Rule.REPLY,
    smtp_errors.SMTPRecipientRefused: Rule.REPLY,
    smtp_errors.SMTPDataError: Rule.REPLY,
    smtp_errors.SMTPRecipientsRefused: Rule.REPLIES,
    smtp_errors.SMTPConnectError: Rule.LINK,
    smtp_errors.SMTPConnectTimeoutError: Rule.LINK,
    smtp_errors.SMTPServerDisconnected: Rule.LINK,
    smtp_errors.SMTPTimeoutError: Rule.LINK,
    smtp_errors.SMTPReadTimeoutError: Rule.LINK,
    # aiosmtplib.errors re-exports the builtin (asyncio.TimeoutError is the same class).
    TimeoutError: Rule.LINK,
    # Socket and TLS errors that aiosmtplib lets through unwrapped (e.g. during STARTTLS).
    OSError: Rule.LINK,
}


def rule_for(error: BaseException) -> Rule | None:
    """The rule of the most specific mapped class `error` is an instance of, if any."""
    for cls in type(error).__mro__:
        if cls in SMTP_ERROR_RULES:
            return SMTP_ERROR_RULES[cls]
    return None


def reply_code(error: BaseException) -> int | None:
    """The SMTP reply code an exception carries; the worst one for several recipients."""
    if isinstance(error, smtp_errors.SMTPRecipientsRefused):
        return max((refused.code for refused in error.recipients), default=None)
    if isinstance(error, smtp_errors.SMTPResponseException):
        return error.code
    return None


def classify_smtp_error(error: BaseException, phase: Phase) -> SendError:
    """The core.errors exception that says what a retry of this failed attempt may do."""
    rule = rule_for(error)
    code = reply_code(error) if rule in (Rule.REPLY, Rule.REPLIES) else None
    text = f"SMTP {phase.value} failed: {type(error).__name__}: {describe(error)}"
    if code is not None and 400 <= code < 500:
        return TransientSendError(text, code=code)
    if code is not None and 500 <= code < 600:
        return PermanentSendError(text, code=code)
    if phase is Phase.DATA:
        return AmbiguousSendError(text, code=code)
    return TransientSendError(text, code=code)


def describe(error: BaseException) -> str:
    """What went wrong, short and with any e-mail address blanked out."""
    if isinstance(error, smtp_errors.SMTPRecipientsRefused):
        text = "; ".join(f"{r.code} {r.message}" for r in error.recipients)
    elif isinstance(error, smtp_errors.SMTPResponseException):
        # Not str(error): the args of Sender/RecipientRefused include the address itself.
        text = f"{error.code} {error.message}"
    else:
        text = str(error) or type(error).__name__
    return redact(text)


def redact(text: str) -> str:
    """`text` cut short, on one line, with e-mail addresses replaced by "[address]"."""
    return _ADDRESS.sub("[address]", " ".join(text.split()))[:_MAX_REPLY_TEXT]


class SmtpSender:
    """E-mails purchase orders through one SMTP server: a relay or a provider's submission port."""

    # SMTP servers do not de-duplicate by key: a blind resend can deliver a second copy.
    provider_idempotent = False

    def __init__(
        self,
        server: SmtpServer,
        *,
        mail_from: str,
        timer: Histogram | None = None,
        links: SupplierLinks | None = None,
        journal: str | None = None,
    ) -> None:
        self.server, self.mail_from = server, mail_from
        # MAIL_JOURNAL_BCC: every e-mail goes to it too, in the envelope only (no header names
        # it), so a relay that files no Sent copy still leaves one to reconcile against.
        self.journal = journal
        self.timer = timer  # each send's duration, successful or not (bot/web/metrics.py)
        self.links = links  # the supplier's link in PO e-mails; None: no e-mail carries one
        self.envelope_from = email.utils.parseaddr(mail_from)[1]
        sender_domain(mail_from)  # fail at start-up, not at the first send
        if not self.envelope_from.isascii():
            raise ConfigError("MAIL_FROM must be an ASCII address (SMTPUTF8 is not used)")

    def __repr__(self) -> str:
        server = self.server
        return f"SmtpSender(host={server.host!r}, port={server.port}, tls={server.tls.value!r})"

    @asynccontextmanager
    async def session(self) -> AsyncIterator[SmtpSession]:
        """One SMTP connection for consecutive sends, said QUIT to when the block ends."""
        session = SmtpSession(self)
        try:
            yield session
        finally:
            await session.close()

    async def send(self, order: SendOrder) -> dict[str, Any]:
        """Deliver one purchase-order e-mail over a connection of its own; raise a classified
        SendError when it did not go."""
        async with self.session() as session:
            return await session.send(order)

    def render(self, order: SendOrder) -> EmailMessage:
        """The e-mail of `order`: a cancellation, or the PO with the supplier's link (the same
        one on every attempt: it is made from the outbox row alone)."""
        mail_from, effect = self.mail_from, order.effect
        if effect.kind == EffectKind.CANCEL_PO:
            return render_cancellation_email(order, mail_from=mail_from)
        if effect.kind in NOTES:
            return render_note_email(order, mail_from=mail_from, links=self.links)
        if self.links is None or effect.kind not in LINKED_EMAILS:
            return render_po_email(order, mail_from=mail_from)
        expires = link_for(effect, self.links.days).expires_at
        link = self.links.url(effect)
        return render_po_email(order, mail_from=mail_from, link=link, link_expires=expires)


class SmtpSession:
    """One SMTP connection that carries several messages, one after another (RFC 5321 allows
    many mail transactions per session), so a message after the first skips connect, EHLO,
    STARTTLS and AUTH and starts at MAIL FROM.

    The connection is opened by the first send and dropped, never reused, after anything but a
    clean reply: a lost link, a timeout, or a failure in the middle of DATA leaves it in a state
    no later message may build on. After a refusal the connection stays, and the next message
    starts with RSET, since the refused transaction may be left half done. One send at a time.
    """

    def __init__(self, sender: SmtpSender) -> None:
        self.sender = sender
        self._client: aiosmtplib.SMTP | None = None
        self._dirty = False  # a refused transaction may be open: RSET before the next MAIL
        self._phase = Phase.SESSION

    @property
    def connected(self) -> bool:
        """Whether the next message would go over a connection that is already open."""
        return self._client is not None and self._client.is_connected

    async def send(self, order: SendOrder) -> dict[str, Any]:
        """Deliver one purchase-order e-mail; raise a classified SendError when it did not go."""
        timer = self.sender.timer
        with timer.time() if timer is not None else nullcontext():
            return await self._send(order)

    async def _send(self, order: SendOrder) -> dict[str, Any]:
        key = order.effect.key
        recipient = order.draft.recipient_email
        if not recipient.isascii():
            raise PermanentSendError("recipient address is not ASCII and SMTPUTF8 is not used")
        sender = self.sender
        message = sender.render(order)
        payload = message.as_bytes()  # POLICY: CRLF line ends, 7-bit parts
        self._phase = Phase.SESSION
        try:
            # `timeout` bounds the whole conversation of this message, reconnecting included,
            # not only each command, so every send of a pass ends inside the runner's lease.
            async with asyncio.timeout(sender.server.timeout):
                client = await self._mail_from()
                await client.rcpt(recipient)
                if sender.journal is not None:
                    await self._journal(client, sender.journal, key)
                self._phase = Phase.DATA
                reply = await client.data(payload)
        except (smtp_errors.SMTPException, OSError) as exc:
            self._after_failure(exc)
            error = classify_smtp_error(exc, self._phase)
            log.warning("send %s failed (%s): %s", key, type(error).__name__, error)
            raise error from exc
        except BaseException:
            self._drop()  # cancelled mid-conversation: nobody knows where the server stands
            raise
        log.info("sent %s: %s", key, reply.code)
        return {
            "message_id": message["Message-ID"],
            "smtp_code": reply.code,
            "smtp_message": redact(reply.message),
        }

    async def _journal(self, client: aiosmtplib.SMTP, journal: str, key: str) -> None:
        """The journal mailbox as a second recipient; its refusal is logged, never the
        supplier's e-mail's failure (the copy is evidence, not the delivery)."""
        try:
            await client.rcpt(journal)
        except smtp_errors.SMTPRecipientRefused as refused:
            log.warning("send %s: the journal address was refused: %s", key, refused.code)

    async def close(self) -> None:
        """Say QUIT if still connected; a failed QUIT never changes the outcome of a send."""
        client, self._client = self._client, None
        if client is not None:
            await _close(client)

    async def _mail_from(self) -> aiosmtplib.SMTP:
        """A connection on which MAIL FROM was accepted: the open one if it still answers,
        else a new one."""
        client = self._client
        if client is not None:
            self._phase = Phase.ENVELOPE
            try:
                if self._dirty:
                    await client.rset()
                    self._dirty = False
                await client.mail(self.sender.envelope_from)
                return client
            except (smtp_errors.SMTPException, OSError) as exc:
                # A failed RSET is about the last message, not this one: start afresh too.
                if not (self._dirty or _closed_meanwhile(exc)):
                    raise
                # Nothing of this message was sent, so a fresh connection is safe; only once,
                # so a server that keeps failing still fails this send.
                log.info("reused SMTP connection unusable (%s): reconnecting", type(exc).__name__)
                self._drop()
        self._phase = Phase.SESSION
        client = self._client = await self._open()
        self._phase = Phase.ENVELOPE
        await client.mail(self.sender.envelope_from)
        return client

    async def _open(self) -> aiosmtplib.SMTP:
        # start_tls=False and no credentials in the client: each step is run here, so a
        # failure is always seen in the phase it happened in.
        server = self.sender.server
        client = aiosmtplib.SMTP(
            hostname=server.host,
            port=server.port,
            timeout=server.timeout,
            use_tls=server.tls is TlsMode.TLS,
            start_tls=False,
        )
        try:
            await client.connect()
            await _greet(client)
            if server.tls is TlsMode.STARTTLS:
                await client.starttls()
                await _greet(client)  # RFC 3207: what the server said before TLS no longer counts
            if server.username is not None:
                await client.login(server.username, server.password or "")
        except BaseException:
            client.close()
            raise
        self._dirty = False
        return client

    def _after_failure(self, error: BaseException) -> None:
        """Keep the connection after a plain refusal of the message; drop it after anything
        that leaves its state unknown."""
        code = reply_code(error) if rule_for(error) in (Rule.REPLY, Rule.REPLIES) else None
        # Only a 4xx/5xx says the transaction is over; any other code after DATA is ambiguous.
        refused = code is not None and 400 <= code < 600 and code != _CLOSING
        usable = self._client is not None and self._client.is_connected
        if refused and usable and self._phase is not Phase.SESSION:
            self._dirty = True
        else:
            self._drop()

    def _drop(self) -> None:
        """Close the connection without a word: on a dead or slow link QUIT could wait another
        full timeout."""
        client, self._client = self._client, None
        if client is not None:
            client.close()


# RFC 5321 3.8: a server closing the channel on its own (an idle timeout, a shutdown) answers
# the next command with 421 first.
_CLOSING = 421


def _closed_meanwhile(error: BaseException) -> bool:
    """Whether a reused connection's first command failed because the server had let the
    connection go: the link is gone, or the server said it is closing it."""
    return rule_for(error) is Rule.LINK or reply_code(error) == _CLOSING


async def _greet(client: aiosmtplib.SMTP) -> None:
    """EHLO, or HELO for an old server that refuses EHLO (as RFC 5321 allows)."""
    try:
        await client.ehlo()
    except smtp_errors.SMTPHeloError:
        if not client.is_connected:
            raise
        await client.helo()


async def _close(client: aiosmtplib.SMTP) -> None:
    """Say QUIT if still connected; a failed QUIT never changes the outcome of the send."""
    if not client.is_connected:
        return
    try:
        await client.quit()
    except (smtp_errors.SMTPException, OSError):
        # The reply to DATA already settled the message's fate; just drop the connection.
        client.close()

"""The mailbox's pass, every MANZOORI_MAILBOX_CHECK_SECONDS in each `manzoori run` (with IMAP_HOST
set): one short IMAP session that

1. looks every send of unknown outcome up in the relay's Sent folder (or the journal mailbox)
   by its Message-ID and Idempotency-Key, and hands what it found to core.outbox.reconcile,
   which settles it as sent, waits out the grace period, or leaves it to a person; and
2. reads the inbox after its durable cursor, a batch at a time, without marking anything seen,
   and files the replies that belong to a PO (core.suppliers.replies).

An IMAP outage is logged, counted and shown on /healthz as degraded: the bot and the outbox go
on, and the next pass tries again. Several processes may run the pass at once: settling is a
compare-and-set, and a message is filed once whoever reads it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import TYPE_CHECKING

from prometheus_client import Counter

from bot import logs
from bot.clock import Runtime
from bot.mailbox import MailboxError
from bot.mailbox.reading import read_mail
from core.jobs.effects import message_id
from core.outbox import reconcile
from core.suppliers import replies
from core.suppliers.mail import InboundMail
from core.suppliers.replies import InboxBatch
from store.sql import SqlStore

if TYPE_CHECKING:  # imap-tools is imported where a mailbox is opened, not at start-up
    from bot.mailbox.imap import FetchedMail, Mailbox, MailboxSession

log = logging.getLogger(__name__)

# Inbox messages one fetch reads, and fetches one pass makes at most: a big inbox is read over
# a few passes, and no pass holds a connection for long.
BATCH = 50
FETCHES = 4


@dataclass(frozen=True)
class MailboxCounters:
    """The mailbox's metrics (bot.web.metrics makes them, on its registry)."""

    passes: Counter  # by outcome: ok, failed
    settled: Counter  # by finding (core.outbox.reconcile.Finding)
    replies: Counter  # by fate: filed, left alone


class MailboxRunner:
    """One pass over the mailbox at a time; `run_once` never raises for an IMAP failure."""

    def __init__(
        self,
        store: SqlStore,
        mailbox: Mailbox,
        *,
        mail_domain: str,
        grace: timedelta,
        counters: MailboxCounters,
        trouble: Callable[[str | None], None],
        runtime: Runtime | None = None,
    ) -> None:
        config = mailbox.config
        self.store, self.mailbox = store, mailbox
        self.domain, self.grace = mail_domain, grace  # our Message-IDs' domain; the relay's delay
        self.sent_folder, self.inbox = config.sent_folder, config.inbox_folder
        # `trouble(why)` while the mailbox fails, `trouble(None)` once it answers (/healthz)
        self.counters, self.trouble = counters, trouble
        self.runtime = runtime or Runtime.of_process("mailbox")

    async def run_once(self) -> int:
        """One pass; always 0, so the loop waits its interval before the next."""
        try:
            async with self.mailbox.session() as session:
                await self.reconcile(session)
                await self.read_inbox(session)
        except MailboxError as error:
            log.warning("the mailbox pass failed: %s", error)
            self.counters.passes.labels("failed").inc()
            self.trouble(f"the mailbox does not answer: {error}")
            return 0
        self.counters.passes.labels("ok").inc()
        self.trouble(None)
        return 0

    async def reconcile(self, session: MailboxSession) -> None:
        """Settle every ambiguous send from the copies of it in the Sent folder."""
        sends = await reconcile.ambiguous_sends(self.store)
        if not sends:
            return
        domain = self.domain
        wanted = [(message_id(s.effect.key, domain).strip("<>"), s.effect.key) for s in sends]
        found = await session.find_copies(self.sent_folder, wanted)
        grace = self.grace
        try:
            for send, (mid, _key) in zip(sends, wanted, strict=True):
                copies = found.get(mid, [])
                logs.about(po_number=send.job.po_number, job_id=send.job.id)  # for each line
                now = self.runtime.now()
                finding = await reconcile.settle_by_copies(
                    self.store, send, self.sent_folder, copies, now, grace
                )
                self.counters.settled.labels(finding.value).inc()
                if finding is reconcile.Finding.SENT:
                    log.info("%s settled as sent: %d copies in %s", send.effect.key,
                             len(copies), self.sent_folder)  # fmt: skip
        finally:
            logs.about()  # what the pass logs next is about no PO

    async def read_inbox(self, session: MailboxSession) -> None:
        """Read the inbox after its cursor, a batch at a time, and file what belongs to a PO."""
        async with self.store.reading() as tx:
            cursor = await tx.mailbox_cursor(self.inbox)
        validity = await session.uid_validity(self.inbox)
        after = replies.start_after(cursor, validity)
        for _ in range(FETCHES):
            fetched = await session.new_messages(self.inbox, after, BATCH)
            if not fetched:
                return
            mails = [_read(one) for one in fetched]
            after = max(one.uid for one in fetched)  # the cursor file_replies moves to
            batch = InboxBatch(self.inbox, validity, mails, after)
            domain, now = self.domain, self.runtime.now()
            filed = await replies.file_replies(self.store, batch, domain, now)
            self.counters.replies.labels("filed").inc(filed)
            self.counters.replies.labels("left alone").inc(len(mails) - filed)
            if len(fetched) < BATCH:
                return


def _read(fetched: FetchedMail) -> InboundMail:
    """One fetched message as core's value, dated by the server when its Date is missing."""
    mail: InboundMail = read_mail(
        fetched.raw, uid=fetched.uid, size=fetched.size, truncated=fetched.truncated
    )
    return mail if mail.date is not None else replace(mail, date=fetched.internaldate)

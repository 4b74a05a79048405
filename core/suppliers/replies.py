"""Suppliers' e-mail replies, read from the buyer's inbox (bot.mailbox), filed on their PO and
brought to its people in Telegram.

A message belongs to a PO when its In-Reply-To or References name one of our Message-IDs
(each derived from an e-mail's idempotency key: core.jobs.effects.message_id), or when its
subject carries the number of a PO we e-mailed to the address it comes from. One that belongs
to no PO is left alone. The inbox is read in UID order behind a durable cursor per folder, so
each message is filed once across restarts and processes; a message is never counted as an
answer or an approval, whatever it says: it is news, and the whole of its text is kept sealed,
for the retention table's time.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from core.jobs import notices
from core.jobs.effects import EffectStatus, message_id
from core.jobs.jobs import AuditEvent, Job, Stamp
from core.jobs.transitions import retry_on_stale
from core.ports import ReadTx, Store, Tx
from core.suppliers.mail import InboundMail
from core.suppliers.pages import told_of_answers

# Who the audit trail says filed a reply.
ACTOR = "mailbox:inbox"
# The unmoved audit event of a reply filed on a PO (its id, how it was matched; no text).
FILED = "supplier_mail"
# How a reply was found to belong to its PO.
BY_THREAD, BY_SUBJECT = "thread", "subject"
# An e-mail that left, or may have: a reply by subject can answer only such a one.
_LEFT = frozenset({EffectStatus.SUCCEEDED, EffectStatus.UNKNOWN})
# A PO number's shape (core.drafting.drafts), as it may appear among a subject's words.
_PO_WORD = re.compile(r"[A-Za-z0-9]+(?:[._-][A-Za-z0-9]+)*")
# Subject words looked up as PO numbers, at most: "Re: Fwd: Purchase order PO-… version 2".
_SUBJECT_WORDS = 12


@dataclass(frozen=True)
class InboxBatch:
    """Messages read from one folder after the cursor, and the last UID read (filed or not)."""

    folder: str
    uidvalidity: int
    mails: Sequence[InboundMail]
    last_uid: int


@dataclass(frozen=True)
class FiledMail:
    """A reply filed on a PO: the message, how it was matched, and whether it came from the
    supplier's address on file."""

    id: int  # the store's; 0 before it is stored
    job_id: str
    folder: str
    uidvalidity: int
    mail: InboundMail
    matched_by: str  # BY_THREAD or BY_SUBJECT
    on_file: bool  # from the address the PO was e-mailed to
    filed_at: datetime


@dataclass(frozen=True)
class Cursor:
    """Where the reading of a folder stands: its UIDVALIDITY and the last UID read."""

    uidvalidity: int
    last_uid: int


def start_after(cursor: Cursor | None, uidvalidity: int) -> int:
    """The UID to read after in a folder of `uidvalidity`: 0 for a folder never read, or one
    whose UIDs were renumbered (its messages are read again; each is filed once, by its
    Message-ID, so nothing is told twice)."""
    if cursor is None or cursor.uidvalidity != uidvalidity:
        return 0
    return cursor.last_uid


@retry_on_stale  # two processes reading one inbox: the loser finds the messages filed
async def file_replies(store: Store, batch: InboxBatch, domain: str, now: datetime) -> int:
    """File each message of `batch` that belongs to a PO and was not filed yet, owe its people
    the news, and move the folder's cursor past the batch; the number filed."""
    async with store.begin() as tx:
        after = start_after(await tx.mailbox_cursor(batch.folder), batch.uidvalidity)
        filed = 0
        for mail in batch.mails:
            if mail.uid <= after:
                continue  # another process filed it meanwhile
            found = await belongs_to(tx, mail, domain)
            if found is None:
                continue
            job, matched_by, on_file = found
            if mail.message_id and await tx.supplier_mail_filed(job.id, mail.message_id):
                continue  # read again after the folder's UIDs were renumbered
            reply = FiledMail(0, job.id, batch.folder, batch.uidvalidity, mail, matched_by,
                              on_file, now)  # fmt: skip
            await _file(tx, job, reply, now)
            filed += 1
        last = max(after, batch.last_uid)
        await tx.set_mailbox_cursor(batch.folder, Cursor(batch.uidvalidity, last), now)
        return filed


async def _file(tx: Tx, job: Job, reply: FiledMail, now: datetime) -> None:
    """Keep the reply, sealed; note it in the PO's trail; owe its people the news."""
    mail_id = await tx.insert_supplier_mail(reply)
    detail = {
        "mail": mail_id,
        "matched_by": reply.matched_by,
        "on_file": reply.on_file,
        "readable": reply.mail.readable,
        "attachments": len(reply.mail.attachments),
        "size": reply.mail.size,
    }
    await tx.append_audit(AuditEvent.unmoved(job, Stamp(ACTOR, now), FILED, detail))
    told = await told_of_answers(tx, job)
    await tx.insert_notice(*(notices.supplier_mail_for(job, who, mail_id, now) for who in told))


async def belongs_to(tx: ReadTx, mail: InboundMail, domain: str) -> tuple[Job, str, bool] | None:
    """The PO `mail` answers, how that was found, and whether it came from the address the PO
    went to; None if it belongs to none."""
    for ref in dict.fromkeys([*mail.in_reply_to, *reversed(mail.references)]):
        job = await _job_of_message_id(tx, ref, domain)
        if job is not None:
            return job, BY_THREAD, await _from_supplier(tx, job, mail.sender)
    words = [w for w in _PO_WORD.findall(mail.subject) if any(c.isdigit() for c in w)]
    for word in dict.fromkeys(words[:_SUBJECT_WORDS]):
        job = await tx.job_by_po(word)
        if job is not None and await _emailed_to(tx, job, mail.sender):
            return job, BY_SUBJECT, True
    return None


async def _job_of_message_id(tx: ReadTx, ref: str, domain: str) -> Job | None:
    """The job one of whose e-mails carried Message-ID `ref` (no angle brackets)."""
    local, _, host = ref.rpartition("@")
    parts = local.split(".")
    if host.lower() != domain.lower() or len(parts) < 4:
        return None
    job = await tx.job_by_po(".".join(parts[1:-2]))  # <kind>.<PO>.v<n>.<hash>
    if job is None:
        return None
    ours = {message_id(e.key, domain) for e in await tx.effects_for(job.id)}
    return job if f"<{ref}>" in ours else None


async def _from_supplier(tx: ReadTx, job: Job, sender: str) -> bool:
    """Whether `sender` is the address the PO's current version was e-mailed to."""
    if not sender or job.draft_version is None:
        return False
    draft = await tx.draft(job.id, job.draft_version)
    return draft.recipient_email.strip().lower() == sender


async def _emailed_to(tx: ReadTx, job: Job, sender: str) -> bool:
    """Whether we e-mailed the PO to `sender` (an e-mail of it left, or may have)."""
    left = any(e.status in _LEFT for e in await tx.effects_for(job.id))
    return left and await _from_supplier(tx, job, sender)

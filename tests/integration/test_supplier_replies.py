"""Suppliers' e-mail replies filed on their PO (core.suppliers.replies), on a real store
(SQLite and PostgreSQL): threaded by In-Reply-To or References, or by a PO number in the
subject from the address the PO went to; a stranger's reply in the thread is filed and marked,
one that belongs to no PO is left alone; each message is filed once whatever is read twice;
its people are owed the news; sender, subject and text are sealed and purged with the PO."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from sqlalchemy import select

from core.approval.policies import ApprovalPolicy, Rules
from core.jobs.effects import message_id
from core.jobs.jobs import Stamp
from core.jobs.notices import SUPPLIER_MAIL
from core.records import retention
from core.records.retention import Purge, Retention
from core.suppliers import replies
from core.suppliers.mail import Attachment, InboundMail
from core.suppliers.replies import BY_SUBJECT, BY_THREAD, Cursor, InboxBatch, file_replies
from store import schema
from tests.helpers import suppliers
from tests.helpers.factories import APPROVER_A, FAST_RETRY, REQUESTER, T0, make_draft

RULES = Rules(approval=ApprovalPolicy(ttl=timedelta(hours=24)), retry=FAST_RETRY)
DOMAIN = "shop.example"
PO, OTHER = "PO-2026-001", "PO-2026-002"
SUPPLIER = "orders@supplier.example"
LATER = T0 + timedelta(hours=3)
TEXT = "Rate changed: 10 pieces only at Rs 1,300. Dispatch Monday.\n\n> Dear supplier,\n> PO"


def mail(uid: int, **fields: object) -> InboundMail:
    """A reply as bot.mailbox reads it: from the supplier, answering nothing, unless told."""
    base = InboundMail(
        uid=uid,
        sender=SUPPLIER,
        sender_name="Hall Road Electronics",
        date=datetime(2026, 11, 29, 11, 5, tzinfo=UTC),
        subject="Re: hello",
        message_id=f"reply-{uid}@mail.supplier.example",
        in_reply_to=(),
        references=(),
        text=TEXT,
        excerpt="Rate changed: 10 pieces only at Rs 1,300. Dispatch Monday.",
        attachments=(Attachment("rates.pdf", 120_400),),
        size=4_210,
    )
    return replace(base, **fields)  # type: ignore[arg-type]


def batch(*mails: InboundMail, validity: int = 7, last: int | None = None) -> InboxBatch:
    return InboxBatch("INBOX", validity, mails, last or max(m.uid for m in mails))


async def po_sent(store, po=PO):
    """A PO approved and e-mailed to the supplier: the Message-ID its e-mail carried, bare."""
    effect = await suppliers.sent(store, make_draft(po, recipient=SUPPLIER), T0, RULES)
    return message_id(effect.key, DOMAIN).strip("<>")


async def filed_on(store, po=PO):
    async with store.reading() as tx:
        job = await tx.job_by_po(po)
        mails = await tx.supplier_mails(job.id)
        news = [
            (n.user_id, n.event)
            for n in await tx.notices_for(job.id)
            if n.event.startswith(SUPPLIER_MAIL)
        ]
        trail = [e for e in await tx.audit(job.id) if e.action == replies.FILED]
        return mails, news, trail


async def test_a_reply_in_the_thread_is_filed_sealed_and_its_people_told(store):
    ours = await po_sent(store)
    first = mail(11, in_reply_to=(ours,))
    assert await file_replies(store, batch(first), DOMAIN, LATER) == 1
    [filed], news, [event] = await filed_on(store)
    assert (filed.matched_by, filed.on_file, filed.folder, filed.uidvalidity) == (
        BY_THREAD,
        True,
        "INBOX",
        7,
    )
    assert filed.mail == first and filed.filed_at == LATER  # all of it, opened again
    assert sorted(news) == [
        (REQUESTER, f"{SUPPLIER_MAIL}:{filed.id}"),
        (APPROVER_A, f"{SUPPLIER_MAIL}:{filed.id}"),
    ]
    assert event.detail == {
        "mail": filed.id,
        "matched_by": BY_THREAD,
        "on_file": True,
        "readable": True,
        "attachments": 1,
        "size": 4_210,
    }  # no address, subject or text in the trail
    async with store.reading() as tx:
        assert await tx.mailbox_cursor("INBOX") == Cursor(7, 11)
        [row] = (await tx.conn.execute(select(schema.supplier_mail))).all()
    for plain in (b"Rate changed", SUPPLIER.encode(), b"rates.pdf", b"Hall Road"):
        assert plain not in row.mail_encrypted


async def test_references_and_the_subject_thread_a_reply_too(store):
    ours = await po_sent(store)
    await po_sent(store, OTHER)
    by_refs = mail(3, in_reply_to=("elsewhere@x.example",), references=("a@b", ours))
    by_subject = mail(4, subject=f"RE: Fwd: Purchase order {OTHER} version 1")
    assert await file_replies(store, batch(by_refs, by_subject), DOMAIN, LATER) == 2
    assert [m.matched_by for m in (await filed_on(store))[0]] == [BY_THREAD]
    assert [m.matched_by for m in (await filed_on(store, OTHER))[0]] == [BY_SUBJECT]


async def test_a_stranger_in_the_thread_is_marked_by_subject_alone_left_alone(store):
    ours = await po_sent(store)
    stranger = "someone@elsewhere.example"
    in_thread = mail(5, sender=stranger, in_reply_to=(ours,))
    by_subject = mail(6, sender=stranger, subject=f"Re: Purchase order {PO}")
    nobody = mail(7, subject="Eid greetings", in_reply_to=("x@y.example",))
    forged = mail(8, in_reply_to=(ours.replace(DOMAIN, "evil.example"),))
    assert (
        await file_replies(store, batch(in_thread, by_subject, nobody, forged), DOMAIN, LATER) == 1
    )
    [filed], _, _ = await filed_on(store)
    assert (filed.mail.uid, filed.on_file) == (5, False)
    async with store.reading() as tx:
        assert await tx.mailbox_cursor("INBOX") == Cursor(7, 8)  # past what was left alone


async def test_each_message_is_filed_once_whatever_is_read_twice(store):
    ours = await po_sent(store)
    replies_ = [mail(uid, in_reply_to=(ours,)) for uid in (1, 2)]
    assert await file_replies(store, batch(*replies_), DOMAIN, LATER) == 2
    assert await file_replies(store, batch(*replies_), DOMAIN, LATER) == 0  # a second process
    # The folder's UIDs renumbered: read again from the start, filed once by Message-ID.
    renumbered = [replace(m, uid=m.uid + 100) for m in replies_]
    assert await file_replies(store, batch(*renumbered, validity=8), DOMAIN, LATER) == 0
    mails, news, trail = await filed_on(store)
    assert len(mails) == 2 and len(news) == 4 and len(trail) == 2
    async with store.reading() as tx:
        assert await tx.mailbox_cursor("INBOX") == Cursor(8, 102)


async def test_an_unreadable_message_is_filed_by_size_and_sender(store):
    ours = await po_sent(store)
    big = mail(9, in_reply_to=(ours,), readable=False, text="", excerpt="", size=7_340_032)
    assert await file_replies(store, batch(big), DOMAIN, LATER) == 1
    [filed], _, [event] = await filed_on(store)
    assert (filed.mail.readable, filed.mail.size, filed.mail.sender) == (False, 7_340_032, SUPPLIER)
    assert event.detail["readable"] is False


async def test_the_purge_of_a_closed_po_drops_its_replies_text(store):
    ours = await po_sent(store)
    await file_replies(store, batch(mail(1, in_reply_to=(ours,))), DOMAIN, LATER)
    purge = Purge(Stamp("test", LATER + timedelta(days=400)), Retention(), frozenset())
    removed = await retention.run(store, purge)
    assert removed["supplier_mail"] == 1
    [kept], _, _ = await filed_on(store)
    assert (kept.mail.text, kept.mail.sender, kept.mail.subject) == ("", "", "")
    assert (kept.mail.size, kept.matched_by) == (4_210, BY_THREAD)

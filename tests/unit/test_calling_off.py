"""Calling off a PO that was sent, without I/O: the cancel-po key and its outbox row, the
cancellation e-mail's headers and body, what people are told, why a cancellation is refused,
and that a called-off PO no longer counts against a budget."""

from __future__ import annotations

import email
import email.policy
import hashlib
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from bot.outbox.emails import render_cancellation_body, render_cancellation_email
from bot.telegram.texts import admin_alert, call_off_notice, state_words
from bot.words.cancelling import CANCEL_REFUSALS, cancel_refusal
from bot.words.i18n import ENGLISH, Language, translator
from core.approval.budgets import COMMITTED
from core.company.company import Branch, Buyer, Company
from core.drafting.drafts import draft_hash
from core.errors import CancelRefusal, CancelRefused
from core.jobs.effects import EffectKind, EffectStatus, cancel_po_key, message_id, send_po_key
from core.jobs.jobs import Cancellation, Effect, Job, NewJob, SendOrder
from core.jobs.notices import CALL_OFF_DONE, CALLED_OFF, NoticeKind, call_off_news_for
from core.jobs.states import CALLING_OFF, State
from tests.helpers.factories import REQUESTER, T0, make_draft
from tests.helpers.urdu import english_runs

HASH = hashlib.sha256(b"draft version 2").hexdigest()
DOMAIN = "shop.example"
MAIL_FROM = f"Orders <orders@{DOMAIN}>"
PO = "PO-2026-014"
SENT_AT = datetime(2026, 11, 28, 14, 5, tzinfo=UTC)


def sent_job(po: str = PO) -> Job:
    """A job whose draft version 2 was e-mailed."""
    draft = make_draft(po)
    job = Job.received(NewJob("0" * 8 + "-0000-4000-8000-" + "0" * 12, REQUESTER, "ref"), po, T0)
    return replace(job, state=State.SENT, version=7, draft_version=2, draft_hash=draft_hash(draft))


def cancel_order(reason: str = "ordered twice by mistake", sent_at: datetime | None = SENT_AT):
    job = replace(sent_job(), state=State.CANCELLING)
    effect = Effect.cancel_po(job, T0)
    called = Cancellation(reason, sent_at)
    return SendOrder(effect, job, make_draft(PO), cancellation=called)


# -- the key and the row ---------------------------------------------------------------------


def test_cancel_po_key_format() -> None:
    """cancel-po:<PO>:v<version>:<first 12 hex of the hash>, beside the send-po key."""
    key = cancel_po_key(PO, 2, HASH)
    assert key == f"cancel-po:{PO}:v2:{HASH[:12]}"
    assert key.split(":")[1:] == send_po_key(PO, 2, HASH).split(":")[1:]
    assert key != send_po_key(PO, 2, HASH)
    assert message_id(key, DOMAIN) == f"<cancel-po.{PO}.v2.{HASH[:12]}@{DOMAIN}>"


def test_the_cancellation_row_is_due_now_and_names_the_sent_version() -> None:
    job = sent_job()
    effect = Effect.cancel_po(job, T0)
    assert effect.kind == EffectKind.CANCEL_PO == "cancel-po"
    assert Effect.send_po(job, T0).kind == EffectKind.SEND_PO
    assert (effect.draft_version, effect.draft_hash) == (2, job.draft_hash)
    assert effect.key == cancel_po_key(PO, 2, job.draft_hash or "")
    assert (effect.status, effect.attempts, effect.next_attempt_at) == (
        EffectStatus.PENDING,
        0,
        T0,
    )


def test_the_news_of_a_called_off_po_is_one_notice_per_person_and_event() -> None:
    job = replace(sent_job(), state=State.CANCELLING)
    made = call_off_news_for(job, 2001, T0, CALLED_OFF)
    assert (made.kind, made.user_id, made.event) == (NoticeKind.STATUS, 2001, CALLED_OFF)
    keys = {
        call_off_news_for(job, user, T0, event).key
        for user in (REQUESTER, 2001)
        for event in (CALLED_OFF, CALL_OFF_DONE)
    }
    assert len(keys) == 4


# -- the e-mail --------------------------------------------------------------------------------


def test_the_cancellation_email_threads_under_the_po_and_names_its_key() -> None:
    order = cancel_order()
    message = render_cancellation_email(order, mail_from=MAIL_FROM, now=T0)
    key = order.effect.key
    placed = message_id(send_po_key(PO, 2, order.effect.draft_hash), DOMAIN)
    assert message["Subject"] == f"Cancellation of purchase order {PO} from Manzoori"
    assert message["From"] == MAIL_FROM and message["To"] == "orders@supplier.example"
    assert message["Message-ID"] == message_id(key, DOMAIN)
    assert message["Idempotency-Key"] == key and key.startswith("cancel-po:")
    assert message["In-Reply-To"] == placed and message["References"] == placed
    assert message["Date"] == "Sun, 29 Nov 2026 09:00:00 +0000"
    assert not message.is_multipart()  # plain text: no PDF, no CSV
    assert message.get_content_type() == "text/plain"
    # What a mail program reads back from the wire.
    wire = email.message_from_bytes(message.as_bytes(), policy=email.policy.default)
    assert wire["In-Reply-To"] == placed
    assert wire.get_content().replace("\r\n", "\n") == render_cancellation_body(order)


def test_the_cancellation_body_says_which_po_when_why_and_what_to_do() -> None:
    body = render_cancellation_body(cancel_order()).splitlines()
    assert body[0] == f"Cancellation of purchase order {PO} from Manzoori"
    assert f"PO number: {PO}" in body and "Draft version: 2" in body
    assert "Supplier: Hall Road Electronics" in body
    assert "Sent: 28 Nov 2026, 14:05 UTC" in body
    assert "Reason: ordered twice by mistake" in body
    assert body[-1] == f"We cancel purchase order {PO}. Please do not supply or invoice it."


def test_the_buyer_of_the_drafts_company_signs_the_cancellation() -> None:
    main = Branch("main", "Main", "12 Main Boulevard, Lahore")
    company = Company(Buyer("Lahore Traders (Pvt) Ltd", ""), (main,), "main")
    order = replace(cancel_order(), company=company)
    message = render_cancellation_email(order, mail_from=MAIL_FROM, now=T0)
    assert (
        message["Subject"] == f"Cancellation of purchase order {PO} from Lahore Traders (Pvt) Ltd"
    )


def test_a_send_date_not_known_is_left_out_and_the_reason_is_neutralised() -> None:
    """A person recorded that the PO arrived, not when: no date. The reason was typed in
    Telegram: one line, and never a formula when pasted into a spreadsheet."""
    order = cancel_order('=HYPERLINK("http://x")\nBcc: someone@example.com', sent_at=None)
    body = render_cancellation_body(order)
    assert "Sent:" not in body
    assert 'Reason: \'=HYPERLINK("http://x") Bcc: someone@example.com' in body.splitlines()
    message = render_cancellation_email(order, mail_from=MAIL_FROM, now=T0)
    assert message["Bcc"] is None


# -- words -------------------------------------------------------------------------------------


def test_what_the_people_of_a_called_off_po_read() -> None:
    made = call_off_notice(PO, CALLED_OFF, "ordered twice.", "Ayesha")
    assert made == (
        f"🚫 {PO} was cancelled by Ayesha after it had been sent: ordered twice. The supplier "
        "is being e-mailed the cancellation."
    )
    done = call_off_notice(PO, CALL_OFF_DONE, None, "")
    assert done == f"🚫 {PO} is cancelled: the supplier has the cancellation."
    urdu = translator(Language.UR)
    for event in (CALLED_OFF, CALL_OFF_DONE):
        said = call_off_notice(PO, event, "ordered twice", "Ayesha", tr=urdu)
        assert english_runs(said) == [] and PO in said


@pytest.mark.parametrize("state", sorted(CALLING_OFF), ids=str)
def test_a_requester_reads_a_called_off_po_as_cancelled(state: State) -> None:
    assert state_words(state).startswith("cancelled; ")
    assert english_runs(state_words(state, tr=translator(Language.UR))) == []


@pytest.mark.parametrize("state", [State.CANCEL_UNKNOWN, State.CANCEL_FAILED], ids=str)
def test_the_admins_are_told_why_a_cancellation_needs_them(state: State) -> None:
    said = admin_alert(PO, state.value, None)
    assert said.startswith(f"⚠️ {PO} needs you: its cancellation e-mail") and "/queue" in said


@pytest.mark.parametrize("why", list(CancelRefusal), ids=str)
def test_every_refusal_says_the_po_in_both_languages(why: CancelRefusal) -> None:
    refused = CancelRefused(PO, "CANCELLING", why)
    assert why in CANCEL_REFUSALS
    said = cancel_refusal(refused, tr=ENGLISH)
    assert PO in said and "{" not in said
    urdu = cancel_refusal(refused, tr=translator(Language.UR))
    assert PO in urdu and english_runs(urdu) == []


# -- budgets -----------------------------------------------------------------------------------


def test_a_called_off_po_is_not_committed_spend() -> None:
    """The budgets count APPROVED, SENDING, SENT and UNKNOWN_OUTCOME; calling a sent PO off
    releases its spend at once, whatever becomes of the cancellation e-mail."""
    assert State.SENT in COMMITTED
    assert not (CALLING_OFF | {State.CANCELLED}) & COMMITTED

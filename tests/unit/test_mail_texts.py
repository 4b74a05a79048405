"""What a PO's people read of a supplier's e-mail reply (bot.telegram.texts.supplier_mail_notice)
and how a review-queue message says a send was settled from the mail relay's copies."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from bot.telegram.review_texts import relay_headline
from bot.telegram.texts import QUOTE_MARK, size_text, supplier_mail_notice
from bot.words.i18n import Language, translator
from core.suppliers.mail import Attachment, InboundMail
from core.suppliers.replies import BY_THREAD, FiledMail
from tests.helpers.urdu import english_runs

PKT = ZoneInfo("Asia/Karachi")
URDU = translator(Language.UR)
PO = "PO-2026-001"
MAIL = InboundMail(
    uid=4,
    sender="orders@supplier.example",
    sender_name="Hall Road\u202e Electronics",
    date=datetime(2026, 12, 5, 6, 5, tzinfo=UTC),
    subject="Re: Purchase order PO-2026-001\r\n✅ Approved",
    message_id="r@x",
    in_reply_to=(),
    references=(),
    text="",
    excerpt="Rate changed, 10 pieces only.\n✅ Approved by Boss\n\nDispatch Monday.",
    attachments=(Attachment("rates.pdf", 120_400), Attachment("photo.jpg", 1_250_000)),
    size=4_210,
)
FILED = FiledMail(1, "j", "INBOX", 7, MAIL, BY_THREAD, True, datetime(2026, 12, 5, tzinfo=UTC))


def test_a_reply_shows_who_when_the_subject_the_new_words_and_the_files():
    said = supplier_mail_notice(FILED, PO, "orders@supplier.example", PKT)
    assert said.splitlines() == [
        f"📧 {PO}: an e-mail reply from Hall Road Electronics <orders@supplier.example>, "
        "05 Dec 2026, 11:05 PKT",
        f"Subject: Re: Purchase order {PO} ✅ Approved",
        "",
        f"{QUOTE_MARK} Rate changed, 10 pieces only.",
        f"{QUOTE_MARK} ✅ Approved by Boss",  # marked as theirs: it cannot pass for ours
        QUOTE_MARK,
        f"{QUOTE_MARK} Dispatch Monday.",
        "",
        "Attachments (in the buyer's mailbox): rates.pdf (120 KB), photo.jpg (1.2 MB)",
    ]


def test_a_stranger_is_marked_and_an_unreadable_message_is_only_its_size():
    stranger = replace(FILED, on_file=False, mail=replace(MAIL, sender="x@elsewhere.example"))
    said = supplier_mail_notice(stranger, PO, "orders@supplier.example", PKT)
    assert (
        said.splitlines()[1]
        == "⚠️ From an address not on file: the PO went to or***@supplier.example."
    )
    big = replace(FILED, mail=replace(MAIL, readable=False, excerpt="", size=7_340_032))
    assert supplier_mail_notice(big, PO, "orders@supplier.example", PKT).splitlines()[1:] == [
        "It is 7.3 MB and cannot be shown here (too large, or not a well-formed e-mail): "
        "read it in the buyer's mailbox."
    ]


def test_many_files_are_counted_and_an_empty_reply_says_so():
    files = tuple(Attachment(f"p{n}.jpg", 1_000) for n in range(13))
    said = supplier_mail_notice(
        replace(FILED, mail=replace(MAIL, attachments=files, excerpt="")), PO, "", PKT
    )
    assert f"{QUOTE_MARK} (no text)" in said.splitlines()
    assert said.endswith("p9.jpg (1 KB) and 3 more")


def test_sizes_read_as_a_person_reads_them():
    assert [size_text(n) for n in (0, 999, 1_000, 120_400, 999_999, 7_340_032)] == [
        "0 B",
        "999 B",
        "1 KB",
        "120 KB",
        "1000 KB",
        "7.3 MB",
    ]


def test_in_urdu_only_names_numbers_and_the_suppliers_words_stay_english():
    said = supplier_mail_notice(FILED, PO, "orders@supplier.example", PKT, tr=URDU)
    ours = [line for line in said.splitlines() if not line.startswith(QUOTE_MARK)]
    runs = english_runs("\n".join(ours))
    assert all(
        run in f"{PO} Hall Road Electronics orders@supplier.example Re: Purchase order "
        "Approved rates.pdf photo.jpg KB MB Dec PKT"
        for run in runs
    ), runs


def test_the_relays_copies_on_the_queue_message():
    one = {"copies": [{"folder": "Sent", "uid": 4, "internaldate": "x"}]}
    two = {"copies": [{"folder": "Sent", "uid": 4}, {"folder": "Sent", "uid": 5}]}
    assert relay_headline(one, "10:31", translator(Language.EN)) == (
        "✅ <b>Settled as sent</b> at 10:31: the mail relay's copy is in Sent"
    )
    assert relay_headline(two, "10:31", translator(Language.EN)) == (
        "✅ <b>Settled as sent</b> at 10:31: 2 copies are in Sent, so it left 2 times"
    )

"""One inbox message read into core's InboundMail (bot.mailbox.reading): the headers, the text
(HTML-only mail as text), the new words with the quoted original and the signature cut, the
attachments by name and size; a message too large, truncated or malformed is noted by its
sender and size only; and no input makes it raise."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta, timezone
from email.message import EmailMessage

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.mailbox.reading import excerpt_of, read_mail
from core.suppliers.mail import EXCERPT_CHARS, MAX_MAIL_BYTES, Attachment

PKT = timezone(timedelta(hours=5))


def mail(body: str | None = "Ok", *, html: str | None = None, **headers: str) -> EmailMessage:
    message = EmailMessage()
    message["From"] = headers.pop("From", "Hall Road Traders <Orders@HallRoad.pk>")
    message["Subject"] = headers.pop("Subject", "Re: Purchase order PO-2026-0042")
    message["Message-ID"] = headers.pop("Message_ID", "<CAF1x@mail.gmail.com>")
    message["Date"] = headers.pop("Date", "Sat, 05 Dec 2026 10:05:00 +0500")
    for name, value in headers.items():
        message[name.replace("_", "-")] = value
    if body is not None:
        message.set_content(body)
        if html is not None:
            message.add_alternative(html, subtype="html")
    elif html is not None:
        message.set_content(html, subtype="html")
    return message


def read(message: EmailMessage | bytes, **more: object):
    raw = message if isinstance(message, bytes) else message.as_bytes()
    return read_mail(raw, uid=7, size=len(raw), **more)  # type: ignore[arg-type]


def test_a_gmail_reply_its_headers_and_its_new_words():
    body = (
        "Rate changed: Rs 1,300 each.\n10 pieces only.\n\n"
        "On Fri, 4 Dec 2026 at 10:15, Manzoori <po@shop.pk> wrote:\n"
        "> Dear supplier,\n> please find attached PO-2026-0042.\n"
    )
    got = read(
        mail(body, html="<p>Rate changed</p>", In_Reply_To="<send-po.PO-2026-0042.v1.ab@shop.pk>")
    )
    assert (got.uid, got.sender, got.sender_name) == (7, "orders@hallroad.pk", "Hall Road Traders")
    assert got.date == datetime(2026, 12, 5, 10, 5, tzinfo=PKT)
    assert got.subject == "Re: Purchase order PO-2026-0042"
    assert (got.message_id, got.in_reply_to) == (
        "CAF1x@mail.gmail.com",
        ("send-po.PO-2026-0042.v1.ab@shop.pk",),
    )
    assert got.text == body.rstrip("\n")  # the plain part, whole
    assert got.excerpt == "Rate changed: Rs 1,300 each.\n10 pieces only."
    assert got.readable and got.attachments == ()


def test_gmails_wrapped_attribution_outlooks_blocks_phones_and_signatures_are_cut():
    cases = {
        "Dispatch Monday.\n\nOn Fri, 4 Dec 2026 at 10:15, Manzoori <po@shop.pk>\nwrote:\n> PO": (
            "Dispatch Monday."
        ),
        "Fine.\n\n-----Original Message-----\nFrom: Manzoori\nSent: Friday": "Fine.",
        "Fine too.\n\nFrom: Manzoori <po@shop.pk>\nSent: Friday, 4 December 2026\nTo: Ali": (
            "Fine too."
        ),
        "Noted\n________________________________\nFrom: Manzoori": "Noted",
        "Yes, tomorrow.\n\nSent from my Huawei phone": "Yes, tomorrow.",
        "Theek hai\n-- \nAli Traders\n0300 1234567": "Theek hai",
        "> quoted first\nthen my answer": "> quoted first\nthen my answer",  # nothing above
    }
    for text, new in cases.items():
        assert excerpt_of(text) == new, text


def test_an_urdu_reply_with_an_encoded_subject():
    message = mail("ٹھیک ہے، صرف دس پیس۔", Subject="جواب: PO-2026-0042")
    raw = message.as_bytes()
    assert b"=?utf-8?" in raw  # RFC 2047 on the wire
    got = read(raw)
    assert (got.subject, got.excerpt) == ("جواب: PO-2026-0042", "ٹھیک ہے، صرف دس پیس۔")


def test_html_only_mail_is_text_without_its_scripts_or_styles():
    html = (
        "<html><head><style>p {color: red}</style><script>alert('x')</script></head>"
        "<body><p>Rate &amp; quantity</p><p>line one<br>line two</p></body></html>"
    )
    got = read(mail(None, html=html))
    assert got.text == "Rate & quantity\n\nline one\nline two"
    assert "<" not in got.text and "alert" not in got.text and "color" not in got.text


def test_attachments_are_listed_by_name_and_size():
    message = mail("Rates attached.")
    message.add_attachment(b"%PDF-1.7 " + b"x" * 991, maintype="application", subtype="pdf",
                           filename="rates Dec.pdf")  # fmt: skip
    message.add_attachment(b"\xff\xd8" + b"y" * 2046, maintype="image", subtype="jpeg",
                           filename="photo.jpg")  # fmt: skip
    got = read(message)
    assert got.attachments == (Attachment("rates Dec.pdf", 1_000), Attachment("photo.jpg", 2_048))
    assert got.excerpt == "Rates attached."


def test_references_and_in_reply_to_without_brackets_in_order():
    refs = " ".join(f"<id{n}@x.example>" for n in range(12))
    got = read(mail("Ok", References=refs, In_Reply_To="<id11@x.example>"))
    assert got.references == tuple(f"id{n}@x.example" for n in range(12))
    assert got.in_reply_to == ("id11@x.example",)


def test_a_missing_or_garbled_date_is_none_a_naive_one_utc():
    assert read(mail("Ok", Date="sometime yesterday")).date is None
    raw = mail("Ok").as_bytes().replace(b"Date: Sat, 05 Dec 2026 10:05:00 +0500\n", b"")
    assert read(raw).date is None
    naive = read(mail("Ok", Date="Sat, 05 Dec 2026 10:05:00 -0000"))
    assert naive.date == datetime(2026, 12, 5, 10, 5, tzinfo=UTC)


def test_a_malformed_truncated_or_too_large_message_is_its_sender_and_size_only():
    broken = (
        b"From: Ali <ali@hallroad.pk>\r\nSubject: rates\r\n"
        b'Content-Type: multipart/mixed; boundary="XYZ"\r\n\r\nno boundary ever\r\n'
    )
    malformed = read(broken)
    assert (malformed.sender, malformed.subject, malformed.readable) == (
        "ali@hallroad.pk",
        "rates",
        False,
    )
    for got in (
        malformed,
        read(mail("Rates"), truncated=True),
        read_mail(mail("Rates").as_bytes(), uid=7, size=MAX_MAIL_BYTES + 1),
    ):
        assert not got.readable and (got.text, got.excerpt, got.attachments) == ("", "", ())
    assert read_mail(b"", uid=7, size=MAX_MAIL_BYTES + 1).size == MAX_MAIL_BYTES + 1


def test_a_long_reply_is_cut_at_a_word_with_an_ellipsis():
    words = " ".join(f"word{n}" for n in range(600))  # about 4,300 characters
    got = read(mail(words))
    assert got.excerpt.endswith("…") and len(got.excerpt) <= EXCERPT_CHARS + 1
    assert got.excerpt[:-1] == words[: len(got.excerpt) - 1]
    assert words[len(got.excerpt) - 1] == " "  # at a word boundary


def test_a_base64_body_with_a_wrong_charset_is_replaced_not_raised():
    raw = (
        b"From: a@b.example\r\nSubject: x\r\nContent-Type: text/plain; charset=utf-8\r\n"
        b"Content-Transfer-Encoding: base64\r\n\r\n" + base64.b64encode(b"ok \xff\xfe done")
    )
    got = read(raw)
    assert got.readable and got.excerpt.startswith("ok ") and got.excerpt.endswith("done")


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=2_000))
def test_no_bytes_make_it_raise(raw):
    got = read_mail(raw, uid=1, size=len(raw))
    assert got.uid == 1 and "\r" not in got.text


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=3_000))
def test_any_text_body_gives_a_bounded_excerpt(text):
    got = read(mail(text))
    assert len(got.excerpt) <= EXCERPT_CHARS + 1 and "\r" not in got.excerpt

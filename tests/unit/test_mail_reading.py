"""One inbox message read into core's InboundMail (bot.mailbox.reading): the headers, the text
(HTML-only mail as text), the new words with the quoted original and the signature cut, the
attachments by name and size; a message too large, truncated or malformed is noted by its
headers and size only; and no input makes it raise."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta, timezone
from email.message import EmailMessage

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.mailbox.reading import excerpt_of, read_mail
from core.suppliers.mail import EXCERPT_CHARS, MAX_MAIL_BYTES, Attachment, InboundMail

PKT = timezone(timedelta(hours=5))
QUOTED = "> Dear supplier,\n> please find attached PO-2026-0042.\n"


def mail(body: str | None = "Ok", *, html: str | None = None, **headers: str) -> EmailMessage:
    message = EmailMessage()
    message["From"] = headers.pop("From", "Hall Road Traders <Orders@HallRoad.pk>")
    message["Subject"] = headers.pop("Subject", "Re: Purchase order PO-2026-0042")
    message["Message-ID"] = headers.pop("Message_ID", "<CAF1x@mail.gmail.com>")
    message["Date"] = headers.pop("Date", "Sat, 05 Dec 2026 10:05:00 +0500")
    cte = headers.pop("cte", None)
    for name, value in headers.items():
        message[name.replace("_", "-")] = value
    if body is not None:
        message.set_content(body, cte=cte)
        if html is not None:
            message.add_alternative(html, subtype="html")
    elif html is not None:
        message.set_content(html, subtype="html")
    return message


def read(message: EmailMessage | bytes, *, truncated: bool = False) -> InboundMail:
    raw = message if isinstance(message, bytes) else message.as_bytes()
    return read_mail(raw, uid=7, size=len(raw), truncated=truncated)


def test_a_gmail_reply_its_headers_and_its_new_words() -> None:
    body = (
        "Rate changed: Rs 1,300 each.\n10 pieces only.\n\n"
        f"On Fri, 4 Dec 2026 at 10:15, Manzoori <po@shop.pk> wrote:\n{QUOTED}"
    )
    html = "<div>Rate changed: Rs 1,300 each.</div><blockquote>Dear supplier</blockquote>"
    got = read(mail(body, html=html, In_Reply_To="<send-po.PO-2026-0042.v1.ab@shop.pk>"))
    assert (got.uid, got.sender, got.sender_name) == (7, "orders@hallroad.pk", "Hall Road Traders")
    assert got.date == datetime(2026, 12, 5, 10, 5, tzinfo=PKT)
    assert got.subject == "Re: Purchase order PO-2026-0042"
    assert (got.message_id, got.in_reply_to) == (
        "CAF1x@mail.gmail.com",
        ("send-po.PO-2026-0042.v1.ab@shop.pk",),
    )
    assert got.text == body.rstrip("\n")  # the plain part, whole, not the HTML one
    assert got.excerpt == "Rate changed: Rs 1,300 each.\n10 pieces only."
    assert got.readable and got.attachments == ()


def test_gmails_attribution_wrapped_before_wrote_is_cut_too() -> None:
    body = (
        "Dispatch Monday.\n\nOn Fri, 4 Dec 2026 at 10:15, Manzoori <po@shop.pk>\n"
        f"wrote:\n\n{QUOTED}"
    )
    assert read(mail(body)).excerpt == "Dispatch Monday."
    wrapped_in_the_name = (
        "Dispatch Monday.\nOn Fri, 4 Dec 2026 at 10:15, Hall Road Traders Purchasing\n"
        f"Department <po@shop.pk> wrote:\n{QUOTED}"
    )
    assert read(mail(wrapped_in_the_name)).excerpt == "Dispatch Monday."


def test_words_that_only_look_like_an_attribution_are_kept() -> None:
    body = "Rate ok.\nOn Monday the truck leaves with 10 pieces.\nAs you wrote:\nthe rate is fine"
    assert read(mail(body)).excerpt == body
    assert excerpt_of("Rate ok.\nOn Monday, you wrote:\nthe rate") == (
        "Rate ok.\nOn Monday, you wrote:\nthe rate"
    )


@pytest.mark.parametrize(
    ("text", "new"),
    [
        # Outlook's separator
        ("Fine.\n\n-----Original Message-----\nFrom: Manzoori\nSent: Friday", "Fine."),
        # Outlook's header block: From, then Sent within three lines
        (
            "Fine too.\n\nFrom: Manzoori <po@shop.pk>\nSent: Friday, 4 December 2026\n"
            "To: Ali\nSubject: PO-2026-0042",
            "Fine too.",
        ),
        # ... or Date, with To and Subject between
        ("Ok.\nFrom: Manzoori\nTo: Ali\nSubject: PO\nDate: Fri", "Ok."),
        # a "From:" without the block is the supplier's own words
        (
            "From: our Lahore godown\nto your office by Monday",
            "From: our Lahore godown\nto your office by Monday",
        ),
        # Outlook on the web's rule of underscores
        ("Noted\n________________________________\nFrom: Manzoori", "Noted"),
        # the phone's line, at the end only
        ("Yes, tomorrow.\n\nSent from my Huawei phone", "Yes, tomorrow."),
        ("Yes.\nGet Outlook for Android\n\nOn Fri, Dec 4, 2026, Manzoori wrote:\n> PO", "Yes."),
        (
            "Sent from our godown today.\nArrives Monday.",
            "Sent from our godown today.\nArrives Monday.",
        ),
        # RFC 3676's signature separator, and a bare "--"
        ("Theek hai\n-- \nAli Traders\n0300 1234567", "Theek hai"),
        ("Theek hai\n--\nAli Traders", "Theek hai"),
        # three blank lines and more made one; trailing spaces gone
        ("Line one   \n\n\n\n\nLine two", "Line one\n\nLine two"),
        # a bottom reply: nothing above the quote, so the text's start
        ("> quoted first\nthen my answer", "> quoted first\nthen my answer"),
    ],
)
def test_the_quoted_original_and_the_signature_are_cut(text: str, new: str) -> None:
    assert excerpt_of(text) == new


def test_an_outlook_reply_read_whole() -> None:
    body = (
        "Please confirm the delivery address.\r\n\r\n-----Original Message-----\r\n"
        "From: Manzoori <po@shop.pk>\r\nSent: Friday, December 4, 2026 10:15 AM\r\n"
        "To: orders@hallroad.pk\r\nSubject: Purchase order PO-2026-0042\r\n"
    )
    got = read(mail(body))
    assert got.excerpt == "Please confirm the delivery address."
    assert got.text.startswith("Please confirm the delivery address.\n\n-----Original")
    assert "\r" not in got.text


def test_a_phone_reply_with_a_signature() -> None:
    got = read(mail("Yes, tomorrow.\n-- \nAli Traders\n\nSent from my Huawei phone\n"))
    assert got.excerpt == "Yes, tomorrow."
    assert got.text == "Yes, tomorrow.\n--\nAli Traders\n\nSent from my Huawei phone"


def test_an_urdu_reply_base64_with_an_encoded_subject() -> None:
    message = mail("ٹھیک ہے، صرف دس پیس۔\n\n> PO", Subject="جواب: PO-2026-0042", cte="base64")
    raw = message.as_bytes()
    assert b"=?utf-8?" in raw and b"Content-Transfer-Encoding: base64" in raw
    got = read(raw)
    assert (got.subject, got.excerpt) == ("جواب: PO-2026-0042", "ٹھیک ہے، صرف دس پیس۔")


def test_a_folded_subject_is_one_line() -> None:
    raw = (
        b"From: =?utf-8?b?2LnZhNuM?= <ali@hallroad.pk>\r\nSubject: Re: Purchase order\r\n"
        b"\tPO-2026-0042\r\n\r\nOk\r\n"
    )
    got = read(raw)
    assert (got.subject, got.sender, got.sender_name) == (
        "Re: Purchase order PO-2026-0042",
        "ali@hallroad.pk",
        "علی",
    )


def test_html_only_mail_is_text_without_its_scripts_or_styles() -> None:
    html = (
        "<html><head><style>p {color: red}</style><script>alert('x')</script></head>"
        "<body><p>Rate &amp; quantity</p><p>line one<br>line two</p></body></html>"
    )
    got = read(mail(None, html=html))
    assert got.text == "Rate & quantity\n\nline one\nline two"
    assert got.excerpt == got.text
    assert "<" not in got.text and "alert" not in got.text and "color" not in got.text


def test_html_mails_nested_divs_and_spans_are_laid_out_as_a_browser_would() -> None:
    html = (
        '<div dir="ltr"><div><div>Rs<span>1,300</span> <span>each</span></div></div>'
        '<div class="gmail_quote"><div class="gmail_attr">On Fri, 4 Dec 2026 at 10:15, '
        "Manzoori &lt;po@shop.pk&gt; wrote:<br></div><blockquote>Dear supplier</blockquote>"
        "</div></div>"
    )
    got = read(mail(None, html=html))
    assert got.text == (
        "Rs1,300 each\nOn Fri, 4 Dec 2026 at 10:15, Manzoori <po@shop.pk> wrote:\nDear supplier"
    )
    assert got.excerpt == "Rs1,300 each"


def test_attachments_are_listed_by_name_and_size() -> None:
    message = mail("Rates attached.", html="<p>Rates attached.</p>")
    message.add_attachment(b"%PDF-1.7 " + b"x" * 991, maintype="application", subtype="pdf",
                           filename="rates Dec.pdf")  # fmt: skip
    message.add_attachment(b"\xff\xd8" + b"y" * 2046, maintype="image", subtype="jpeg",
                           filename="photo.jpg")  # fmt: skip
    got = read(message)
    assert got.attachments == (Attachment("rates Dec.pdf", 1_000), Attachment("photo.jpg", 2_048))
    assert (got.text, got.excerpt) == ("Rates attached.", "Rates attached.")


def test_an_encoded_attachment_name_is_decoded() -> None:
    message = mail("Bill attached.")
    message.add_attachment(b"x" * 10, maintype="application", subtype="pdf", filename="بل.pdf")
    assert read(message).attachments == (Attachment("بل.pdf", 10),)


def test_references_folded_with_junk_and_in_reply_to_without_brackets() -> None:
    refs = "\r\n ".join(f"<id{n}@x.example>" for n in range(12))
    raw = (
        b"From: ali@hallroad.pk\r\nIn-Reply-To: <id11@x.example> (sent by Manzoori)\r\n"
        b"References: " + refs.encode() + b"\r\n junk, <id3@x.example>\r\n\r\nOk\r\n"
    )
    got = read(raw)
    assert got.references == tuple(f"id{n}@x.example" for n in range(12))  # no repeat
    assert got.in_reply_to == ("id11@x.example",)
    assert got.message_id == ""


def test_ids_without_brackets_are_whitespace_tokens() -> None:
    got = read(b"From: a@b.example\r\nReferences: id1@x.example  id2@x.example\r\n\r\nOk\r\n")
    assert got.references == ("id1@x.example", "id2@x.example")


def test_a_missing_or_garbled_date_is_none_a_naive_one_utc() -> None:
    assert read(mail("Ok", Date="sometime yesterday")).date is None
    raw = mail("Ok").as_bytes().replace(b"Date: Sat, 05 Dec 2026 10:05:00 +0500\n", b"")
    assert b"Date:" not in raw and read(raw).date is None
    naive = read(mail("Ok", Date="Sat, 05 Dec 2026 10:05:00 -0000"))
    assert naive.date == datetime(2026, 12, 5, 10, 5, tzinfo=UTC)


BROKEN = (
    b"From: Ali <ali@hallroad.pk>\r\nSubject: rates\r\nMessage-ID: <m1@hallroad.pk>\r\n"
    b'Content-Type: multipart/mixed; boundary="XYZ"\r\n\r\nno boundary ever\r\n'
)


@pytest.mark.parametrize(
    ("raw", "truncated", "size"),
    [
        (BROKEN, False, len(BROKEN)),  # a boundary declared, never present
        (mail("Rates").as_bytes(), True, 6_000_000),  # fetched as headers only
        (mail("Rates").as_bytes(), False, MAX_MAIL_BYTES + 1),  # over the limit
    ],
)
def test_a_malformed_truncated_or_too_large_message_is_its_headers_and_size_only(
    raw: bytes, truncated: bool, size: int
) -> None:
    got = read_mail(raw, uid=9, size=size, truncated=truncated)
    assert (got.readable, got.text, got.excerpt, got.attachments) == (False, "", "", ())
    assert (got.uid, got.size) == (9, size)
    assert got.sender in ("ali@hallroad.pk", "orders@hallroad.pk")
    assert got.subject in ("rates", "Re: Purchase order PO-2026-0042")


def test_a_missing_close_boundary_is_still_read() -> None:
    raw = (
        b'From: ali@hallroad.pk\r\nContent-Type: multipart/mixed; boundary="XYZ"\r\n\r\n'
        b"--XYZ\r\nContent-Type: text/plain\r\n\r\nDispatch Monday.\r\n"
    )
    got = read(raw)
    assert (got.readable, got.excerpt) == (True, "Dispatch Monday.")


def test_an_unknown_charset_and_bad_bytes_are_replaced_not_raised() -> None:
    raw = (
        b"From: a@b.example\r\nSubject: x\r\nContent-Type: text/plain; charset=x-bogus\r\n"
        b"Content-Transfer-Encoding: base64\r\n\r\n" + base64.b64encode(b"ok \xff\xfe done")
    )
    got = read(raw)
    assert got.readable and got.excerpt == "ok \ufffd\ufffd done"


def test_a_long_reply_is_cut_at_a_word_with_an_ellipsis() -> None:
    words = [f"word{n}" if n % 7 else f"dispatch{n}" for n in range(360)]
    body = " ".join(words)
    assert 2_900 < len(body) < 3_100
    fits = ""  # the most whole words that fit, counted independently
    for word in words:
        longer = f"{fits} {word}" if fits else word
        if len(longer) > EXCERPT_CHARS:
            break
        fits = longer
    got = read(mail(body))
    assert got.excerpt == fits + "…"
    assert len(got.excerpt) <= EXCERPT_CHARS + 1 and got.text == body


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=2_000))
def test_no_bytes_make_it_raise(raw: bytes) -> None:
    got = read_mail(raw, uid=1, size=len(raw))
    assert isinstance(got, InboundMail) and got.uid == 1 and got.size == len(raw)
    assert "\r" not in got.text and len(got.excerpt) <= EXCERPT_CHARS + 1


# Pieces of real MIME, so that the arbitrary messages reach the multipart parser, the transfer
# decoders and the charsets, not only the header parser.
MIME_PIECES = st.sampled_from(
    [
        b"From: =?utf-8?b?2LnZhNuM?= <ali@hallroad.pk>\r\n",
        b"Date: Sat, 05 Dec 2026 10:05:00 +0500\r\n",
        b"References: <a@x> <b@y>\r\n",
        b'Content-Type: multipart/mixed; boundary="B"\r\n',
        b"Content-Type: multipart/alternative; boundary=B\r\n",
        b"Content-Type: text/html; charset=x-bogus\r\n",
        b"Content-Type: text/plain; charset=utf-16\r\n",
        b"Content-Type: message/rfc822\r\n",
        b"Content-Transfer-Encoding: base64\r\n",
        b"Content-Transfer-Encoding: quoted-printable\r\n",
        b"Content-Disposition: attachment; filename*=utf-8''%D8%A8.pdf\r\n",
        b"\r\n",
        b"--B\r\n",
        b"--B--\r\n",
        b"<p>x<br><script>y</script>\r\n",
        b"On Fri, 4 Dec 2026 at 10:15, M <m@x>\r\nwrote:\r\n> q\r\n",
        b"2LnZhNuM=\r\n",
        b"=D8=B9=\r\n",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(MIME_PIECES, st.binary(max_size=20)), max_size=40).map(b"".join))
def test_no_mime_like_message_makes_it_raise(raw: bytes) -> None:
    got = read_mail(raw, uid=2, size=len(raw))
    assert isinstance(got, InboundMail) and got.uid == 2
    assert "\r" not in got.text and len(got.excerpt) <= EXCERPT_CHARS + 1


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=3_000))
def test_any_text_body_gives_a_bounded_excerpt(text: str) -> None:
    got = read(mail(text))
    assert got.readable
    assert len(got.excerpt) <= EXCERPT_CHARS + 1 and "\r" not in got.excerpt

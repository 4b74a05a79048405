"""What the requester, the approvers and the admins read when a supplier answers from the link
in a PO's e-mail, in English and in Urdu (bot.telegram.texts)."""

from __future__ import annotations

from datetime import UTC, date, datetime
from zoneinfo import ZoneInfo

import pytest

from bot.telegram.texts import (
    SUPPLIER_WORDS,
    admin_alert,
    supplier_line,
    supplier_notice,
)
from bot.words.i18n import Language, translator
from core.jobs.answers import Answer, LineProposal, Reply, SupplierStatus
from core.jobs.notices import SETTLED_BY_LINK
from tests.helpers.factories import make_draft
from tests.helpers.urdu import english_runs

PO = "PO-2026-001"
AT = datetime(2026, 12, 5, 9, 3, tzinfo=UTC)
PKT = ZoneInfo("Asia/Karachi")
URDU = translator(Language.UR)
DRAFT = make_draft(PO)


def answer(reply: Reply, **more: object) -> Answer:
    return Answer("job", 1, 1, reply, f"send-po:{PO}:v1:abc", AT, **more)  # type: ignore[arg-type]


ANSWERS = [
    answer(Reply.ACCEPT),
    answer(Reply.ACCEPT, delivery_date=date(2026, 12, 22)),
    answer(Reply.DECLINE, reason="Out of stock till March."),
    answer(
        Reply.PROPOSE,
        lines=(LineProposal(1, quantity=2), LineProposal(2, unit_price_paisa=480_000)),
        delivery_date=date(2026, 12, 24),
        note="rate changed",
    ),
]


def test_what_the_team_reads_of_each_answer() -> None:
    accepted, by_date, declined, proposed = (supplier_notice(a, DRAFT) for a in ANSWERS)
    assert accepted == f"✅ Hall Road Electronics accepted {PO}."
    assert by_date == f"✅ Hall Road Electronics accepted {PO} and will deliver by 22 Dec 2026."
    assert declined == f"❌ Hall Road Electronics declined {PO}: Out of stock till March."
    assert proposed.splitlines() == [
        f"✏️ Hall Road Electronics proposes changes to {PO}:",
        "• CBL-USB-C-1M: 4 → 2 pieces",
        "• ADP-65W: Rs 4,500.00 → Rs 4,800.00 each",
        "• delivery by 24 Dec 2026",
        "Their note: rate changed",
    ]


@pytest.mark.parametrize("given", ANSWERS, ids=lambda a: a.reply.value)
def test_in_urdu_only_names_numbers_and_dates_stay_english(given: Answer) -> None:
    said = supplier_notice(given, DRAFT, tr=URDU)
    assert PO in said
    leftover = [
        run
        for run in english_runs(said)
        if run
        not in {
            "Hall Road Electronics",
            "CBL-USB-C-1M",
            "ADP-65W",
            "Rs",
            "Dec",
            "Out of stock till March",
            "rate changed",
        }
    ]
    assert leftover == []


def test_the_admins_read_that_a_link_settled_a_send() -> None:
    said = admin_alert(PO, SETTLED_BY_LINK, None)
    assert "opened the link" in said and "nothing was sent again" in said
    assert english_runs(admin_alert(PO, SETTLED_BY_LINK, None, tr=URDU)) == []


@pytest.mark.parametrize("status", list(SupplierStatus), ids=str)
def test_every_supplier_status_has_words_in_both_languages(status: SupplierStatus) -> None:
    assert SUPPLIER_WORDS[status]
    line = supplier_line(status, AT, None, PKT)
    assert line.startswith("📬 ") and "14:03" in line
    assert english_runs(supplier_line(status, AT, None, PKT, tr=URDU)) == []


def test_the_mini_app_line_says_by_when_and_why() -> None:
    _, by_date, declined, _ = ANSWERS
    assert "delivery by 22 Dec 2026" in supplier_line(SupplierStatus.ACCEPTED, AT, by_date, PKT)
    assert ": Out of stock till March." in supplier_line(SupplierStatus.DECLINED, AT, declined, PKT)


def test_the_team_hears_of_a_silent_supplier_with_its_phone_and_a_whatsapp_link() -> None:
    from bot.telegram.texts import chase_message, silent_notice, whatsapp_url

    said = silent_notice(DRAFT, AT, "923001234567", PKT)
    assert said.splitlines() == [
        f"📵 Hall Road Electronics has not answered {PO}, e-mailed 05 Dec 2026, 14:03 PKT: no "
        "accept, decline or changes from the link in the e-mail, and the reminder went "
        "unanswered too.",
        "Phone: +923001234567",
    ]
    assert "Phone" not in silent_notice(DRAFT, AT, "", PKT)
    assert english_runs(silent_notice(DRAFT, AT, "923001234567", PKT, tr=URDU)) == []
    text = chase_message(DRAFT, "https://po.example/s/abc")
    assert text.endswith("propose changes here: https://po.example/s/abc")
    url = whatsapp_url("923001234567", text)
    assert url.startswith("https://wa.me/923001234567?text=Assalam%20o%20Alaikum.%20Please")
    assert "https%3A%2F%2Fpo.example%2Fs%2Fabc" in url and " " not in url

"""What a due nudge looks like (bot.telegram.ladder): a lone reminder or warning is the card
with its buttons under a line of its own; several, and the digest, are one list with a
button per request that brings its card back; the admins' escalation names who has not
decided and who cannot be reached."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from zoneinfo import ZoneInfo

from bot.telegram.cards import APPROVE_TEXT, MESSAGE_LIMIT, REJECT_TEXT, visible_length
from bot.telegram.ladder import nudge_html, nudge_markup
from bot.words.i18n import FSI, PDI, Language, isolated, translator
from core.approval.signing import ButtonAction, verify_button
from core.drafting.drafts import Draft, DraftLine
from core.jobs.jobs import WORKFLOW_VERSION, Job
from core.jobs.notices import DIGEST
from core.jobs.states import State
from core.messaging.cards import CardFacts
from core.messaging.nudges import DIGEST_LIMIT, Due, Nudge
from tests.helpers.factories import T0

PKT = ZoneInfo("Asia/Karachi")
SECRET = b"s" * 32
HOLDER = 2001
UR = translator(Language.UR)


def facts(n: int, *, stages: int = 1, lines: int = 2) -> CardFacts:
    """The card of PO-2026-00<n>, opened n minutes after T0."""
    draft = Draft(
        po_number=f"PO-2026-{n:04d}",
        supplier_id="SUP-LHR-07",
        supplier_name="Hall Road <Traders>",
        recipient_email="orders@hallroad.example",
        terms_version="t1",
        lines=tuple(DraftLine(f"SKU-{i}", f"Item {i}", 1, 450_000_00) for i in range(lines)),
    )
    job = Job(
        id=f"0b6f4c1e-9d1c-4a57-9a8e-2f1d3c4b5a{n:02d}", po_number=draft.po_number,
        state=State.AWAITING_APPROVAL, version=1, requester_id=1001, input_ref="x",
        workflow_version=WORKFLOW_VERSION, source_versions={}, tool_results={}, draft_version=1,
        draft_hash="cc905f2486c4" + "0" * 52, supplier_id=draft.supplier_id,
        total_paisa=draft.total_paisa, retry_count=0,
        decision_deadline=T0 + timedelta(days=1), created_at=T0 + timedelta(minutes=n),
        updated_at=T0,
    )  # fmt: skip
    return CardFacts(
        job, draft, "Bilal", "restock.csv", T0, 0, 1, stages=stages, group="Owners", stage=0
    )


def nudge(step: str, *items: Due) -> Nudge:
    return Nudge(step, items, ())


def test_a_lone_reminder_is_the_card_with_its_buttons() -> None:
    one = nudge("remind", Due(facts(1)))
    text = nudge_html(one, PKT, HOLDER)
    assert text.startswith("⏰ <b>Reminder</b>: this request is still waiting")
    assert "PO-2026-0001</b> — approval needed" in text and "Hall Road &lt;Traders&gt;" in text
    markup = nudge_markup(one, SECRET)
    assert markup is not None
    texts = [b.text for row in markup.inline_keyboard for b in row]
    assert texts[:2] == [APPROVE_TEXT, REJECT_TEXT]
    signed = verify_button(SECRET, markup.inline_keyboard[0][0].callback_data)  # type: ignore[arg-type]
    assert (signed.action, signed.draft_version) == (ButtonAction.APPROVE, 1)


def test_a_lone_warning_says_when_it_expires_and_still_fits_one_message() -> None:
    big = Due(facts(1, lines=400))
    text = nudge_html(nudge("expiring", big), PKT, HOLDER)
    assert text.startswith("⌛ <b>Expires at 30 Nov 2026, 14:00 PKT</b>")
    assert visible_length(text) < MESSAGE_LIMIT


def test_several_make_one_list_with_a_card_button_each() -> None:
    several = nudge("remind", Due(facts(1)), Due(facts(2, stages=2)))
    text = nudge_html(several, PKT, HOLDER)
    lines = text.splitlines()
    assert lines[0] == "⏰ <b>Still waiting for your decision</b> (2):"
    assert lines[1].startswith("• <b>PO-2026-0001</b> · Hall Road &lt;Traders&gt; · Rs 900,000")
    assert "stage 1 of 2 (Owners)" in lines[2] and "expires 30 Nov 2026, 14:00 PKT" in lines[2]
    assert lines[-1] == "Tap a request to see its card again."
    markup = nudge_markup(several, SECRET)
    assert markup is not None
    buttons = [row[0] for row in markup.inline_keyboard]
    assert [b.text for b in buttons] == ["🔁 PO-2026-0001", "🔁 PO-2026-0002"]
    tapped = verify_button(SECRET, buttons[1].callback_data)  # type: ignore[arg-type]
    assert (tapped.action, tapped.job_id) == (ButtonAction.RESEND, facts(2).job.id)
    warned = nudge_html(replace(several, step="expiring"), PKT, HOLDER)
    assert warned.startswith("⌛ <b>Expiring soon, still waiting for your decision</b> (2):")


def test_the_digest_is_a_list_even_of_one_and_names_how_many_more() -> None:
    one = nudge(DIGEST, Due(facts(1)))
    assert nudge_html(one, PKT, HOLDER).startswith("📋 <b>Waiting for your decision today</b> (1)")
    markup = nudge_markup(one, SECRET)
    assert markup is not None and markup.inline_keyboard[0][0].text == "🔁 PO-2026-0001"
    many = nudge(DIGEST, *(Due(facts(n)) for n in range(1, DIGEST_LIMIT + 4)))
    text = nudge_html(many, PKT, HOLDER)
    assert text.count("\n• ") == DIGEST_LIMIT and "…and 3 more." in text
    markup = nudge_markup(many, SECRET)
    assert markup is not None and len(markup.inline_keyboard) == DIGEST_LIMIT


def test_the_escalation_names_who_has_not_decided_and_who_cannot_be_reached() -> None:
    escalation = nudge(
        "escalate",
        Due(facts(1), "Ali (Telegram id 2001)"),
        Due(facts(2), "Sana <x> (Telegram id 2002)", unreachable=True),
    )
    lines = nudge_html(escalation, PKT, 9001).splitlines()
    assert lines[0] == "🚨 <b>Waiting too long</b>: these approvers have not decided (2):"
    assert lines[1].endswith(": Ali (Telegram id 2001) has not decided")
    assert lines[2].endswith(
        ": Sana &lt;x&gt; (Telegram id 2002) cannot be reached: they never started the bot, "
        "or blocked it"
    )
    assert nudge_markup(escalation, SECRET) is None


def test_a_lone_urdu_reminder_is_the_urdu_card_with_urdu_buttons() -> None:
    one = nudge("remind", Due(facts(1)))
    text = nudge_html(one, PKT, HOLDER, tr=UR)
    assert text.startswith(
        "⏰ <b>یاد دہانی</b>: یہ درخواست ابھی تک آپ کے فیصلے کی منتظر ہے۔\n\n"
        f"🧾 {isolated('<b>PO-2026-0001</b>')} — منظوری درکار"
    )
    markup = nudge_markup(one, SECRET, tr=UR)
    assert markup is not None
    assert [b.text for b in markup.inline_keyboard[0]] == [UR(APPROVE_TEXT), UR(REJECT_TEXT)]
    warned = nudge_html(nudge("expiring", Due(facts(1, lines=400))), PKT, HOLDER, tr=UR)
    assert warned.startswith(f"⌛ <b>میعاد {isolated('30 Nov 2026, 14:00 PKT')} پر ختم</b>")
    assert visible_length(warned) < MESSAGE_LIMIT


def _longest(n: int) -> Due:
    """A request as long as a list line gets: the longest supplier name (100 characters, each
    escaped, cut to 40), a chain's stage of a 64-character group (cut to 24), a deadline."""
    long = facts(n, stages=3)
    draft = replace(long.draft, supplier_name="&" * 100)
    return Due(
        replace(long, draft=draft, group="<" * 64, stage=1), "N&" * 32 + " (Telegram id 2001)"
    )


def test_the_longest_urdu_digest_fits_one_message_and_isolates_each_value() -> None:
    many = nudge(DIGEST, *(_longest(n) for n in range(1, DIGEST_LIMIT + 4)))
    text = nudge_html(many, PKT, HOLDER, tr=UR)
    lines = text.splitlines()
    assert (
        lines[0]
        == f"📋 <b>آج آپ کے فیصلے کی منتظر</b> ({isolated(str(DIGEST_LIMIT + 3))})، پرانی پہلے:"
    )
    assert lines[1].startswith(
        f"• {isolated('<b>PO-2026-0001</b>')} · {isolated('&amp;' * 39 + '…')} · "
        f"{isolated('Rs 900,000.00')} · {isolated('3')} میں سے مرحلہ {isolated('2')}"
    )
    assert f"میعاد {isolated('30 Nov 2026, 14:00 PKT')} تک" in lines[1]
    assert lines[-3:] == [
        f"…اور {isolated('3')} مزید۔",
        "",
        "کسی درخواست کا کارڈ دوبارہ دیکھنے کے لیے اسے دبائیں۔",
    ]
    assert visible_length(text) < MESSAGE_LIMIT
    reminders = nudge_html(replace(many, step="remind"), PKT, HOLDER, tr=UR)
    assert reminders.startswith(f"⏰ <b>ابھی تک آپ کے فیصلے کی منتظر</b> ({isolated('23')}):")


def test_the_longest_urdu_escalation_fits_one_message() -> None:
    items = [_longest(n) for n in range(1, DIGEST_LIMIT + 1)]
    items[1] = replace(items[1], unreachable=True)
    escalation = nudge("escalate", *items)
    text = nudge_html(escalation, PKT, 9001, tr=UR)
    lines = text.splitlines()
    assert lines[0] == (
        f"🚨 <b>بہت دیر سے منتظر</b>: ان منظوری دہندگان نے فیصلہ نہیں کیا ({isolated('20')}):"
    )
    person = isolated("N&amp;" * 32 + " (Telegram id 2001)")
    assert lines[1].startswith(f"• {FSI}{isolated('<b>PO-2026-0001</b>')} · ")
    assert lines[1].endswith(f"{PDI}: {person} نے فیصلہ نہیں کیا")
    assert lines[2].endswith(
        f": {person} تک پیغام نہیں پہنچ سکتا: "
        "انہوں نے بوٹ کبھی شروع نہیں کیا، یا اسے بلاک کر دیا ہے"
    )
    listed = sum(line.startswith("• ") for line in lines)  # the rest are counted, not lost
    assert 0 < listed < DIGEST_LIMIT
    assert lines[-1] == f"…اور {isolated(str(DIGEST_LIMIT - listed))} مزید۔"
    assert visible_length(text) < MESSAGE_LIMIT

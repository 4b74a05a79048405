"""Approval cards: what the approver sees, escaped, inside Telegram's limits."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from html.parser import HTMLParser
from zoneinfo import ZoneInfo

from bot.telegram.cards import (
    APPROVE_TEXT,
    DETAILS_TEXT,
    MESSAGE_LIMIT,
    REJECT_TEXT,
    REVIEW_TEXT,
    budget_line,
    card_html,
    card_markup,
    headline_html,
    outcome_html,
    visible_length,
)
from bot.words.i18n import Language, isolated, translator
from core.approval.budgets import CategoryMonth, month_of
from core.approval.policies import Decision, Role, Verdict
from core.approval.signing import ButtonAction, verify_button
from core.drafting.drafts import Draft, DraftLine, Flag
from core.drafting.flags import FlagCode
from core.jobs.jobs import WORKFLOW_VERSION, Job
from core.jobs.states import State
from core.messaging.cards import CardFacts, CardOutcome, DriftLine
from tests.helpers.factories import T0

PKT = ZoneInfo("Asia/Karachi")
SECRET = b"s" * 32
JOB_ID = "0b6f4c1e-9d1c-4a57-9a8e-2f1d3c4b5a69"


def draft(lines: int = 2, **changes) -> Draft:
    base = Draft(
        po_number="PO-2026-0042",
        supplier_id="SUP-LHR-07",
        supplier_name='Hall Road <Traders> & "Sons"',
        recipient_email="orders@hallroad.example",
        terms_version="20261129T161812Z-1a2b3c4d",
        lines=tuple(
            DraftLine(
                f"SKU-{n:03d}",
                f"Item <{n}> & co",
                n + 1,
                45_050,
                "for <b>Eid</b>" if n == 0 else "",
            )
            for n in range(lines)
        ),
    )
    return replace(base, **changes)


def job(d: Draft) -> Job:
    return Job(
        id=JOB_ID, po_number=d.po_number, state=State.AWAITING_APPROVAL, version=4,
        requester_id=7100001, input_ref="sheet:x", workflow_version=WORKFLOW_VERSION,
        source_versions={}, tool_results={}, draft_version=2, draft_hash="cc905f2486c4" + "0" * 52,
        supplier_id=d.supplier_id, total_paisa=d.total_paisa, retry_count=0,
        decision_deadline=T0 + timedelta(days=1), created_at=T0, updated_at=T0,
    )  # fmt: skip


def facts(d: Draft, approvals: int = 0, required: int = 1) -> CardFacts:
    return CardFacts(job(d), d, "Bilal <the buyer>", "restock <nov>.xlsx", T0, approvals, required)


class _Tags(HTMLParser):
    """Collects tags, so tests can check that only Telegram's tags appear, balanced."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.seen: set[str] = set()
        self.text = ""

    def handle_starttag(self, tag, attrs):
        self.stack.append(tag)
        self.seen.add(tag)

    def handle_endtag(self, tag):
        assert self.stack.pop() == tag

    def handle_data(self, data):
        self.text += data


def parsed(html_text: str) -> _Tags:
    tags = _Tags()
    tags.feed(html_text)
    tags.close()
    assert tags.stack == [] and tags.seen <= {"b", "i", "code"}
    return tags


def test_the_card_shows_what_an_approver_needs_all_escaped():
    text = card_html(facts(draft()), PKT)
    shown = parsed(text).text
    assert "PO-2026-0042" in shown
    assert 'Hall Road <Traders> & "Sons" (or***@hallroad.example)' in shown
    assert "SKU-000 Item <0> & co — 1 × Rs 450.50 = Rs 450.50" in shown
    assert "for <b>Eid</b>" in shown  # the note as typed, never markup
    assert "Total: Rs 1,351.50" in shown
    assert "Terms 20261129T161812Z-1a2b3c4d (imported 29 Nov 2026, 14:00 PKT)" in shown
    assert "sheet restock <nov>.xlsx" in shown and "Requested by Bilal <the buyer>" in shown
    assert "Draft v2 · cc905f2486c4 · expires 30 Nov 2026, 14:00 PKT" in shown
    assert "On approval: e-mails this PO to or***@hallroad.example" in shown
    assert "orders@hallroad.example" not in shown
    assert "approvals" not in shown  # one approval is enough: no counter


def test_dual_approval_shows_the_count_and_the_flag():
    d = draft(flags=(Flag(FlagCode.DUAL_APPROVAL, "", (60_000_000, 50_000_000)),))
    shown = parsed(card_html(facts(d, approvals=1, required=2), PKT)).text
    assert "👥 1 of 2 approvals" in shown
    assert "⚠️ Total Rs 600,000.00 is above Rs 500,000.00: two approvers needed" in shown


def test_a_drifted_line_shows_its_rise_and_the_last_po_sent_a_smaller_change_its_flag():
    up = Flag(FlagCode.PRICE_CHANGED, "SKU-000", (43_000, 45_050), "PO-2026-0031")  # +4.8%
    small = Flag(FlagCode.PRICE_CHANGED, "SKU-001", (44_500, 45_050), "PO-2026-0031")  # +1.2%
    d = draft(flags=(small, up))
    sent = datetime(2026, 9, 11, 20, 30, tzinfo=UTC)  # 12 Sep, 01:30 in Pakistan
    card = replace(facts(d), drifts=(DriftLine(up, sent),), stages=2, stage=0, group="Managers")
    shown = parsed(card_html(card, PKT)).text.splitlines()
    assert "▲ SKU-000: 4.8% vs last PO PO-2026-0031, 12 Sep (Rs 450.50, was Rs 430.00)" in shown
    assert not any("SKU-000: unit price" in line for line in shown)  # said once, by ▲
    assert "⚠️ SKU-001: unit price Rs 450.50, was Rs 445.00 on PO-2026-0031 (+1.2%)" in shown
    assert not any(line.startswith("▲") and "SKU-001" in line for line in shown)


def test_a_drift_without_its_sent_date_or_from_a_free_price_still_says_what_it_can():
    free = Flag(FlagCode.PRICE_CHANGED, "SKU-000", (0, 45_050), "PO-2026-0007")
    shown = parsed(card_html(replace(facts(draft(flags=(free,))), drifts=(
        DriftLine(free, None),)), PKT)).text  # fmt: skip
    assert "▲ SKU-000: was free vs last PO PO-2026-0007 (Rs 450.50, was Rs 0.00)" in shown
    assert DriftLine(free, None).percent is None
    # One decimal, rounded half up: 4.25% shows as 4.3%.
    assert DriftLine(Flag(FlagCode.PRICE_CHANGED, "S", (40_000, 41_700)), None).percent == (
        Decimal("4.3")
    )


def test_many_drifted_lines_are_cut_like_flags():
    ups = tuple(
        Flag(FlagCode.PRICE_CHANGED, f"SKU-{n:03d}", (40_000, 45_050), "PO-2026-0031")
        for n in range(20)
    )
    card = replace(facts(draft(lines=20, flags=ups)), drifts=tuple(DriftLine(f, T0) for f in ups))
    shown = parsed(card_html(card, PKT)).text
    assert shown.count("▲ ") == 12 and "… and 8 more lines above the drift tolerance" in shown
    assert "⚠️" not in shown  # every price change is a ▲ line


def test_long_pos_list_fifteen_lines_and_stay_inside_one_message():
    notes = "n" * 300
    d = draft(
        lines=400,
        flags=tuple(Flag(FlagCode.ZERO_PRICE, f"SKU-{n:03d}") for n in range(40)),
    )
    d = replace(
        d, lines=tuple(replace(line, description="d" * 200, note=notes) for line in d.lines)
    )
    text = card_html(facts(d, approvals=1, required=2), PKT)
    shown = parsed(text).text
    assert shown.count("• SKU-") == 15
    assert "… and 385 more lines (📄 Details has them all)" in shown
    assert "… and 28 more flags (see Details)" in shown
    assert len(shown) < MESSAGE_LIMIT and len(text) < MESSAGE_LIMIT


def test_buttons_carry_verifiable_data_for_this_job_and_version():
    rows = card_markup(SECRET, job(draft())).inline_keyboard
    assert [[button.text for button in row] for row in rows] == [
        [APPROVE_TEXT, REJECT_TEXT],
        [DETAILS_TEXT],
    ]
    actions = []
    for row in rows:
        for data in (button.callback_data for button in row):
            assert isinstance(data, str)
            assert len(data.encode()) <= 64
            button = verify_button(SECRET, data)
            assert (button.job_id, button.draft_version, button.hash_prefix) == (
                JOB_ID,
                2,
                "cc905f2486c4",
            )
            actions.append(button.action)
    assert actions == [ButtonAction.APPROVE, ButtonAction.REJECT, ButtonAction.DETAILS]


def test_an_outcome_keeps_the_summary_under_the_headline():
    approved = replace(job(draft()), state=State.APPROVED)
    ali = decision(1, Verdict.APPROVE)
    outcome = CardOutcome(approved, draft(), 2, (ali,), {1: "Ali"}, (), (1, 1))
    text = outcome_html(outcome, PKT)
    assert parsed(text).text.splitlines() == [
        "✅ Approved by Ali at 29 Nov 2026, 14:00 PKT",
        '🧾 PO-2026-0042 v2 · Hall Road <Traders> & "Sons" · Rs 1,351.50',
    ]


def decision(reviewer: int, verdict: Verdict, version: int = 2, minutes: int = 0) -> Decision:
    at = T0 + timedelta(minutes=minutes)
    return Decision(
        job_id=JOB_ID,
        reviewer_id=reviewer,
        reviewer_role=Role.APPROVER,
        verdict=verdict,
        draft_version=version,
        draft_hash="cc905f2486c4",
        at=at,
        expires_at=at + timedelta(days=1),
        policy_basis="single",
    )


NAMES = {1: "Ali <boss>", 2: "Sana & co"}


def headline(state: State, decisions=(), mine=(), version: int = 2, **changes) -> str:
    j = replace(job(draft()), state=state, **changes)
    outcome = CardOutcome(j, draft(), version, tuple(decisions), NAMES, tuple(mine), (1, 2))
    text = headline_html(outcome, PKT)
    assert parsed(text).stack == []  # balanced, and every name escaped
    return parsed(text).text


def test_headlines_say_what_happened_to_the_card():
    approve, reject = decision(1, Verdict.APPROVE), decision(2, Verdict.REJECT, minutes=5)
    assert headline(State.APPROVED, [approve]) == (
        "✅ Approved by Ali <boss> at 29 Nov 2026, 14:00 PKT"
    )
    both = [approve, decision(2, Verdict.APPROVE, minutes=3)]
    assert headline(State.SENT, both).startswith("✅ Approved by Ali <boss>, Sana & co at ")
    assert headline(State.REJECTED, [reject]) == (
        "❌ Rejected by Sana & co at 29 Nov 2026, 14:05 PKT"
    )
    assert headline(State.EXPIRED) == (
        "⌛ Expired at 30 Nov 2026, 14:00 PKT: no decision in time, nothing was sent"
    )
    assert headline(State.CANCELLED) == "🚫 Cancelled: nothing was sent"
    assert headline(State.AWAITING_APPROVAL, [approve], mine=[approve]) == (
        "🕓 You approved at 29 Nov 2026, 14:00 PKT: 👥 1 of 2 approvals, waiting for another "
        "approver"
    )


def test_a_card_of_an_older_version_is_superseded_whatever_was_decided_on_it():
    old_approval = decision(1, Verdict.APPROVE, version=1)
    assert headline(State.AWAITING_APPROVAL, [old_approval], [old_approval], version=1) == (
        "🔁 Superseded by v2: a new card follows"
    )
    assert headline(State.SENT, [old_approval], version=1) == "🔁 Superseded by v2"


def test_escaping_counts_once_against_the_limit_and_long_lines_make_fewer_lines_shown():
    d = draft(lines=40, flags=tuple(Flag(FlagCode.ZERO_PRICE, "&" * 40) for _ in range(12)))
    escapes = replace(d, lines=tuple(replace(line, description="&<>" * 20, note="<b>&</b>" * 10)
                                     for line in d.lines))  # fmt: skip
    text = card_html(facts(escapes, approvals=1, required=2), PKT)
    assert len(text) > MESSAGE_LIMIT  # the HTML is longer than Telegram's limit, the text not
    assert visible_length(text) == len(parsed(text).text) < MESSAGE_LIMIT
    assert parsed(text).text.count("• SKU-") == 15
    longer = replace(escapes, lines=tuple(replace(line, sku=f"{n:03d}-" + "S" * 60)
                                          for n, line in enumerate(escapes.lines)))  # fmt: skip
    shown = parsed(card_html(facts(longer, approvals=1, required=2), PKT)).text
    lines = shown.count("\n• ")
    assert len(shown) < MESSAGE_LIMIT and 0 < lines < 15
    assert f"… and {40 - lines} more lines (📄 Details has them all)" in shown
    assert shown.splitlines()[-1] == "On approval: e-mails this PO to or***@hallroad.example"


def test_each_budgeted_category_the_po_touches_has_its_line():
    december = month_of(T0 + timedelta(days=5), PKT)
    within = CategoryMonth("usb & power", december, 1_000_000_00, 680_000_00, 110_000_00)
    over = CategoryMonth("chargers", december, 600_000_00, 590_000_00, 20_000_00)
    shown = parsed(card_html(replace(facts(draft()), budgets=(over, within)), PKT)).text
    assert (
        "⚠️ Chargers: Rs 10,000.00 left of Rs 600,000.00 in December; this PO uses "
        "Rs 20,000.00, over by Rs 10,000.00\n"
        "💰 Usb & power: Rs 320,000.00 left of Rs 1,000,000.00 in December; this PO uses "
        "Rs 110,000.00\n"
    ) in shown
    already = CategoryMonth("chargers", december, 600_000_00, 650_000_00, 1_00)
    assert budget_line(already).startswith("⚠️ Chargers: Rs 0.00 left of Rs 600,000.00")
    assert "budget" not in card_html(facts(draft()), PKT).lower()  # no budgets, no lines


def test_a_public_url_adds_the_review_button_that_opens_the_mini_app():
    rows = card_markup(SECRET, job(draft()), public_url="https://po.example").inline_keyboard
    assert [[button.text for button in row] for row in rows] == [
        [APPROVE_TEXT, REJECT_TEXT],
        [DETAILS_TEXT, REVIEW_TEXT],
    ]
    review = rows[1][1]
    assert review.callback_data is None and review.web_app is not None
    assert review.web_app.url == f"https://po.example/app/po/{job(draft()).po_number}"
    no_url = card_markup(SECRET, job(draft())).inline_keyboard  # long polling, no public URL
    assert all(button.web_app is None for row in no_url for button in row)


UR = translator(Language.UR)


def test_buttons_keep_their_marks_and_data_in_urdu():
    english = card_markup(SECRET, job(draft())).inline_keyboard
    urdu = card_markup(SECRET, job(draft()), tr=UR).inline_keyboard
    assert [[b.text for b in row] for row in urdu] == [["✅ منظور", "❌ مسترد"], ["📄 تفصیل"]]
    assert [[b.callback_data for b in row] for row in urdu] == [
        [b.callback_data for b in row] for row in english
    ]


def test_an_urdu_card_isolates_skus_amounts_and_names_and_stays_valid_html():
    shown = parsed(card_html(facts(draft()), PKT, tr=UR)).text.splitlines()
    assert shown[0] == f"🧾 {isolated('PO-2026-0042')} — منظوری درکار"
    assert shown[1].startswith(isolated('Hall Road <Traders> & "Sons"'))  # outside text
    assert shown[3] == (
        f"• {isolated('SKU-000')} {isolated('Item <0> & co')} — "
        f"{isolated('1 × Rs 450.50 = Rs 450.50')}"
    )
    assert f"کل: {isolated('Rs 1,351.50')}" in shown
    assert f"درخواست گزار: {isolated('Bilal <the buyer>')}" in shown
    assert (
        shown[-1] == f"منظوری پر: یہ PO {isolated('or***@hallroad.example')} کو ای میل کیا جائے گا"
    )


def test_the_longest_urdu_card_stays_inside_one_message():
    """Everything a card can carry, each at its longest: 400 long lines with notes, 40 flags, 20
    drifted lines, two budgets over, a delegate's chain at its last stage."""
    ups = tuple(
        Flag(FlagCode.PRICE_CHANGED, f"SKU-{n:03d}-" + "S" * 50, (40_000, 45_050), "PO-2026-0031")
        for n in range(20)
    )
    flags = (*ups, *(Flag(FlagCode.ZERO_PRICE, f"SKU-{n:03d}") for n in range(40)))
    d = draft(lines=400, flags=flags)
    d = replace(d, supplier_name="S&" * 100, lines=tuple(
        replace(line, sku=line.sku + "-" + "K" * 50, description="&<>" * 60, note="<i>" * 80)
        for line in d.lines
    ))  # fmt: skip
    december = month_of(T0 + timedelta(days=5), PKT)
    over = tuple(
        CategoryMonth(f"category {n} " + "c" * 50, december, 10**12, 10**12, 10**11)
        for n in range(2)
    )
    card = replace(
        facts(d, approvals=2, required=3),
        drifts=tuple(DriftLine(flag, T0) for flag in ups),
        budgets=over,
        stages=3,
        stage=2,
        group="G" * 64,
        holding_for={9: "N&" * 32},
    )
    text = card_html(card, PKT, 9, tr=UR)
    shown = parsed(text).text
    assert visible_length(text) == len(shown) < MESSAGE_LIMIT
    assert "منظوری درکار" in shown.splitlines()[0] and "مرحلہ" in shown
    assert shown.count("\n• ") >= 2  # cut to what fits, never to nothing
    assert "لائنیں (📄 تفصیل میں سب موجود ہیں)" in shown


def test_an_urdu_outcome_names_who_decided():
    approved = replace(job(draft()), state=State.APPROVED)
    outcome = CardOutcome(approved, draft(), 2, (decision(1, Verdict.APPROVE),), NAMES, (), (1, 1))
    lines = parsed(outcome_html(outcome, PKT, tr=UR)).text.splitlines()
    assert lines[0] == (
        f"✅ منظور از {isolated('Ali <boss>')}، {isolated('29 Nov 2026, 14:00 PKT')}"
    )
    summary = 'PO-2026-0042 v2 · Hall Road <Traders> & "Sons" · Rs 1,351.50'
    assert lines[1] == f"🧾 {isolated(summary)}"

"""What free text refers to (core.messaging.pending.refers_to): a reply to a card refers to that
card's request, anything else to the oldest waiting; the comment it becomes; and how /pending and
the answer to free text say it (bot.telegram.pending)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from functools import partial
from zoneinfo import ZoneInfo

import pytest

from bot.telegram.pending import (
    ALL_LIMIT,
    MINE_LIMIT,
    Listed,
    age,
    all_text,
    fitted,
    mine_text,
    text_answer,
)
from bot.words.i18n import FSI, PDI, Language, isolated, translator
from core.approval.signing import Button, ButtonAction, sign_button, verify_button
from core.jobs.jobs import Job
from core.jobs.states import State
from core.messaging.pending import COMMENT_LIMIT, COMMENT_TEXT, Waiting, comment_text, refers_to
from core.records.retention import FREE_TEXT_KEYS

T0 = datetime(2026, 12, 1, 9, tzinfo=UTC)
PKT = ZoneInfo("Asia/Karachi")
UR = translator(Language.UR)


def job(po: str, minutes: int, state: State = State.AWAITING_APPROVAL) -> Job:
    at = T0 + timedelta(minutes=minutes)
    return Job(
        str(uuid.uuid4()), po, state, 3, 1001, "ref", "po-approval/1", {}, {}, 1, "ab" * 32,
        "SUP-1", 45_000_000, 0, at + timedelta(days=1), at, at,
    )  # fmt: skip


def waiting(j: Job, holders: dict[int, int | None] | None = None) -> Waiting:
    held = {2001: None} if holders is None else holders
    return Waiting(j, 0, 1, "approvers", 0, 1, frozenset(held), held)


OLD, MIDDLE, YOUNG = job("PO-2026-0001", 0), job("PO-2026-0002", 5), job("PO-2026-0003", 9)
# /pending's text for approver 2003, as pending_command binds it for fitted.
MINE = partial(mine_text, person=2003, now=T0, tz=PKT)


def test_plain_text_refers_to_the_oldest_waiting_whatever_the_order() -> None:
    found = refers_to([waiting(YOUNG), waiting(OLD), waiting(MIDDLE)], None)
    assert found is not None
    assert (found.job, found.decidable, found.replied) == (OLD, True, False)
    assert [w.job for w in found.others] == [YOUNG, MIDDLE]  # the rest, as given (oldest first)


def test_a_reply_refers_to_its_cards_request_open_or_not() -> None:
    found = refers_to([waiting(OLD), waiting(YOUNG)], YOUNG, replied_open=True)
    assert found is not None
    assert (found.job, found.decidable, found.replied) == (YOUNG, True, True)
    assert [w.job for w in found.others] == [OLD]
    decided = job("PO-2026-0009", 1, State.APPROVED)
    late = refers_to([waiting(OLD)], decided)
    assert late is not None and (late.job, late.decidable) == (decided, False)
    assert [w.job for w in late.others] == [OLD]


def test_nothing_waiting_and_no_card_refers_to_nothing() -> None:
    assert refers_to([], None) is None


@pytest.mark.parametrize(
    ("said", "kept"),
    [
        ("theek hai", "theek hai"),  # Roman Urdu, as it is
        ("ok\n\nbut\tcheck  it ", "ok but check it"),  # one line, one space
        ("approve\u202e kar do\u200b", "approve kar do"),  # no bidi override, no zero width
        ("\u200b\n ", ""),  # nothing visible: nothing to keep
        ("x" * 400, "x" * (COMMENT_LIMIT - 1) + "…"),  # cut, and says so
        ("y" * COMMENT_LIMIT, "y" * COMMENT_LIMIT),  # exactly the limit: whole
    ],
)
def test_a_comment_is_one_line_of_at_most_300_characters(said: str, kept: str) -> None:
    assert comment_text(said) == kept
    assert len(comment_text(said)) <= COMMENT_LIMIT


def test_the_purge_and_the_exports_treat_a_comment_as_free_text() -> None:
    assert COMMENT_TEXT in FREE_TEXT_KEYS


def test_the_resend_button_is_signed_like_the_others() -> None:
    button = Button(ButtonAction.RESEND, OLD.id, 1, "ab" * 6)
    data = sign_button(b"k" * 32, button)
    assert data.startswith("p.") and len(data.encode()) <= 64
    assert verify_button(b"k" * 32, data) == button


@pytest.mark.parametrize(
    ("waited", "said"),
    [
        (timedelta(seconds=59), "0 min"),
        (timedelta(minutes=45), "45 min"),
        (timedelta(hours=3, minutes=59), "3 h"),
        (timedelta(days=2, hours=4, minutes=1), "2 d 4 h"),
        (timedelta(seconds=-5), "0 min"),  # another process's clock a little ahead
    ],
)
def test_how_long_a_request_waited(waited: timedelta, said: str) -> None:
    assert age(waited) == said


def test_pending_names_the_one_away_and_cuts_what_does_not_fit() -> None:
    held = waiting(OLD, {2003: 2002})
    text = mine_text([Listed(held, "Hall Road", {1001: "Bilal", 2002: "Sana"})], 12, 2003, T0, PKT)
    lines = text.splitlines()
    assert lines[0].startswith("Waiting for your decision: 13 requests, oldest first.")
    assert lines[1] == "1. PO-2026-0001 · Rs 450,000.00 · Hall Road · from Bilal"
    assert lines[2] == "   waiting 0 min · expires 02 Dec 2026, 14:00 PKT"
    assert lines[3] == "   for Sana, who is away"
    assert lines[4] == "… and 12 more: decide these, then send /pending again."


def test_the_answer_to_free_text_names_the_others_and_how_many_more() -> None:
    others = [waiting(job(f"PO-2026-{n:04}", n)) for n in range(10, 18)]
    found = refers_to([waiting(OLD), *others], None)
    assert found is not None
    lines = text_answer(found).splitlines()
    assert lines[0] == (
        "A message never approves a purchase order. To decide PO-2026-0001 (Rs 450,000.00), "
        "the oldest waiting for you, tap a button:"
    )
    assert lines[2].startswith("Also waiting for you: PO-2026-0010 (Rs 450,000.00), ")
    assert lines[2].endswith(
        "PO-2026-0014 (Rs 450,000.00) and 3 more. /pending sends their cards again."
    )


def test_pending_shows_as_many_as_fit_one_message() -> None:
    long = "N" * 64  # Telegram's longest first name
    items = [
        Listed(waiting(job(f"PO-2026-{n:04}", n), {2003: 2002}), "S" * 60, {1001: long, 2002: long})
        for n in range(1, 21)
    ]
    assert len(mine_text(items[:10], 0, 2003, T0, PKT)) <= 4096  # MINE_LIMIT always fits
    text, shown = fitted(items, 0, MINE)
    assert len(text) <= 4096 and 0 < len(shown) < len(items)
    assert text.endswith(
        f"… and {len(items) - len(shown)} more: decide these, then send /pending again."
    )
    assert fitted(items[:2], 0, MINE) == (
        mine_text(items[:2], 0, 2003, T0, PKT),
        items[:2],
    )


def test_pending_all_says_whom_each_waits_for() -> None:
    committee = Waiting(
        OLD, 1, 2, "owners", 1, 2, frozenset({2001, 2002}), {2001: None, 2003: 2002}
    )
    nobody = Waiting(YOUNG, 0, 1, "buyers", 0, 1, frozenset(), {})
    names = {1001: "Bilal", 2001: "Ali", 2002: "Sana", 2003: "Chand"}
    text = all_text(
        [Listed(committee, "Hall Road", names), Listed(nobody, "Saddar", names)], 4, T0, PKT
    )
    lines = text.splitlines()
    assert lines[0] == "Waiting for a decision: 6 requests, oldest first."
    assert lines[1] == "PO-2026-0001 · Rs 450,000.00 · Hall Road · from Bilal (1001)"
    assert lines[2] == (
        "  waiting 0 min · expires 02 Dec 2026, 14:00 PKT · stage 2 of 2 (owners), 1 of 2 approvals"
    )
    assert lines[3] == "  waits for: Ali (2001); Sana (2002), away: Chand (2003) holds the card"
    assert lines[6] == "  waits for: nobody in group buyers can approve it: /group ID buyers"
    assert lines[7] == "… and 4 more, younger than these."


def test_the_answer_to_a_reply_on_a_card_that_no_longer_decides() -> None:
    counted = refers_to([], OLD, replied_open=False)  # Ali approved; it waits for the owners
    rejected = refers_to([], job("PO-2026-0009", 1, State.REJECTED))
    assert counted is not None and rejected is not None
    assert text_answer(counted).splitlines()[0] == (
        "A message never approves a purchase order. PO-2026-0001 (Rs 450,000.00) no longer "
        "waits for your decision."
    )
    assert (
        text_answer(rejected)
        .splitlines()[0]
        .endswith("no longer waits for your decision: it is rejected.")
    )


def test_pending_in_urdu_isolates_each_po_and_amount() -> None:
    held = waiting(OLD, {2003: 2002})
    listed = [Listed(held, "Hall Road", {1001: "Bilal", 2002: "Sana"})]
    lines = mine_text(listed, 12, 2003, T0 + timedelta(hours=3), PKT, tr=UR).splitlines()
    assert lines[0] == (
        f"آپ کے فیصلے کی منتظر: {isolated('13')} درخواستیں، پرانی پہلے۔ 🔁 کارڈ دوبارہ بھیجتا ہے۔"
    )
    assert lines[1] == (
        f"1. {isolated('PO-2026-0001')} · {isolated('Rs 450,000.00')} · {isolated('Hall Road')}"
        f" · {isolated('Bilal')} کی جانب سے"
    )
    assert lines[2] == (
        f"   {isolated(isolated('3') + ' گھنٹے')} سے منتظر · "
        f"میعاد {isolated('02 Dec 2026, 14:00 PKT')} تک"
    )
    assert lines[3] == f"   {isolated('Sana')} کی جگہ، جو غیر حاضر ہیں"
    assert lines[4] == (
        f"… اور {isolated('12')} مزید: ان کا فیصلہ کریں، پھر دوبارہ /pending بھیجیں۔"
    )
    assert age(timedelta(days=2, hours=4), tr=UR) == f"{isolated('2')} دن {isolated('4')} گھنٹے"


def _longest(count: int) -> list[Listed]:
    """Requests at their longest: a 60-character supplier (as listed), Telegram's longest first
    names, a delegate's card, a committee at a chain's second stage."""
    long, held = "N" * 64, {2001: None, 2003: 2002}
    names = {1001: long, 2001: long, 2002: long, 2003: long}
    return [
        Listed(
            Waiting(job(f"PO-2026-{n:04}", n), 1, 2, "G" * 64, 1, 3, frozenset({2001, 2002}), held),
            "S" * 60,
            names,
        )
        for n in range(1, count + 1)
    ]


def test_the_longest_urdu_pending_lists_fit_telegrams_messages() -> None:
    items = _longest(MINE_LIMIT + 10)
    text, shown = fitted(items, 0, partial(MINE, tr=UR))
    assert len(text) <= 4096 and 0 < len(shown) < len(items)
    assert text.endswith(
        f"… اور {isolated(str(len(items) - len(shown)))} مزید: ان کا فیصلہ کریں، پھر دوبارہ "
        "/pending بھیجیں۔"
    )
    assert "مرحلہ" in text and "منظوریاں" in text
    everyone = all_text(_longest(ALL_LIMIT), 5, T0, PKT, tr=UR)  # replied in pieces (chunks)
    assert everyone.splitlines()[0] == f"فیصلے کی منتظر: {isolated('35')} درخواستیں، پرانی پہلے۔"
    holds = f"، غیر حاضر: کارڈ {isolated('N' * 64 + ' (2003)')} کے پاس ہے"
    assert everyone.count(holds) == ALL_LIMIT
    for line in everyone.splitlines():
        assert line.count(FSI) == line.count(PDI)  # no isolate left open on its line


def test_the_answer_to_free_text_in_urdu() -> None:
    others = [waiting(job(f"PO-2026-{n:04}", n)) for n in range(10, 18)]
    found = refers_to([waiting(OLD), *others], None)
    rejected = refers_to([], job("PO-2026-0009", 1, State.REJECTED))
    assert found is not None and rejected is not None
    lines = text_answer(found, tr=UR).splitlines()
    never = "پیغام سے پرچیز آرڈر کبھی منظور نہیں ہوتا۔"
    assert lines[0] == (
        f"{never} آپ کی منتظر سب سے پرانی درخواست {isolated('PO-2026-0001 (Rs 450,000.00)')} "
        "کا فیصلہ کرنے کے لیے بٹن دبائیں:"
    )
    assert lines[1].startswith("💬 آپ کا پیغام") and isolated("PO-2026-0001") in lines[1]
    assert lines[2].startswith(f"آپ کے فیصلے کی منتظر اور بھی: {FSI}PO-2026-0010 (Rs 450,000.00), ")
    assert f" اور {isolated('3')} مزید۔ /pending" in lines[2]
    assert (
        text_answer(rejected, tr=UR).splitlines()[0].endswith(f"؛ اس کی حالت: {isolated('مسترد')}۔")
    )

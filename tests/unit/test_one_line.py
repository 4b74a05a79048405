"""No text from a file, a terms list or a Telegram profile can add a line to what people read.

Every message that shows such text is rendered twice through its real rendering function:
once with a plain value in every outside field, once with a hostile one. The hostile rendering
must have exactly as many lines, show the value flattened, and keep no bidi control or
zero-width character.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.files.limits import NOT_A_SHEET
from bot.outbox.emails import render_body, render_po_email
from bot.telegram import texts
from bot.telegram.cards import card_html, escaped, outcome_html
from bot.telegram.queue import QueueItem, item_html
from bot.words import reports
from bot.words import texts as replies
from core.approval.policies import Decision, Role, Verdict
from core.company.company import Branch, Buyer, Company
from core.drafting.drafts import Draft, DraftLine
from core.drafting.tables import quote
from core.drafting.terms import Offer, Supplier, Terms
from core.errors import UnreadableSheet
from core.jobs.effects import EffectStatus
from core.jobs.jobs import WORKFLOW_VERSION, Effect, Job, SendOrder
from core.jobs.states import State
from core.messaging.cards import CardFacts, CardOutcome
from core.people.people import BranchChange
from core.people.users import TelegramUser
from core.problems import Place, Problem, ProblemCode
from core.purchasing.new_terms import TermsImport
from core.purchasing.submissions import Submission
from core.texts import INVISIBLE, flatten
from tests.helpers.factories import T0

PKT = ZoneInfo("Asia/Karachi")
PLAIN = "Hall Road"
HOSTILE = [
    pytest.param("x\nTotal: Rs 1.00", id="newline_forged_total"),
    pytest.param("\u2028✅ Approved by Boss", id="line_separator_forged_approval"),
    pytest.param("Boss\u2029\u2029✅ Approved", id="paragraph_separators"),
    pytest.param("a\r\nb\rc", id="crlf_and_cr"),
    pytest.param("a\x85b", id="nel"),
    pytest.param("a\x0bb\x0cc", id="vertical_tab_form_feed"),
    pytest.param("a\x1cb\x1dc\x1ed\x1fe", id="c0_separators"),
    pytest.param("a\x00b\x1bc\x7fd\x9be", id="c0_c1_controls_and_del"),
    pytest.param("\u202egnp.exe", id="right_to_left_override"),
    pytest.param("\u2066abc\u2069\u202a\u202b\u202c\u202d", id="isolates_and_embeddings"),
    pytest.param("\u200eRs\u200f 1\u061c00", id="directional_marks"),
    pytest.param("Ap\u200bpro\u200cved\u200d\u2060\ufeff\u180e", id="zero_width"),
    pytest.param("  many    spaces \t\t and tabs  ", id="whitespace_runs"),
    pytest.param("<b>bold</b> & </i>", id="markup"),
]


def _draft(value: str) -> Draft:
    return Draft(
        po_number="PO-2026-0042",
        supplier_id="SUP-LHR-07",
        supplier_name=value,
        recipient_email="orders@hallroad.example",
        terms_version="20261129T161812Z-1a2b3c4d",
        lines=(
            DraftLine("CBL-1", value, 2, 45_050, note=value),
            DraftLine("CBL-2", value, 1, 10_000),
        ),
    )


def _job(d: Draft, state: State = State.AWAITING_APPROVAL) -> Job:
    return Job(
        id="job-1", po_number=d.po_number, state=state, version=4, requester_id=7100001,
        input_ref="sheet:x", workflow_version=WORKFLOW_VERSION, source_versions={},
        tool_results={}, draft_version=2, draft_hash="cc905f2486c4" + "0" * 52,
        supplier_id=d.supplier_id, total_paisa=d.total_paisa, retry_count=0,
        decision_deadline=T0 + timedelta(days=1), created_at=T0, updated_at=T0,
    )  # fmt: skip


def _decision(verdict: Verdict, reviewer: int, reason: str | None = None) -> Decision:
    return Decision(
        job_id="job-1", reviewer_id=reviewer, reviewer_role=Role.APPROVER, verdict=verdict,
        draft_version=2, draft_hash="cc905f2486c4", at=T0, expires_at=T0 + timedelta(days=1),
        policy_basis="single", reason=reason,
    )  # fmt: skip


def _order(d: Draft) -> SendOrder:
    job = _job(d, State.SENDING)
    effect = Effect(
        key="send-po:PO-2026-0042:v2:cc905f2486c4", job_id=job.id, kind="send-po",
        draft_version=2, draft_hash="cc905f2486c4", status=EffectStatus.STARTED, version=1,
        attempts=1, next_attempt_at=None, first_attempt_at=T0, lease_owner="test",
        lease_until=T0, started_at=T0, result=None, last_error=None, created_at=T0,
        updated_at=T0,
    )  # fmt: skip
    return SendOrder(effect, job, d)


def _card(v: str) -> str:
    facts = CardFacts(_job(_draft(v)), _draft(v), v, v, T0, 1, 2)
    return card_html(facts, PKT)


def _outcome(v: str, state: State, verdict: Verdict) -> str:
    d = _draft(v)
    decisions = (_decision(verdict, 1), _decision(verdict, 2))
    outcome = CardOutcome(_job(d, state), d, 2, decisions, {1: v, 2: v}, (), (0, 1))
    return outcome_html(outcome, PKT)


def _detail(v: str) -> dict[str, object]:
    """A job as reports.job_detail gives it, with outside text in every free-text field."""
    return {
        "po_number": "PO-2026-0042", "state": "REJECTED", "draft_version": 2,
        "draft_hash": "cc90", "supplier_id": "SUP-LHR-07", "total_paisa": 100,
        "purged_at": None, "purged": {},
        "approvals": [{
            "at": T0.isoformat(), "reviewer_id": 1, "reviewer": v, "for_id": 2, "for": v,
            "decision": "reject", "draft_version": 2, "stage": 1, "expires_at": T0.isoformat(),
            "reason": v,
        }],
        "effects": [{
            "idempotency_key": "k", "status": "failed", "attempts": 1, "message_id": "<m@x>",
            "last_error": v,
        }],
        "audit": [{
            "at": T0.isoformat(), "actor": v, "action": "reject", "from_state": None,
            "to_state": "REJECTED",
        }],
    }  # fmt: skip


def _terms(v: str) -> Terms:
    supplier = Supplier("SUP-LHR-07", v, "orders@hallroad.example")
    offer = Offer("SUP-LHR-07", "CBL-1", v, 45_050)
    return Terms({"SUP-LHR-07": supplier}, (offer,), version="T1")


def _queue_item(v: str) -> str:
    item = QueueItem(_job(_draft(v), State.UNKNOWN_OUTCOME), v, v, None, v)
    return item_html(item, PKT, "manzoori.example")


def _email(v: str) -> str:
    # The buyer, its address and the delivery branch come from a company file: outside text too.
    company = Company(Buyer(v, v), (Branch("liberty", v, v),), "liberty", "C1")
    draft = replace(_draft(v), branch_id="liberty", payment_terms=v)
    order = replace(_order(draft), company=company)
    message = render_po_email(order, mail_from="orders@manzoori.example", now=T0)
    return f"Subject: {message['Subject']}\n{render_body(order)}"


def _submission(v: str, *, repeated: bool = False, preview: bool = False) -> str:
    d = _draft(v)
    result = Submission(orders=((_job(d), d),), repeated=repeated)
    return replies.submission(result, v, preview=preview)


# Every message that shows outside text, by what it is; each takes the value for every field.
RENDERINGS: dict[str, Callable[[str], str]] = {
    "card": _card,
    "card rejected by a named approver": lambda v: _outcome(v, State.REJECTED, Verdict.REJECT),
    "card approved by named approvers": lambda v: _outcome(v, State.APPROVED, Verdict.APPROVE),
    "queue message": _queue_item,
    "submission accepted": _submission,
    "submission preview": lambda v: _submission(v, preview=True),
    "submission repeated": lambda v: _submission(v, repeated=True),
    "submission refused, cells echoed": lambda v: replies.submission(
        Submission(
            problems=(
                Problem(2, "sku", ProblemCode.UNKNOWN_SKU, {"value": quote(v)}),
                Problem(3, v, ProblemCode.NOT_WHOLE, {"value": v}),  # unquoted: flattened
            )
        ),
        v,
    ),
    "sheet refused, file unreadable": lambda v: replies.refusal(
        replies.Refusing.SHEET, v, UnreadableSheet(NOT_A_SHEET)
    ),
    "terms import refused": lambda v: replies.terms_import(
        TermsImport(
            problems=(Problem(2, "sku", ProblemCode.NOT_A_CODE, {"value": v}, Place.LINE),)
        ),
        v,
    ),
    "terms import done": lambda v: replies.terms_import(TermsImport(version="T1", created=True), v),
    "terms listing": lambda v: replies.terms_listing(_terms(v), T0, v, PKT),
    "stranger greeting": lambda v: texts.stranger(v, 42),
    "greeting": lambda v: texts.greeting(v, frozenset({Role.APPROVER})),
    "promoted": texts.promoted,
    "promotion reply": lambda v: texts.promotion(42, v, promoted=True),
    "people": lambda v: texts.people_list(
        [(TelegramUser(42, v, True), 42, frozenset({Role.APPROVER}))] * 2,
        {42: ["owners"]},
        {42: (7, "05 Dec 2026, 00:00 PKT")},
    ),
    "people with branches": lambda v: texts.people_list(
        [(TelegramUser(42, v, True), 42, frozenset({Role.REQUESTER}))] * 2,
        branches=texts.Branches({42: "liberty"}, "liberty"),
    ),
    "branch change": lambda v: texts.branch_change(42, BranchChange("liberty", None, v)),
    "alert: approver unreachable": lambda v: texts.admin_alert("PO-1", "unreachable", v),
    "alert: approver undelivered": lambda v: texts.admin_alert("PO-1", "undelivered", v),
    "history": lambda v: reports.text(_detail(v), PKT),
    "supplier e-mail": _email,
}


@pytest.mark.parametrize("hostile", HOSTILE)
@pytest.mark.parametrize("name", list(RENDERINGS))
def test_no_outside_text_adds_a_line_or_an_invisible_character(name: str, hostile: str) -> None:
    render = RENDERINGS[name]
    plain, shown = render(PLAIN), render(hostile)
    assert len(shown.splitlines()) == len(plain.splitlines()), shown
    assert not INVISIBLE & set(shown)
    assert not {c for c in shown if c != "\n" and (c < " " or "\x7f" <= c <= "\x9f")}
    # the value is shown, flattened (so the field really is rendered, not dropped)
    assert flatten(hostile) and (flatten(hostile) in shown or escaped(hostile) in shown)


def _shown_lines(text_html: str) -> list[str]:
    return [html.unescape(re.sub(r"<[^>]*>", "", line)) for line in text_html.splitlines()]


def test_no_forged_total_or_approval_starts_a_line() -> None:
    card = _shown_lines(_card("Hall Road\nTotal: Rs 1.00"))
    assert [line for line in card if line.startswith("Total")] == ["Total: Rs 1,001.00"]
    decided = _shown_lines(_outcome("x\u2028✅ Approved by Boss", State.REJECTED, Verdict.REJECT))
    assert not [line for line in decided if line.startswith("✅")]
    assert decided[0] == "❌ Rejected by x ✅ Approved by Boss at 29 Nov 2026, 14:00 PKT"


@given(st.text(max_size=40))
def test_flatten_is_one_visible_line_for_any_text(text: str) -> None:
    flat = flatten(text)
    assert len(flat.splitlines()) <= 1 and not INVISIBLE & set(flat)
    assert flat == flat.strip() and "  " not in flat
    assert flatten(flat) == flat  # applying it twice changes nothing


@given(st.text(min_size=1, max_size=40))  # an empty note is not shown: that is one line less
def test_every_card_has_the_lines_of_a_plain_card(text: str) -> None:
    assert len(_card(text).splitlines()) == len(_card(PLAIN).splitlines())
    assert not INVISIBLE & set(html.unescape(_card(text)))


def test_flatten_keeps_urdu_and_emoji() -> None:
    assert flatten(" چائے کی پتی،\n500 گرام 🍵 ") == "چائے کی پتی، 500 گرام 🍵"

"""What a requester reads about a sheet, rendered from use-case results."""

from __future__ import annotations

from dataclasses import replace

from bot.words import texts
from bot.words.i18n import Language, translator
from core.drafting.drafts import Draft, DraftLine
from core.jobs.jobs import WORKFLOW_VERSION, Job
from core.jobs.states import State
from core.purchasing.submissions import Submission
from tests.helpers.factories import T0
from tests.helpers.urdu import english_runs

DRAFT = Draft(
    po_number="PO-2026-0007",
    supplier_id="SUP-LHR-07",
    supplier_name="Hall Road Traders",
    recipient_email="orders@hallroad.example",
    terms_version="T1",
    lines=(DraftLine("CBL-1", "Cable", 10, 45_000),),
)


def job(state: State) -> Job:
    return Job(
        id="j1", po_number="PO-2026-0007", state=state, version=3, requester_id=1,
        input_ref="sheet:x", workflow_version=WORKFLOW_VERSION, source_versions={},
        tool_results={}, draft_version=1, draft_hash="a" * 64, supplier_id="SUP-LHR-07",
        total_paisa=450_000, retry_count=0, decision_deadline=None, created_at=T0, updated_at=T0,
    )  # fmt: skip


def test_a_repeat_names_each_po_with_its_state():
    text = texts.submission(Submission(orders=((job(State.SENT), DRAFT),), repeated=True), "s.csv")
    assert text.splitlines() == [
        "s.csv was already submitted; it made 1 purchase order:",
        "PO-2026-0007  Hall Road Traders  Rs 4,500.00  SENT",
    ]


def test_a_repeat_of_a_sheet_whose_pos_all_ended_unsent_says_how_to_order_again():
    orders = (
        (job(State.REJECTED), DRAFT),
        (replace(job(State.EXPIRED), po_number="PO-2026-0008"), DRAFT),
    )
    text = texts.submission(Submission(orders=orders, repeated=True), "s.csv")
    assert text.splitlines()[-1] == (
        "None of them was sent. To order the same again, change the file "
        "(for example, add a note) and send it again."
    )


def test_a_new_submission_lists_pos_with_masked_recipient_and_flags():
    text = texts.submission(Submission(orders=((job(State.AWAITING_APPROVAL), DRAFT),)), "s.csv")
    assert text.splitlines() == [
        "s.csv accepted; 1 purchase order drafted and sent for approval:",
        "PO-2026-0007  Hall Road Traders (or***@hallroad.example)  1 line  Rs 4,500.00",
    ]
    assert "orders@" not in text


def test_the_evidence_names_where_the_lines_came_from() -> None:
    def shown(name: str) -> str:
        return f"<{name}>"

    assert texts.evidence_source("t1", None, "restock.csv", shown) == (
        "📎 Terms t1; sheet <restock.csv>"
    )
    assert texts.evidence_source("t1", "1 Dec", "typed request", shown) == (
        "📎 Terms t1 (imported 1 Dec); typed in a message"
    )
    assert texts.evidence_source("t1", None, "catalogue request", shown) == (
        "📎 Terms t1; picked in the catalogue"
    )
    urdu = translator(Language.UR)
    line = texts.evidence_source("t1", None, "catalogue request", shown, tr=urdu)
    assert english_runs(line) == [] and "t1" in line

"""The audit export's rows (core.records.audit): fixed columns from each kind of event, the send's
result in a few words, nothing personal in the detail, and CSV no spreadsheet runs."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from core.drafting.tables import FORMULA_START
from core.errors import BadPeriod
from core.jobs.jobs import AuditEvent
from core.jobs.states import State
from core.records.audit import (
    COLUMNS,
    FIRST_DAY,
    ExportFormat,
    Logged,
    Period,
    Writer,
    export_row,
    parse_day,
    render,
)

AT = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)
HASH = "ab" * 32
PO = "PO-2026-0001"
KEY = f"send-po:{PO}:v2:abababab"


def event(action: str, detail: dict[str, object], states=(None, None), actor="runner:r1"):
    return AuditEvent("job-1", AT, actor, action, states[0], states[1], detail)


def test_a_delegates_approval_names_whom_it_was_for_and_its_stage_and_policy():
    approval = event(
        "approve",
        {
            "job_version": 6,
            "verdict": "approve",
            "draft_version": 2,
            "draft_hash": HASH,
            "basis": "policy 3, rule big, stage 2 of 2: 1 of owners",
            "policy_version": "3",
            "rule": "big",
            "stage": 2,
            "for": 2001,
        },
        (State.AWAITING_APPROVAL, State.APPROVED),
        actor="user:2005",
    )
    row = export_row(Logged(approval, PO)).plain()
    assert row == {
        "at": "2026-12-01T09:30:00+00:00",
        "po_number": PO,
        "event": "approve",
        "from_state": "AWAITING_APPROVAL",
        "to_state": "APPROVED",
        "actor": "user:2005",
        "for": 2001,
        "stage": 2,
        "policy_version": "3",
        "rule": "big",
        "draft_version": 2,
        "draft_hash": HASH,
        "verdict": "approve",
        "result": None,
        "detail": {"basis": "policy 3, rule big, stage 2 of 2: 1 of owners", "job_version": 6},
    }
    assert list(row) == list(COLUMNS)


def test_an_approval_in_person_leaves_the_for_column_blank():
    row = export_row(Logged(event("approve", {"verdict": "approve", "stage": 1}), PO))
    assert row.on_behalf_of is None and row.cells()[COLUMNS.index("for")] == ""


SENDING, RETRYABLE = State.SENDING, State.FAILED_RETRYABLE


@pytest.mark.parametrize(
    ("action", "detail", "states", "result"),
    [
        # the attempt marker, with its number
        ("start_send", {"key": KEY, "attempt": 2}, (RETRYABLE, SENDING), "attempt 2"),
        # the receipt came back
        ("mark_sent", {"key": KEY}, (SENDING, State.SENT), "sent"),
        # nothing delivered: the retry policy's verdict and when
        (
            "fail_retryable",
            {"key": KEY, "error": "421 busy", "class": "transient", "decision": "retry 2 of 5",
             "retry_at": "2026-12-01T09:31:00+00:00"},
            (SENDING, RETRYABLE),
            "failed (transient): retry 2 of 5, next try at 2026-12-01T09:31:00+00:00",
        ),
        # a runner lost mid-attempt, the provider dedupes: sent again, no verdict
        ("fail_retryable", {"key": KEY, "reason": "runner lost"}, (SENDING, RETRYABLE),
         "failed, to be retried"),
        # the provider refused for good
        (
            "fail_final",
            {"key": KEY, "error": "550 no such user", "class": "permanent",
             "decision": "permanent error"},
            (SENDING, State.FAILED_FINAL),
            "failed (permanent): permanent error, given up",
        ),
        # maybe delivered
        ("mark_unknown", {"key": KEY, "class": "ambiguous", "error": "timeout"},
         (SENDING, State.UNKNOWN_OUTCOME), "outcome unknown (ambiguous): to be reconciled"),
        # the runner died mid-attempt
        ("mark_unknown", {"key": KEY, "reason": "runner lost during the attempt"},
         (SENDING, State.UNKNOWN_OUTCOME), "outcome unknown (runner lost): to be reconciled"),
        # a person's findings on an unknown outcome
        ("reconcile_sent", {"note": "supplier has it"}, (State.UNKNOWN_OUTCOME, State.SENT),
         "sent (reconciled)"),
        ("reconcile_not_sent", {"note": "never came"}, (State.UNKNOWN_OUTCOME, State.APPROVED),
         "not sent (reconciled): to be sent again"),
        ("reconcile_failed", {"note": "gave up"}, (State.UNKNOWN_OUTCOME, State.FAILED_FINAL),
         "failed (reconciled)"),
        # a failure before approval is the intake's, not a send's
        ("fail_final", {"note": "no terms"}, (State.RECEIVED, State.FAILED_FINAL), None),
        # not about a send at all
        ("approve", {"verdict": "approve"}, (State.AWAITING_APPROVAL, State.APPROVED), None),
        ("grant_role", {"user_id": 5, "role": "admin"}, (None, None), None),
    ],
)  # fmt: skip
def test_the_result_column_says_what_became_of_the_send(action, detail, states, result):
    row = export_row(Logged(event(action, detail, states), PO, 2, HASH))
    assert row.result == result
    if action in ("start_send", "mark_sent"):  # the draft came through the outbox row
        assert (row.draft_version, row.draft_hash) == (2, HASH)


def test_the_detail_keeps_ids_and_drops_free_text_and_file_names():
    detail = {
        "key": KEY,
        "error": "550 priya@hall-road.example: no such user",
        "note": "called Priya on 0300-1234567",
        "reason": "too dear",
        "decision": "permanent error",
        "class": "permanent",
        "sheet_name": "Bilal's restock.xlsx",
        "sheet_sha256": "cd" * 32,
        "purged": ["note"],
    }
    row = export_row(Logged(event("fail_final", detail, (SENDING, State.FAILED_FINAL)), PO))
    assert row.detail == {"key": KEY, "purged": ["note"], "sheet_sha256": "cd" * 32}
    text = render([row], ExportFormat.CSV) + render([row], ExportFormat.JSON)
    for personal in ("priya", "Priya", "0300", "too dear", "Bilal"):
        assert personal not in text


def test_an_event_about_people_has_no_po_and_its_detail_as_compact_json():
    row = export_row(Logged(event("grant_role", {"user_id": 5, "role": "admin"}, actor="cli:x")))
    cells = dict(zip(COLUMNS, row.cells(), strict=True))
    assert cells["po_number"] == "" and cells["stage"] == "" and cells["draft_version"] == ""
    assert cells["detail"] == '{"role":"admin","user_id":5}'


# Values an actor, a rule or a policy version could carry into a cell, each trying to run.
HOSTILE = ['=HYPERLINK("http://x")', "+1", "-1", "@SUM(A1)", "\t=1", "ok;=1", "a\n=1"]


@pytest.mark.parametrize("value", HOSTILE)
def test_no_csv_cell_starts_a_formula_in_any_locale(value):
    logged = Logged(
        event("approve", {"rule": value, "policy_version": value, "basis": value}, actor=value),
        PO,
    )
    text = render([export_row(logged)], ExportFormat.CSV)
    for delimiter in (",", ";", "\t"):
        for fields in csv.reader(io.StringIO(text), delimiter=delimiter):
            for field in fields:
                assert not field.lstrip().startswith(FORMULA_START), (delimiter, field)
    [header, row] = list(csv.reader(io.StringIO(text)))
    assert header == list(COLUMNS) and len(row) == len(COLUMNS)
    assert row[COLUMNS.index("rule")].lstrip("'").replace(";'", ";") == " ".join(value.split())


def test_the_csv_is_rfc_4180_and_the_json_an_array_written_a_row_at_a_time():
    rows = [
        export_row(Logged(event("mark_sent", {"key": KEY}, (SENDING, State.SENT)), PO, 2, HASH)),
        export_row(Logged(event("grant_role", {"user_id": 5, "role": 'admin, "chief"'}))),
    ]
    text = render(rows, ExportFormat.CSV)
    assert text.startswith('"at","po_number","event",') and text.count("\r\n") == 3
    parsed = list(csv.DictReader(io.StringIO(text, newline="")))
    assert parsed[0]["result"] == "sent" and parsed[0]["draft_hash"] == HASH
    assert json.loads(parsed[1]["detail"]) == {"role": 'admin, "chief"', "user_id": 5}
    assert json.loads(render(rows, ExportFormat.JSON)) == [row.plain() for row in rows]
    assert json.loads(render([], ExportFormat.JSON)) == []
    assert render([], ExportFormat.CSV) == ",".join(f'"{c}"' for c in COLUMNS) + "\r\n"
    writer = Writer(ExportFormat.JSON)
    pieces = [writer.head(), *(writer.line(row) for row in rows), writer.tail()]
    assert json.loads("".join(pieces)) == json.loads(render(rows, ExportFormat.JSON))


KARACHI = ZoneInfo("Asia/Karachi")
TODAY = date(2026, 12, 31)  # in Karachi, when the export is asked for
COVERED = "an export covers the days from 2000-01-01 to 2027-01-01 (tomorrow)"


def test_a_period_is_whole_pakistan_days_to_the_end_of_the_last():
    period = Period.of_days(date(2026, 12, 1), date(2026, 12, 31), KARACHI, today=TODAY)
    assert period.start == datetime(2026, 11, 30, 19, 0, tzinfo=UTC)
    assert period.end == datetime(2026, 12, 31, 19, 0, tzinfo=UTC)
    one = Period.of_days(date(2026, 12, 1), date(2026, 12, 1), KARACHI, today=TODAY)
    assert one.end - one.start == timedelta(days=1)


def test_a_period_that_ends_before_it_starts_is_refused():
    with pytest.raises(BadPeriod, match=r"ends \(2026-11-30\) before it starts \(2026-12-01\)"):
        Period.of_days(date(2026, 12, 1), date(2026, 11, 30), KARACHI, today=TODAY)


@pytest.mark.parametrize(
    ("first", "last", "refusal"),
    [
        # The crash: the day after 9999-12-31, and midnight of 0001-01-01 in UTC,
        # are outside the calendar; refused before either is computed.
        (date.min, date.max, "the period starts on 0001-01-01"),
        (date(2026, 12, 1), date.max, "the period ends on 9999-12-31"),
        (date(1999, 12, 31), date(2026, 12, 1), "the period starts on 1999-12-31"),
        (date(2026, 12, 1), date(2027, 1, 2), "the period ends on 2027-01-02"),  # after tomorrow
        (date(2027, 1, 2), date(2027, 1, 3), "the period starts on 2027-01-02"),
    ],
)
def test_days_outside_what_an_export_covers_are_refused_with_the_range(first, last, refusal):
    with pytest.raises(BadPeriod) as refused:
        Period.of_days(first, last, KARACHI, today=TODAY)
    assert str(refused.value) == f"{refusal}: {COVERED}"


def test_the_first_and_last_days_an_export_covers_make_a_period():
    period = Period.of_days(date(2000, 1, 1), date(2027, 1, 1), KARACHI, today=TODAY)
    assert period.start == datetime(1999, 12, 31, 19, 0, tzinfo=UTC)
    assert period.end == datetime(2027, 1, 1, 19, 0, tzinfo=UTC)


# Days as an admin types them: anything, and text shaped like a day.
TYPED_DAY = st.one_of(
    st.text(),
    st.from_regex(r"\s*[0-9۰-۹]{1,5}-[0-9]{1,2}-[0-9]{1,2}\s*", fullmatch=True),
    st.dates().map(date.isoformat),
)


@settings(max_examples=400, deadline=None)
@given(TYPED_DAY, TYPED_DAY, st.dates(min_value=date(2026, 1, 1), max_value=date(2100, 1, 1)))
@example("0001-01-01", "9999-12-31", TODAY)  # the crash
def test_any_from_and_to_give_a_period_or_a_refusal_that_says_why(first, last, today):
    try:
        period = Period.of_days(parse_day(first), parse_day(last), KARACHI, today=today)
    except BadPeriod as refused:
        assert str(refused)
        return
    assert FIRST_DAY <= parse_day(first) <= parse_day(last) <= today + timedelta(days=1)
    assert period.start < period.end


@pytest.mark.parametrize(
    "text",
    [
        "2026-13-01",  # no 13th month
        "2026-02-30",  # no such day
        "01-12-2026",  # day first
        "20261201",  # ISO's basic form: accepted by fromisoformat, not by us
        "2026-12-1",  # one-digit day
        "yesterday",
        "",
    ],
)
def test_a_day_must_be_written_yyyy_mm_dd(text):
    with pytest.raises(BadPeriod, match="is not a date; write it as YYYY-MM-DD"):
        parse_day(text)


def test_a_day_written_yyyy_mm_dd_is_that_day():
    assert parse_day("2026-12-01") == date(2026, 12, 1)
    assert parse_day(" 2026-12-01 ") == date(2026, 12, 1)

"""The audit trail as an export: one row of fixed columns per event, for one PO's whole trail
(`/export PO-…`) or for a period (`manzoori audit export`), written as CSV or JSON.

An export leaves the trail's free text out: the notes, reasons and SMTP replies the retention purge
removes (core.records.retention.FREE_TEXT_KEYS; a reply may name an address) and the requester's
sheet file name. What remains are ids, states, versions, hashes, the policy each decision satisfied
and what became of each send, so a file holds nothing personal however old its events. Days are the
days of MANZOORI_TIMEZONE (Pakistan time): the zone is an argument.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from enum import StrEnum
from typing import Any

from core.drafting.tables import neutralise
from core.errors import BadPeriod
from core.jobs.jobs import AuditEvent
from core.jobs.states import Action, State
from core.records.retention import FREE_TEXT_KEYS
from core.texts import echo

# The columns of every export, in order; a JSON export has the same keys.
COLUMNS = (
    "at",
    "po_number",
    "event",
    "from_state",
    "to_state",
    "actor",
    "for",
    "stage",
    "policy_version",
    "rule",
    "draft_version",
    "draft_hash",
    "verdict",
    "result",
    "detail",
)
# Detail keys that have a column of their own, or make up the result column.
_IN_COLUMNS = frozenset(
    {"for", "stage", "policy_version", "rule", "draft_version", "draft_hash", "verdict"}
)
_IN_RESULT = frozenset({"attempt", "class", "retry_at", "decision"})
# Never exported: people's free text (notes, reasons, SMTP replies), and the requester's
# file name, which is theirs to choose and may carry a name.
_LEFT_OUT = FREE_TEXT_KEYS | {"sheet_name"}
_NOT_IN_DETAIL = _IN_COLUMNS | _IN_RESULT | _LEFT_OUT
# What a day argument looks like: the ISO date, nothing else.
_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
# The first day an export may name. The trail starts with this product, years after it; a day
# before it is a typo (0206 for 2026), and 0001-01-01's midnight in Pakistan is before the
# first instant a datetime holds.
FIRST_DAY = date(2000, 1, 1)
# The last day an export may name is tomorrow in MANZOORI_TIMEZONE: nothing is logged later,
# but an admin whose own calendar is ahead of Pakistan's (no zone is a day ahead) may name
# their today. A later day is a typo, and 9999-12-31 has no day after it to end the period.
DAYS_AHEAD = timedelta(days=1)
# The states a send's failure leaves from (a FAIL_FINAL from elsewhere is the intake's).
_SENDING = frozenset({State.SENDING, State.FAILED_RETRYABLE})
# The outcome a person's finding on an unknown send, or a plain success, records.
_OUTCOMES = {
    Action.MARK_SENT: "sent",
    Action.RECONCILE_SENT: "sent (reconciled)",
    Action.RECONCILE_NOT_SENT: "not sent (reconciled): to be sent again",
    Action.RECONCILE_FAILED: "failed (reconciled)",
}


class ExportFormat(StrEnum):
    """How an export is written."""

    CSV = "csv"
    JSON = "json"


@dataclass(frozen=True)
class Logged:
    """An audit event as an export reads it: with its job's PO number (None for an event about
    people), and the draft version and hash it names, in its detail or through its send's
    outbox row (None when it names none)."""

    event: AuditEvent
    po_number: str | None = None
    draft_version: int | None = None
    draft_hash: str | None = None


@dataclass(frozen=True)
class Period:
    """Whole days of a time zone, as the instants [start, end) in UTC."""

    start: datetime
    end: datetime

    @classmethod
    def of_days(cls, first: date, last: date, tz: tzinfo, *, today: date) -> Period:
        """From the start of `first` to the end of `last` (inclusive) in `tz`. Both are
        checked first against the days an export covers, FIRST_DAY to the day after `today`
        (in `tz`), and against each other; BadPeriod says what is allowed."""
        latest = today + DAYS_AHEAD
        for which, day in (("starts", first), ("ends", last)):
            if not FIRST_DAY <= day <= latest:
                covered = f"an export covers the days from {FIRST_DAY} to {latest} (tomorrow)"
                raise BadPeriod(f"the period {which} on {day}: {covered}")
        if last < first:
            raise BadPeriod(f"the period ends ({last}) before it starts ({first})")
        start = datetime.combine(first, time(), tzinfo=tz)
        end = datetime.combine(last + timedelta(days=1), time(), tzinfo=tz)
        return cls(start.astimezone(UTC), end.astimezone(UTC))


def parse_day(text: str) -> date:
    """A day as typed, YYYY-MM-DD; BadPeriod names what is wrong with anything else."""
    try:
        if _DAY.fullmatch(text.strip()):
            return date.fromisoformat(text.strip())
    except ValueError:
        pass
    raise BadPeriod(f"{echo(text)} is not a date; write it as YYYY-MM-DD, e.g. 2026-12-31")


@dataclass(frozen=True)
class ExportRow:
    """One event of an export, in COLUMNS' order; `on_behalf_of` is the "for" column."""

    at: datetime
    po_number: str | None
    event: str
    from_state: str | None
    to_state: str | None
    actor: str
    on_behalf_of: int | None
    stage: int | None
    policy_version: str | None
    rule: str | None
    draft_version: int | None
    draft_hash: str | None
    verdict: str | None
    result: str | None
    detail: dict[str, Any]

    def plain(self) -> dict[str, Any]:
        """The row as JSON-ready values, keyed by COLUMNS; absent values are null."""
        values = (
            self.at.astimezone(UTC).isoformat(),
            self.po_number,
            self.event,
            self.from_state,
            self.to_state,
            self.actor,
            self.on_behalf_of,
            self.stage,
            self.policy_version,
            self.rule,
            self.draft_version,
            self.draft_hash,
            self.verdict,
            self.result,
            self.detail,
        )
        return dict(zip(COLUMNS, values, strict=True))

    def cells(self) -> list[str]:
        """The row as CSV cells: blank for absent, detail as compact JSON, and every cell
        neutralised (core.drafting.tables) so that no spreadsheet runs one as a formula."""
        cells = []
        for value in self.plain().values():
            if isinstance(value, dict):
                value = _compact(value) if value else ""
            cells.append(neutralise("" if value is None else str(value)))
        return cells


def export_row(logged: Logged) -> ExportRow:
    """The export's row of one logged event."""
    event, detail = logged.event, logged.event.detail
    return ExportRow(
        at=event.at,
        po_number=logged.po_number,
        event=event.action,
        from_state=event.from_state and event.from_state.value,
        to_state=event.to_state and event.to_state.value,
        actor=event.actor,
        on_behalf_of=_int(detail.get("for")),
        stage=_int(detail.get("stage")),
        policy_version=_text(detail.get("policy_version")),
        rule=_text(detail.get("rule")),
        draft_version=_int(detail.get("draft_version")) or logged.draft_version,
        draft_hash=_text(detail.get("draft_hash")) or logged.draft_hash,
        verdict=_text(detail.get("verdict")),
        result=send_result(event),
        detail={key: value for key, value in sorted(detail.items()) if key not in _NOT_IN_DETAIL},
    )


def send_result(event: AuditEvent) -> str | None:
    """What became of a send, in a few words, for an event of the outbox; None for others."""
    detail = event.detail
    try:
        action = Action(event.action)
    except ValueError:  # an event about people, a terms check, a purge: no send
        return None
    if action in _OUTCOMES:
        return _OUTCOMES[action]
    if action is Action.START_SEND:
        return f"attempt {detail['attempt']}" if "attempt" in detail else "attempt"
    if action is Action.MARK_UNKNOWN:
        why = detail.get("class", "runner lost")
        return f"outcome unknown ({why}): to be reconciled"
    if action is Action.HOLD_RESTORED:
        return f"outcome unknown ({detail.get('reason', 'restored')}): to be reconciled"
    if action is Action.FAIL_RETRYABLE:  # only ever from SENDING
        retry = f", next try at {detail['retry_at']}" if "retry_at" in detail else ", to be retried"
        return _failure(detail) + retry
    if action is Action.FAIL_FINAL and event.from_state in _SENDING:
        return _failure(detail) + ", given up"
    return None


def _failure(detail: dict[str, Any]) -> str:
    """The error's class and the retry policy's verdict, "failed (transient): retry 2 of 5":
    our own words, never the provider's reply."""
    kind = f" ({detail['class']})" if "class" in detail else ""
    verdict = f": {detail['decision']}" if detail.get("decision") else ""
    return f"failed{kind}{verdict}"


class Writer:
    """Writes an export a piece at a time, so that a year of events never sits in memory:
    CSV (RFC 4180: a header line, every field quoted, CRLF) or a JSON array, one object per
    line. `head()`, then `line(row)` per row, then `tail()`."""

    def __init__(self, kind: ExportFormat) -> None:
        self.kind = kind
        self._out = io.StringIO()
        # Every field quoted, as in the PO's CSV (bot.outbox.emails): a "," or ";" in a cell
        # never splits it, whatever separator the spreadsheet's locale expects.
        self._csv = csv.writer(self._out, lineterminator="\r\n", quoting=csv.QUOTE_ALL)
        self._rows = 0

    def head(self) -> str:
        """What comes before the first row: the CSV header line, or the JSON array's start."""
        return self._csv_line(list(COLUMNS)) if self.kind is ExportFormat.CSV else "["

    def line(self, row: ExportRow) -> str:
        """One row."""
        self._rows += 1
        if self.kind is ExportFormat.CSV:
            return self._csv_line(row.cells())
        return ("\n" if self._rows == 1 else ",\n") + json.dumps(row.plain(), ensure_ascii=False)

    def tail(self) -> str:
        """What comes after the last row."""
        return "" if self.kind is ExportFormat.CSV else "\n]\n"

    def _csv_line(self, cells: list[str]) -> str:
        self._out.seek(0)
        self._out.truncate()
        self._csv.writerow(cells)
        return self._out.getvalue()


def render(rows: Iterable[ExportRow], kind: ExportFormat) -> str:
    """A whole export (one PO's trail) as one text."""
    writer = Writer(kind)
    return writer.head() + "".join(writer.line(row) for row in rows) + writer.tail()


def _compact(value: dict[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None

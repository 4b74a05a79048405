"""Core's values to and from table rows: one pair of functions per kind of row, the field
names read once, enums stored by value. No deep copies: a row's JSON is handed over as is."""

from __future__ import annotations

from dataclasses import fields
from enum import StrEnum
from typing import Any, TypeVar

from core.approval.policies import Decision, Role, Verdict
from core.jobs.effects import EffectStatus
from core.jobs.jobs import AuditEvent, Effect, Job
from core.jobs.notices import Notice, NoticeKind, NoticeStatus
from core.jobs.states import State

T = TypeVar("T")

_KINDS = (Job, Effect, Decision, Notice, AuditEvent)
_FIELDS: dict[type, tuple[str, ...]] = {k: tuple(f.name for f in fields(k)) for k in _KINDS}
# The enums stored by their value.
_ENUMS = (State, EffectStatus, NoticeKind, NoticeStatus, Role, Verdict)


def _plain(value: Any) -> Any:
    return value.value if isinstance(value, _ENUMS) else value


def values_of(item: Job | Effect | Decision | Notice | AuditEvent) -> dict[str, Any]:
    """The row of a job, effect, decision, notice or audit event, for an INSERT."""
    return {name: _plain(getattr(item, name)) for name in _FIELDS[type(item)]}


def plain(changes: dict[str, Any]) -> dict[str, Any]:
    """Changes to a row, enums by value, for an UPDATE."""
    return {name: _plain(value) for name, value in changes.items()}


def _from_row(row: Any, kind: type[T], enums: dict[str, type[StrEnum]]) -> T:
    """A row (extra columns ignored) as `kind`, the named columns read back as their enums
    (NULL as None)."""
    m = row._mapping
    data = {name: m[name] for name in _FIELDS[kind]}
    for name, enum in enums.items():
        data[name] = None if data[name] is None else enum(data[name])
    return kind(**data)


def job_from_row(row: Any) -> Job:
    """A jobs row as a Job."""
    return _from_row(row, Job, {"state": State})


def effect_from_row(row: Any) -> Effect:
    """An effects row as an Effect."""
    return _from_row(row, Effect, {"status": EffectStatus})


def decision_from_row(row: Any) -> Decision:
    """A decisions row (its id ignored) as a Decision."""
    return _from_row(row, Decision, {"reviewer_role": Role, "verdict": Verdict})


def notice_from_row(row: Any) -> Notice:
    """A notices row as a Notice."""
    return _from_row(row, Notice, {"kind": NoticeKind, "status": NoticeStatus})


def audit_from_row(row: Any) -> AuditEvent:
    """An audit_events row (its id ignored) as an AuditEvent."""
    return _from_row(row, AuditEvent, {"from_state": State, "to_state": State})

"""Core's values to and from table rows: one pair of functions per kind of row, the field
names read once, enums stored by value. No deep copies: a row's JSON is handed over as is."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from core.effects import EffectStatus
from core.jobs import AuditEvent, Effect, Job
from core.notices import Notice, NoticeKind, NoticeStatus
from core.policies import Decision, Role, Verdict
from core.states import State

_JOB_FIELDS = tuple(f.name for f in fields(Job))
_EFFECT_FIELDS = tuple(f.name for f in fields(Effect))
_DECISION_FIELDS = tuple(f.name for f in fields(Decision))
_NOTICE_FIELDS = tuple(f.name for f in fields(Notice))
_FIELDS: dict[type, tuple[str, ...]] = {
    Job: _JOB_FIELDS,
    Effect: _EFFECT_FIELDS,
    Decision: _DECISION_FIELDS,
    Notice: _NOTICE_FIELDS,
}
# The enums stored by their value.
_ENUMS = (State, EffectStatus, NoticeKind, NoticeStatus, Role, Verdict)


def _plain(value: Any) -> Any:
    return value.value if isinstance(value, _ENUMS) else value


def values_of(item: Job | Effect | Decision | Notice) -> dict[str, Any]:
    """The row of a job, effect, decision or notice, for an INSERT."""
    return {name: _plain(getattr(item, name)) for name in _FIELDS[type(item)]}


def plain(changes: dict[str, Any]) -> dict[str, Any]:
    """Changes to a row, enums by value, for an UPDATE."""
    return {name: _plain(value) for name, value in changes.items()}


def job_from_row(row: Any) -> Job:
    """A jobs row (extra columns ignored) as a Job."""
    m = row._mapping
    data = {name: m[name] for name in _JOB_FIELDS}
    data["state"] = State(data["state"])
    return Job(**data)


def effect_from_row(row: Any) -> Effect:
    """An effects row as an Effect."""
    m = row._mapping
    data = {name: m[name] for name in _EFFECT_FIELDS}
    data["status"] = EffectStatus(data["status"])
    return Effect(**data)


def decision_from_row(row: Any) -> Decision:
    """A decisions row (its id ignored) as a Decision."""
    m = row._mapping
    data = {name: m[name] for name in _DECISION_FIELDS}
    data["reviewer_role"] = Role(data["reviewer_role"])
    data["verdict"] = Verdict(data["verdict"])
    return Decision(**data)


def notice_from_row(row: Any) -> Notice:
    """A notices row as a Notice."""
    m = row._mapping
    data = {name: m[name] for name in _NOTICE_FIELDS}
    data["kind"] = NoticeKind(data["kind"])
    data["status"] = NoticeStatus(data["status"])
    return Notice(**data)


def audit_values(event: AuditEvent) -> dict[str, Any]:
    """The row of an audit event, for an INSERT."""
    return {
        "job_id": event.job_id,
        "at": event.at,
        "actor": event.actor,
        "action": event.action,
        "from_state": event.from_state and event.from_state.value,
        "to_state": event.to_state and event.to_state.value,
        "detail": event.detail,
    }

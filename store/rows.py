"""Result rows back into core's values."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from core.jobs import Job
from core.states import State

_JOB_FIELDS = [f.name for f in fields(Job)]


def job_from_row(row: Any) -> Job:
    """A jobs row (extra columns ignored) as a Job."""
    data = {name: row._mapping[name] for name in _JOB_FIELDS}
    return Job(**{**data, "state": State(data["state"])})

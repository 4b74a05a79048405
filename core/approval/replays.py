"""Decisions a client sends under an id it generated (the Mini App, offline): the id is the
decision's idempotency key, so a decision replayed however often, or twice at once, is recorded
once, and a replay is answered with what the first one did.

The first request under an id is kept (ClientDecision) in the same transaction as the decision
it makes, before it: a concurrent replay of the same id then fails on the key (InsertConflict),
and core.jobs.transitions.retry_on_stale runs it again, to find the row and answer it as a replay. A
replay must repeat its request exactly (its fingerprint): an id reused for another PO, person,
verdict, draft or edit is refused (ClientIdReused)."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from core.errors import BadClientId, ClientIdReused
from core.jobs.jobs import Job
from core.ports import ReadTx

# What the page may use for an id: a UUID, a ULID or a nanoid fits; nothing that needs quoting
# in a log line or a URL.
_CLIENT_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


class ClientAction(StrEnum):
    """What a client's decision asked for; the values are what the store keeps."""

    APPROVE = "approve"
    REJECT = "reject"
    EDIT = "edit"  # approve with changes (core.purchasing.edits)


@dataclass(frozen=True)
class ClientDecision:
    """The first request a client sent under its id: whose, on which job, what it asked (its
    fingerprint), and the draft version it was decided on (an edit's: the version it made)."""

    client_id: str
    job_id: str
    reviewer_id: int
    action: ClientAction
    request_sha256: str
    draft_version: int
    at: datetime  # the server's time


def check_client_id(client_id: str | None) -> None:
    """Raise BadClientId unless `client_id` is None or 1 to 64 of A-Z, a-z, 0-9, _ and -."""
    if client_id is not None and not _CLIENT_ID.fullmatch(client_id):
        raise BadClientId("a decision id is 1 to 64 letters, digits, '_' or '-'")


def fingerprint(request: dict[str, Any]) -> str:
    """sha256 of a request's canonical JSON: what a replay must repeat exactly."""
    data = json.dumps(request, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(data.encode()).hexdigest()


async def kept_request(
    tx: ReadTx,
    client_id: str | None,
    job: Job,
    reviewer_id: int,
    action: ClientAction,
    sha256: str,
) -> ClientDecision | None:
    """The request first sent under `client_id` if this one repeats it (a replay); None if
    none is kept; ClientIdReused if the id was sent for another request."""
    found = None if client_id is None else await tx.client_decision(client_id)
    if found is None:
        return None
    asked = (job.id, reviewer_id, action, sha256)
    if (found.job_id, found.reviewer_id, found.action, found.request_sha256) != asked:
        raise ClientIdReused(f"decision id {found.client_id} was sent for another request")
    return found


def device_detail(client_id: str | None, device_time: datetime | None) -> dict[str, Any]:
    """What the audit event of a client's decision keeps beside the server's own time: the id
    the client sent it under and the time on the device, as ISO 8601."""
    detail: dict[str, Any] = {}
    if client_id is not None:
        detail["client_id"] = client_id
    if device_time is not None:
        detail["device_time"] = device_time.isoformat()
    return detail

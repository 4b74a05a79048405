"""A decision the Mini App sends: read strictly, recorded through the same use cases as a button
(core.approval.decisions.decide; core.purchasing.edits.approve_with_changes for one with changes),
and answered with what the decider reads in the page's status line, in their language.

The page names the draft version and hash it showed, and an id it made for the decision: the
server records one decision per id however often the page sends it (a queued decision sent
again after a lost answer is the same decision), and refuses it if the draft changed since.

    200 {"status": "recorded", "message", "version", "state", "replay"}
    400 {"status": "invalid", "message"}           a body that is not a decision (not UTF-8
                                                   JSON, nested too deep, a field wrong)
    404 {"status": "unknown", "message"}           no such PO
    409 {"status": "refused", "code", "message"}   the checks a tap makes said no
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bot.clock import utcnow
from bot.config import Settings
from bot.telegram.decisions import EXPIRED, pending_answer, refused_text
from bot.web.bodies import json_object
from bot.web.words import CHANGED, EDIT_REFUSED, NOT_FOUND, REASON_FOR_BUDGET
from bot.words.i18n import Translator
from core.approval import decisions
from core.approval.decisions import DecisionResult, Review
from core.approval.policies import Outcome, Rules, Verdict
from core.errors import (
    ApprovalError,
    ApprovalExpired,
    ClientIdReused,
    DraftChanged,
    EditRefused,
    IllegalTransition,
    ReasonRequired,
)
from core.jobs.jobs import Job
from core.ports import Store
from core.purchasing import edits
from core.purchasing.edits import Edit, Edited, LineChange
from core.texts import flatten

_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")  # crypto.randomUUID()'s, or any such page-made id
_HASH = re.compile(r"[0-9a-f]{64}")
_SURROGATE = re.compile("[\ud800-\udfff]")  # half a UTF-16 pair: no character at all
_MAX_REASON = 500  # as a reply to the bot's reason prompt
_MAX_CHANGES = 10_000  # a sheet's most lines


class BadDecision(ValueError):
    """A body that is not a decision the page could have sent."""


@dataclass(frozen=True)
class Asked:
    """A decision as the page sent it, checked for shape."""

    client_id: str
    verdict: Verdict
    draft_version: int
    draft_hash: str
    reason: str | None
    changes: tuple[LineChange, ...]
    device_time: datetime | None


@dataclass(frozen=True)
class Answer:
    """The HTTP status and JSON body of the answer, and the job whose notices are owed now."""

    status: int
    body: dict[str, Any]
    job_id: str | None = None


def parse(raw: bytes) -> Asked:
    """The decision in a request body; BadDecision saying what is wrong."""
    body = json_object(raw)
    if isinstance(body, str):
        raise BadDecision(body)
    client_id, version, digest = body.get("id"), body.get("draft_version"), body.get("draft_hash")
    if not isinstance(client_id, str) or not _ID.fullmatch(client_id):
        raise BadDecision("id must be 1-64 characters of A-Z a-z 0-9 _ -")
    try:
        verdict = Verdict(str(body.get("verdict")))
    except ValueError:
        raise BadDecision("verdict must be approve or reject") from None
    if type(version) is not int or version < 1:
        raise BadDecision("draft_version must be a positive integer")
    if not isinstance(digest, str) or not _HASH.fullmatch(digest):
        raise BadDecision("draft_hash must be 64 hex digits")
    reason = body.get("reason")
    if reason is not None and not isinstance(reason, str):
        raise BadDecision("reason must be a string")
    if reason is not None and _SURROGATE.search(reason):  # JSON can escape one; UTF-8 cannot
        raise BadDecision("reason must be Unicode text, without lone surrogates")
    # One line, as a reply's; a reason of nothing visible is none.
    reason = (flatten(reason)[:_MAX_REASON] or None) if reason else None
    changes = _changes(body.get("changes"))
    if verdict is Verdict.REJECT and (changes or not reason):
        raise BadDecision("a rejection has a reason and no changes")
    return Asked(client_id, verdict, version, digest, reason, changes, _time(body))


def _changes(given: object) -> tuple[LineChange, ...]:
    """The [{line, quantity}] of an approval with changes (none when absent)."""
    if given is None:
        return ()
    if not isinstance(given, list) or len(given) > _MAX_CHANGES:
        raise BadDecision("changes must be a list of {line, quantity}")
    changes = []
    for item in given:
        line = item.get("line") if isinstance(item, dict) else None
        quantity = item.get("quantity") if isinstance(item, dict) else None
        if type(line) is not int or type(quantity) is not int or line < 1 or quantity < 0:
            raise BadDecision("each change is {line: n >= 1, quantity: n >= 0}")
        changes.append(LineChange(line, quantity))
    return tuple(changes)


def _time(body: dict[str, Any]) -> datetime | None:
    """The device's clock when the decision was made, as the page sent it (ISO 8601)."""
    given = body.get("device_time")
    if given is None:
        return None
    try:
        moment = datetime.fromisoformat(given) if isinstance(given, str) else None
    except ValueError:
        moment = None
    if moment is None or moment.tzinfo is None:
        raise BadDecision("device_time must be an ISO 8601 time with its offset")
    return moment


async def record(
    store: Store, settings: Settings, po: str, raw: bytes, user_id: int, tr: Translator
) -> Answer:
    """Record the decision in `raw` on `po` by `user_id`; the answer for the page."""
    try:
        asked = parse(raw)
    except BadDecision as bad:
        return Answer(400, {"status": "invalid", "message": str(bad)})
    async with store.reading() as tx:
        job = await tx.job_by_po(po)
    if job is None:
        return Answer(404, {"status": "unknown", "message": tr(NOT_FOUND, po=flatten(po)[:40])})
    try:
        after, text, replay = await _apply(store, settings.rules(), po, user_id, asked, tr)
    except ApprovalExpired:  # the expiry it found is news for the requester
        return Answer(409, {"status": "refused", "code": "expired", "message": tr(EXPIRED)}, job.id)
    except (ApprovalError, IllegalTransition, EditRefused) as refused:
        text = await refusal(store, settings, job, user_id, refused, tr)
        code = type(refused).__name__
        return Answer(409, {"status": "refused", "code": code, "message": text})
    body = {
        "status": "recorded",
        "message": text,
        "version": after.draft_version,
        "state": after.state.value,
        "replay": replay,  # the id named a decision recorded before: nothing new was written
    }
    return Answer(200, body, job.id)


async def _apply(
    store: Store, rules: Rules, po: str, user_id: int, asked: Asked, tr: Translator
) -> tuple[Job, str, bool]:
    """The decision recorded by the use case a button's would be: the job after it, what
    the decider reads, and whether it was a replay."""
    now = utcnow()
    if asked.changes:
        edit = Edit(
            po, user_id, asked.draft_version, asked.draft_hash, asked.changes,
            reason=asked.reason, client_id=asked.client_id, device_time=asked.device_time,
        )  # fmt: skip
        edited = await edits.approve_with_changes(store, edit, now, rules)
        return edited.job, _edited(edited, asked, tr), edited.replay
    review = Review(
        po, user_id, asked.verdict, asked.draft_version, asked.draft_hash, asked.reason,
        client_id=asked.client_id, device_time=asked.device_time,
    )  # fmt: skip
    result = await decisions.decide(store, review, now, rules)
    return result.job, recorded(result, asked, tr), result.replay


def _edited(edited: Edited, asked: Asked, tr: Translator) -> str:
    """What the editor reads once their changes are the new version."""
    if edited.approval is not None:
        return recorded(edited.approval, asked, tr)
    return tr(
        "Your changes are v{version}; it goes to the approvers again.",
        version=edited.job.draft_version,
    )


def recorded(result: DecisionResult, asked: Asked, tr: Translator) -> str:
    """What the decider reads once the decision is recorded: a tap's answer."""
    if asked.verdict is Verdict.REJECT:
        return tr("Rejected {po}. The requester is told your reason.", po=result.job.po_number)
    if result.outcome is Outcome.APPROVED:
        return tr("Approved — e-mailing the supplier.")
    return pending_answer(result, tr)


async def refusal(
    store: Store, settings: Settings, job: Job, user_id: int, refused: Exception, tr: Translator
) -> str:
    """Why the decision does not count: the page's own words for what only the page meets (a
    changed draft, a budget's reason, an edit, a reused id), else a tap's answer's."""
    match refused:
        case DraftChanged():
            return tr(CHANGED)
        case ReasonRequired():
            return tr(REASON_FOR_BUDGET)
        case EditRefused():
            return edit_refused(refused, tr)
        case ClientIdReused():
            return tr("This decision's id was used for another one: decide again.")
    return await refused_text(store, settings.tz, job, refused, tr, reviewer_id=user_id)


def edit_refused(refused: EditRefused, tr: Translator) -> str:
    """Why the changes cannot be made, naming the line."""
    return tr(EDIT_REFUSED[refused.code], line=refused.line)

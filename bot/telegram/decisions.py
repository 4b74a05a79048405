"""Taps on approval cards: the signed data is checked first, the engine decides, the tap is
answered at once with the truth, and only then are the cards edited (slow work, after the
answer, because Telegram refuses answers after about 15 seconds). The edits are notices the
decision made owed in its own transaction; the handler delivers them at once.
"""

from __future__ import annotations

import logging
import re
from datetime import datetime

from telegram import CallbackQuery, ForceReply, Message, Update
from telegram.error import BadRequest
from telegram.ext import ContextTypes, filters

from bot.clock import utcnow
from bot.outbox.emails import render_csv
from bot.telegram.context import Deps, deps_of
from bot.telegram.notices import NoticeRunner
from core import service
from core.drafts import draft_hash
from core.errors import (
    AlreadyDecided,
    ApprovalExpired,
    DraftChanged,
    NotAnApprover,
    SelfApproval,
    UnknownJob,
)
from core.jobs import Job
from core.policies import Outcome, Verdict, check_reviewer
from core.signing import Button, ButtonAction, InvalidToken, verify_button
from core.states import State
from store.sql import SqlTx

log = logging.getLogger(__name__)

NOT_VALID = "This button is not valid."
# The reason prompt names the PO and version; the reply to it is matched by this text, which
# only the bot can have written (the reply quotes the bot's own message).
REASON_PROMPT = "Reason for rejecting"
_PROMPTED = re.compile(rf"^{REASON_PROMPT} (PO-[A-Za-z0-9-]+) v(\d+)\?$")
_MAX_REASON = 500


class _ReasonReply(filters.MessageFilter):
    """A text reply to one of the bot's reason prompts; any other reply is an ordinary message."""

    def filter(self, message: Message) -> bool:
        prompt = message.reply_to_message
        return (
            message.text is not None
            and prompt is not None
            and prompt.from_user is not None
            and prompt.from_user.id == message.get_bot().id
            and _PROMPTED.match(prompt.text or "") is not None
        )


REASON_REPLY = _ReasonReply()


async def on_reason(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    """A reply to the reason prompt (REASON_REPLY): the rejection, with its reason, for the
    requester."""
    message, user = update.effective_message, update.effective_user
    assert message is not None and user is not None and message.reply_to_message is not None
    asked = _PROMPTED.match(message.reply_to_message.text or "")
    assert asked is not None  # REASON_REPLY let it through
    deps, po, version = deps_of(context), asked.group(1), int(asked.group(2))
    reason = " ".join((message.text or "").split())[:_MAX_REASON] or "no reason given"
    async with deps.store.begin() as tx:
        job = await tx.job_by_po(po)
        reviewed = await _hash_of(tx, job, version) if job else ""
    if job is None:
        await message.reply_text(NOT_VALID)
        return
    text, decided = await _decide(deps, user.id, job, Verdict.REJECT, version, reviewed, reason)
    await message.reply_text(text)
    if decided:
        deliver_now(context, deps, job.id)  # the requester's news is in the outbox


async def on_tap(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    """A card's button: Approve or Details (Reject asks for a reason first)."""
    query, user = update.callback_query, update.effective_user
    assert query is not None and user is not None
    deps = deps_of(context)
    checked = await verified(query, deps)
    if checked is None:
        return
    button, job = checked
    refusal = await _refusal(deps, user.id, job, button)  # checked again where a decision is
    if refusal is not None:  # recorded; here so that Details and the reason prompt are too
        await answer_tap(query, refusal)
        return
    if button.action is ButtonAction.DETAILS:
        await answer_tap(query, "Sending the whole PO as a CSV file…")
        await _details(context, deps, user.id, job.id, button.draft_version)
        return
    if button.action is ButtonAction.REJECT:
        await answer_tap(query, "Why reject it? Reply to my next message with the reason.")
        await context.bot.send_message(
            user.id, f"{REASON_PROMPT} {job.po_number} v{button.draft_version}?",
            reply_markup=ForceReply(input_field_placeholder="The reason, for the requester"),
        )  # fmt: skip
        return
    if button.action is not ButtonAction.APPROVE:
        await answer_tap(query, NOT_VALID)
        return
    text, decided = await _decide(
        deps, user.id, job, Verdict.APPROVE, button.draft_version, job.draft_hash or ""
    )  # another version: DraftChanged
    await answer_tap(query, text)
    if decided:
        deliver_now(context, deps, job.id)


async def verified(query: CallbackQuery, deps: Deps) -> tuple[Button, Job] | None:
    """A button's signed data, checked before any database work, and the job it names; None,
    with the tap answered "not valid", for forged, altered or unknown data."""
    try:
        button = verify_button(deps.settings.secret, query.data)
    except InvalidToken:
        await answer_tap(query, NOT_VALID)
        return None
    async with deps.store.begin() as tx:
        try:
            job = await tx.job(button.job_id)
        except UnknownJob:
            job = None
        signed_for = await _hash_of(tx, job, button.draft_version) if job else ""
    if job is None or not signed_for.startswith(button.hash_prefix):
        await answer_tap(query, NOT_VALID)
        return None
    return button, job


async def _refusal(deps: Deps, user_id: int, job: Job, button: Button) -> str | None:
    """Why this person may not use this card's button now, as the tap's answer; None if they
    may. Details needs an approver; Reject, like Approve, a card that can still be decided."""
    async with deps.store.begin() as tx:
        roles = await tx.roles(user_id)
    try:
        check_reviewer(roles, user_id, job.requester_id)
    except NotAnApprover:
        return "You are not an approver."
    except SelfApproval:
        return "You cannot approve your own request."
    if button.action is not ButtonAction.REJECT:
        return None  # Approve: the engine's decision answers the rest
    if button.draft_version != job.draft_version:
        return f"This card was superseded by v{job.draft_version}."
    deadline = job.decision_deadline
    if job.state is State.EXPIRED or (deadline is not None and utcnow() >= deadline):
        return "This request expired."
    async with deps.store.begin() as tx:
        mine = [d for d in await tx.decisions(job.id)
                if (d.reviewer_id, d.draft_version) == (user_id, button.draft_version)]  # fmt: skip
    if job.state is not State.AWAITING_APPROVAL or mine:
        return await _already(deps, user_id, job.po_number, button.draft_version)
    return None


async def _hash_of(tx: SqlTx, job: Job, version: int) -> str:
    """The hash of the job's draft `version` (an old card names an old one), or ""."""
    if version == job.draft_version:
        return job.draft_hash or ""
    if 1 <= version < (job.draft_version or 0):
        return draft_hash(await tx.draft(job.id, version))
    return ""


async def _decide(
    deps: Deps,
    user_id: int,
    job: Job,
    verdict: Verdict,
    version: int,
    reviewed: str,
    reason: str | None = None,
) -> tuple[str, bool]:
    """Record the decision; the answer for the decider, and whether anything was recorded
    (notices to deliver)."""
    po = job.po_number
    try:
        result = await service.decide(deps.store, po, user_id, verdict, version, reviewed,
                                      utcnow(), deps.settings.rules(), reason)  # fmt: skip
    except NotAnApprover:
        return "You are not an approver.", False
    except SelfApproval:
        own = "approve" if verdict is Verdict.APPROVE else "decide"
        return f"You cannot {own} your own request.", False
    except DraftChanged:
        return f"This card was superseded by v{job.draft_version}.", False
    except ApprovalExpired:
        return "This request expired.", True
    except AlreadyDecided:
        return await _already(deps, user_id, po, version), False
    if verdict is Verdict.REJECT:
        return f"Rejected {po}. The requester is told your reason.", True
    if result.outcome is Outcome.APPROVED:
        return "Approved — e-mailing the supplier.", True
    return "Needs a second approver. Your approval is recorded.", True


async def _already(deps: Deps, user_id: int, po: str, version: int) -> str:
    async with deps.store.begin() as tx:
        job = await tx.job_by_po(po)
        assert job is not None
        mine = [d for d in await tx.decisions(job.id)
                if d.reviewer_id == user_id and d.draft_version == version]  # fmt: skip
    if mine:
        done = "approved" if mine[-1].verdict is Verdict.APPROVE else "rejected"
        return f"Already {done} by you at {_hm(mine[-1].at, deps)}."
    return f"Already decided: {job.po_number} is {job.state.value.lower().replace('_', ' ')}."


def _hm(moment: datetime, deps: Deps) -> str:
    return f"{moment.astimezone(deps.settings.tz):%H:%M}"


async def answer_tap(query: CallbackQuery, text: str) -> None:
    """Answer a tap; a query that is too old already timed out on the phone: nothing to do."""
    try:
        await query.answer(text)
    except BadRequest as error:
        log.info("tap not answered: %s", error)


async def _details(
    context: ContextTypes.DEFAULT_TYPE, deps: Deps, user_id: int, job_id: str, version: int
) -> None:
    async with deps.store.begin() as tx:
        job = await tx.job(job_id)
        draft = await tx.draft(job_id, version)
    await context.bot.send_document(
        user_id, render_csv(draft).encode(), filename=f"{job.po_number}-v{version}.csv",
        caption=f"{job.po_number} v{version}: {len(draft.lines):,} lines",
    )  # fmt: skip


def deliver_now(context: ContextTypes.DEFAULT_TYPE, deps: Deps, job_id: str) -> None:
    """Start delivering what the decision made owed (card edits, the requester's news) beside
    the handler, which returns at once: the next tap is answered without waiting for forty
    edits at Telegram's pace. The notice runner's next pass delivers anything this misses."""

    if not context.application.running:  # shutting down: the next process's pass has them
        return

    async def deliver() -> None:
        try:
            await NoticeRunner(deps.store, context.bot, deps.settings).run_once(job_id)
        except Exception:  # the decision stands; the background pass retries the notices
            log.exception("notices of job %s left to the background pass", job_id)

    context.application.create_task(deliver(), name=f"deliver-{job_id}")  # awaited on stop

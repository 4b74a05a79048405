"""Taps on approval cards: the signed data is checked first, the engine decides, the tap is
answered at once with the truth, and only then are the cards edited (slow work, after the
answer, because Telegram refuses answers after about 15 seconds). The edits are notices the
decision made owed in its own transaction; the handler delivers them at once.
"""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from functools import partial

from telegram import CallbackQuery, ForceReply, Message, Update, User
from telegram.ext import ContextTypes, filters

from bot.clock import utcnow
from bot.outbox.emails import render_csv
from bot.telegram.context import Deps, answer_tap, deps_of, held_roles, record_claim, turn_away
from bot.telegram.fairness import FairProcessor
from bot.telegram.notices import NoticeRunner
from bot.texts import TIME_OF_DAY, local_time
from core import service
from core.drafts import draft_hash
from core.errors import (
    ApprovalError,
    ApprovalExpired,
    DelegationEnded,
    DraftChanged,
    IllegalTransition,
    InvalidToken,
    NotAnApprover,
    NotYourTurn,
    ReasonRequired,
    SelfApproval,
    UnknownJob,
)
from core.jobs import Job
from core.policies import Outcome, Verdict
from core.ports import ShellReadTx, ShellStore, ShellTx, Store
from core.service import Review
from core.signing import Button, ButtonAction, verify_button
from core.states import State
from core.texts import flatten
from store.group_commit import urgent as urgent_writes

log = logging.getLogger(__name__)

NOT_VALID = "This button is not valid."
# A reason prompt names the decision, the PO and the version; the reply to it is matched by
# this text, which only the bot can have written (the reply quotes the bot's own message). A
# rejection always asks for one; an approval that takes a category over its month does too.
REASON_PROMPT = "Reason for rejecting"
OVER_BUDGET_PROMPT = "Reason for approving over budget"
_PROMPTS = {Verdict.REJECT: REASON_PROMPT, Verdict.APPROVE: OVER_BUDGET_PROMPT}
_ASKED = {
    Verdict.REJECT: (
        "Why reject it? Reply to my next message with the reason.",
        "The reason, for the requester",
    ),
    Verdict.APPROVE: (
        "This approval goes over a monthly budget: reply to my next message with your reason.",
        "Why approve it over budget",
    ),
}
_PROMPTED = re.compile(
    rf"^({'|'.join(map(re.escape, _PROMPTS.values()))}) (PO-[A-Za-z0-9-]+) v(\d+)\?$"
)
_MAX_REASON = 500
# Seconds the deliveries a tap starts wait for a pause in the taps (FairProcessor.between_taps).
DELIVERY_PATIENCE = 5.0
DETAILS_SENDING = "Sending the whole PO as a CSV file…"
# A Details tap while the same approver's export of that PO version is still going out.
DETAILS_IN_FLIGHT = "Already sending that file…"


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
    """A reply to a reason prompt (REASON_REPLY): the rejection, with its reason for the
    requester, or the over-budget approval, with its reason for the record."""
    message, user = update.effective_message, update.effective_user
    assert message is not None and user is not None and message.reply_to_message is not None
    asked = _PROMPTED.match(message.reply_to_message.text or "")
    assert asked is not None  # REASON_REPLY let it through
    verdict = next(v for v, prompt in _PROMPTS.items() if prompt == asked.group(1))
    deps, po, version = deps_of(context), asked.group(2), int(asked.group(3))
    # One line, without bidi or zero-width tricks: it goes on the requester's news and the trail.
    reason = flatten(message.text or "")[:_MAX_REASON] or "no reason given"
    async with deps.store.reading() as tx:
        job = await tx.job_by_po(po)
        reviewed = await _hash_of(tx, job, version) if job else ""
    if job is None:
        await message.reply_text(NOT_VALID)
        return
    review = Review(po, user.id, verdict, version, reviewed, reason)
    text, decided = await _decide(deps, job, review)
    await message.reply_text(text)
    if decided:
        deliver_now(context, deps, job.id)  # the requester's news is in the outbox


async def on_tap(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    """A card's button: Approve or Details (Reject asks for a reason first)."""
    tap = await checked_tap(update, context)
    if tap is None:
        return
    query, user, deps, button, job = tap.query, tap.user, tap.deps, tap.button, tap.job
    reviewed = tap.signed_for
    verdict = Verdict.REJECT if button.action is ButtonAction.REJECT else Verdict.APPROVE
    review = Review(job.po_number, user.id, verdict, button.draft_version, reviewed)
    if button.action is ButtonAction.APPROVE:
        try:
            text, decided = await _decide(deps, job, review, _Claiming(deps.store, update, user))
        except Redelivered:
            log.info("update %s delivered again; ignored", update.update_id)
            return
        except ReasonRequired:  # nothing was recorded: the approval waits for its reason
            await _ask_reason(context, tap, Verdict.APPROVE)
            return
        await answer_tap(query, text)
        if decided:
            deliver_now(context, deps, job.id)
        return
    refused = await refusal(deps, job, review, reading=button.action is ButtonAction.DETAILS)
    if refused is not None:  # checked again where a decision is recorded
        await answer_tap(query, refused)
    elif button.action is ButtonAction.DETAILS:
        await _details(context, tap)
    elif button.action is ButtonAction.REJECT:
        await _ask_reason(context, tap, Verdict.REJECT)
    else:
        await answer_tap(query, NOT_VALID)


async def _ask_reason(context: ContextTypes.DEFAULT_TYPE, tap: Tap, verdict: Verdict) -> None:
    """Answer the tap, then ask for the decision's reason with a prompt the reply quotes."""
    answer, placeholder = _ASKED[verdict]
    await answer_tap(tap.query, answer)
    await context.bot.send_message(
        tap.user.id,
        f"{_PROMPTS[verdict]} {tap.job.po_number} v{tap.button.draft_version}?",
        reply_markup=ForceReply(input_field_placeholder=placeholder),
    )


def claimed_with_decision(button: Button) -> bool:
    """Whether a tap on this button is claimed (app.claim) in the transaction that records
    its decision rather than in one of its own: an Approve tap on a card."""
    return button.action is ButtonAction.APPROVE


class Redelivered(Exception):
    """The update was handled before: Telegram delivered it again."""


@dataclass(frozen=True)
class _Claiming:
    """The store, for a use case that writes in one transaction (core.service.decide): that
    transaction also claims the update, so the tap costs one write, the claim and what it
    recorded commit together, and a refusal (rolled back) leaves no claim behind. A repeat
    raises Redelivered from inside it, so nothing of it is written."""

    store: ShellStore
    update: Update
    user: User

    def reading(self) -> AbstractAsyncContextManager[ShellReadTx]:
        return self.store.reading()

    @asynccontextmanager
    async def begin(self) -> AsyncIterator[ShellTx]:
        async with self.store.begin() as tx:
            if not await record_claim(tx, self.update, self.user, utcnow()):
                raise Redelivered(f"update {self.update.update_id}")
            yield tx


@dataclass(frozen=True)
class Tap:
    """A tap whose signed data checked out: who tapped what, on which job."""

    query: CallbackQuery
    user: User  # from the update Telegram signed
    deps: Deps
    button: Button
    job: Job
    signed_for: str  # the hash of the draft version the button was signed for


async def checked_tap(update: Update, context: ContextTypes.DEFAULT_TYPE) -> Tap | None:
    """The tap, its button's signed data checked before any database work; None, with the
    tap answered "not valid", for forged, altered or unknown data, or turned away for a
    stranger (for an Approve tap, app.claim leaves that check to this read)."""
    query, user, deps = update.callback_query, update.effective_user, deps_of(context)
    assert query is not None and user is not None
    try:
        button = verify_button(deps.settings.secret, query.data)
    except InvalidToken:
        await answer_tap(query, NOT_VALID)
        return None
    async with deps.store.reading() as tx:
        roles = held_roles(deps, user.id, await tx.roles(user.id))
        try:
            job = await tx.job(button.job_id) if roles else None
        except UnknownJob:
            job = None
        signed_for = await _hash_of(tx, job, button.draft_version) if job else ""
    if not roles:
        await turn_away(deps, update, user)
        return None
    if job is None or not signed_for.startswith(button.hash_prefix):
        await answer_tap(query, NOT_VALID)
        return None
    return Tap(query, user, deps, button, job, signed_for)


async def _hash_of(tx: ShellReadTx, job: Job, version: int) -> str:
    """The hash of the job's draft `version` (an old card names an old one), or ""."""
    if version == job.draft_version:
        return job.draft_hash or ""
    if 1 <= version < (job.draft_version or 0):
        return draft_hash(await tx.draft(job.id, version))
    return ""


async def _decide(
    deps: Deps, job: Job, review: Review, store: Store | None = None
) -> tuple[str, bool]:
    """Record the decision (through `store`, deps.store by default); the answer for the
    decider, and whether anything was recorded (notices to deliver). ReasonRequired passes
    through: an approval over budget without a reason, which records nothing."""
    try:
        result = await service.decide(store or deps.store, review, utcnow(), deps.settings.rules())
    except ApprovalExpired:
        return "This request expired.", True  # the expiry it found is news
    except ReasonRequired:  # for the caller, which asks for the reason
        raise
    except (ApprovalError, IllegalTransition) as refused:
        return await _refused(deps, job, review, refused), False
    if review.verdict is Verdict.REJECT:
        return f"Rejected {job.po_number}. The requester is told your reason.", True
    if result.outcome is Outcome.APPROVED:
        return "Approved — e-mailing the supplier.", True
    return _pending(result), True


def _pending(result: service.DecisionResult) -> str:
    """The answer to an approval that does not yet complete the route."""
    route, counted, stage = result.route, result.tally, result.decision.stage
    if counted.stage > stage:  # this approval completed its stage: the next group's turn
        waiting = route.stages[counted.stage].group
        return (
            f"Recorded. Stage {stage + 1} of {len(route.stages)} is complete; "
            f"it now waits for {waiting}."
        )
    needed = route.stages[counted.stage].approvals
    left = needed - len(counted.counted[counted.stage])
    if (needed, left) == (2, 1):
        return "Needs a second approver. Your approval is recorded."
    more = "one more approver" if left == 1 else f"{left} more approvers"
    return f"Needs {more}. Your approval is recorded."


async def refusal(deps: Deps, job: Job, review: Review, *, reading: bool) -> str | None:
    """Why this person may not use this card's button now, as the tap's answer; None if they
    may (core.service.may_decide: the checks a decision makes, without recording one)."""
    try:
        rules = deps.settings.rules()
        await service.may_decide(deps.store, review, utcnow(), rules, reading=reading)
    except (ApprovalError, IllegalTransition) as refused:
        return await _refused(deps, job, review, refused)
    return None


async def _refused(deps: Deps, job: Job, review: Review, refused: Exception) -> str:
    """What a refused decision is called in the tap's answer."""
    match refused:
        case NotAnApprover():
            return "You are not an approver."
        case SelfApproval() if review.reviewer_id != job.requester_id:
            return "You cannot decide this request: you and its requester act for each other."
        case SelfApproval():
            own = "approve" if review.verdict is Verdict.APPROVE else "decide"
            return f"You cannot {own} your own request."
        case DelegationEnded():
            return f"Not counted: {refused}."
        case DraftChanged():
            return f"This card was superseded by v{job.draft_version}."
        case NotYourTurn():
            return f"Not your turn: {refused}."
        case ApprovalExpired():
            return "This request expired."
        case _:
            return await _already(deps, review.reviewer_id, job.po_number, review.draft_version)


async def _already(deps: Deps, user_id: int, po: str, version: int) -> str:
    async with deps.store.reading() as tx:
        job = await tx.job_by_po(po)
        assert job is not None
        mine = [
            d
            for d in await tx.decisions(job.id)
            if user_id in (d.reviewer_id, d.on_behalf_of) and d.draft_version == version
        ]
        by = None if not mine else await tx.telegram_user(mine[-1].reviewer_id)
    if mine:
        done = "approved" if mine[-1].verdict is Verdict.APPROVE else "rejected"
        when = local_time(mine[-1].at, deps.settings.tz, TIME_OF_DAY)
        if mine[-1].reviewer_id != user_id:  # their delegate's, for them
            name = flatten(by.first_name) if by else f"user {mine[-1].reviewer_id}"
            return f"Already {done} for you by {name} at {when}."
        return f"Already {done} by you at {when}."
    if job.state is State.AWAITING_APPROVAL:  # one person with someone who counted
        return (
            "Already counted: you and the approver you act with while one is away count as one "
            "person on this request."
        )
    return f"Already decided: {job.po_number} is {job.state.value.lower().replace('_', ' ')}."


@dataclass(frozen=True)
class DetailsFile:
    """A Details CSV Telegram holds already: sent again by its file_id, not rendered again."""

    file_id: str
    caption: str


async def _details(context: ContextTypes.DEFAULT_TYPE, tap: Tap) -> None:
    """The whole PO as a CSV file; one export per approver, PO and version at a time, and the
    file Telegram already holds is sent again by its id."""
    guards, user_id, version = tap.deps.guards, tap.user.id, tap.button.draft_version
    with guards.details.hold((user_id, tap.job.id, version)) as mine:
        if not mine:
            await answer_tap(tap.query, DETAILS_IN_FLIGHT)
            return
        await answer_tap(tap.query, DETAILS_SENDING)
        known = guards.details_files.get((tap.job.id, version))
        if isinstance(known, DetailsFile):
            await context.bot.send_document(user_id, known.file_id, caption=known.caption)
            return
        async with tap.deps.store.reading() as tx:
            draft = await tx.draft(tap.job.id, version)
        caption = f"{tap.job.po_number} v{version}: {len(draft.lines):,} lines"
        sent = await context.bot.send_document(
            user_id,
            (await tap.deps.offload(partial(render_csv, draft))).encode(),  # off the loop
            filename=f"{tap.job.po_number}-v{version}.csv",
            caption=caption,
        )
        if sent.document is not None:
            guards.details_files.put(
                (tap.job.id, version), DetailsFile(sent.document.file_id, caption)
            )


def deliver_now(context: ContextTypes.DEFAULT_TYPE, deps: Deps, job_id: str) -> None:
    """Start delivering what the decision made owed (card edits, the requester's news) beside
    the handler, which returns at once, and once the burst of taps it came in is answered
    (FairProcessor.between_taps): the next tap is answered without waiting for forty edits
    at Telegram's pace, or for the CPU they take. The notice runner's next pass delivers
    anything this misses."""

    if not context.application.running:  # shutting down: the next process's pass has them
        return

    async def deliver() -> None:
        try:
            processor = context.application.update_processor
            if isinstance(processor, FairProcessor):  # after the burst of taps this is in
                await processor.between_taps(DELIVERY_PATIENCE)
            # Not urgent, though started by a tap: the next taps' writes go first.
            with urgent_writes(False):
                await NoticeRunner(deps.store, context.bot, deps.settings).run_once(job_id)
        except Exception:  # the decision stands; the background pass retries the notices
            log.exception("notices of job %s left to the background pass", job_id)

    context.application.create_task(deliver(), name=f"deliver-{job_id}")  # awaited on stop

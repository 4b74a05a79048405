"""Taps on approval cards: the signed data is checked first, the engine decides, the tap is
answered at once with the truth, and only then are the cards edited (slow work, after the
answer, because Telegram refuses answers after about 15 seconds). The edits are notices the
decision made owed in its own transaction; the handler delivers them at once. The Approve taps
of a burst are decided in one transaction (decide_taps, through bot.telegram.gathering), each
in a part of its own: what they all read is read once.
"""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from datetime import datetime, tzinfo
from enum import Enum
from functools import partial

from telegram import CallbackQuery, ForceReply, Message, Update, User
from telegram.ext import ContextTypes, filters

from bot import logs
from bot.clock import utcnow
from bot.documents.copies import PREVIEW_LINES, approver_copy
from bot.outbox.emails import render_csv
from bot.telegram.context import Deps, answer_tap, deps_of, held_roles, record_claim, turn_away
from bot.telegram.fairness import taps_paused
from bot.telegram.gathering import Gathering
from bot.telegram.notices import NoticeRunner
from bot.words.i18n import ENGLISH, N_, Language, Translator, language_of, translator
from bot.words.texts import NO_PDF_PREVIEW, TIME_OF_DAY, local_time
from core.approval import decisions
from core.approval.decisions import Review
from core.approval.policies import Outcome, Rules, Verdict
from core.approval.signing import Button, ButtonAction, verify_button
from core.drafting.drafts import draft_hash
from core.errors import (
    ApprovalError,
    ApprovalExpired,
    ConcurrencyError,
    DelegationEnded,
    DraftChanged,
    IllegalTransition,
    InsertConflict,
    InvalidToken,
    NotAnApprover,
    NotYourTurn,
    ReasonRequired,
    SelfApproval,
    StaleJob,
    UnknownJob,
)
from core.jobs.jobs import Job
from core.jobs.states import State
from core.ports import BatchTx, ShellReadTx, ShellStore, ShellTx, Store
from core.texts import flatten
from store.group_commit import urgent as urgent_writes

log = logging.getLogger(__name__)

# A forged or altered button is answered in English: it costs no database read, not even the
# tapper's language.
NOT_VALID = N_("This button is not valid.")
# A reason prompt names the decision, the PO and the version; the reply to it is matched by
# this text, which only the bot can have written (the reply quotes the bot's own message). A
# rejection always asks for one; an approval that takes a category over its month does too.
REASON_PROMPT = N_("Reason for rejecting")
OVER_BUDGET_PROMPT = N_("Reason for approving over budget")
_PROMPTS = {Verdict.REJECT: REASON_PROMPT, Verdict.APPROVE: OVER_BUDGET_PROMPT}
_ASKED = {
    Verdict.REJECT: (
        N_("Why reject it? Reply to my next message with the reason."),
        N_("The reason, for the requester"),
    ),
    Verdict.APPROVE: (
        N_("This approval goes over a monthly budget: reply to my next message with your reason."),
        N_("Why approve it over budget"),
    ),
}
# Each prompt in every language, to the verdict it asks about.
_PROMPTED_IN = {
    translator(language)(prompt): verdict
    for language in Language
    for verdict, prompt in _PROMPTS.items()
}
# In Urdu the PO and its version are one isolated left-to-right run (bot.words.i18n).
_PROMPTED = re.compile(
    rf"^({'|'.join(map(re.escape, _PROMPTED_IN))}) \u2068?(PO-[A-Za-z0-9-]+) v(\d+)\u2069?\?$"
)
_MAX_REASON = 500
# A reply of only spaces or invisible characters: no reason, so nothing is recorded. A soft
# budget's approval without one would defeat the rule, and a rejection must tell the requester why.
REASON_MISSING = N_("A reason is needed: reply to my question above, in words.")
# Seconds the deliveries a tap starts wait for a pause in the taps (FairProcessor.between_taps).
DELIVERY_PATIENCE = 5.0
DETAILS_SENDING = N_("Sending the whole PO: its PDF and a CSV file…")

# A Details tap while the same approver's export of that PO version is still going out.
DETAILS_IN_FLIGHT = N_("Already sending that file…")


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
    verdict = _PROMPTED_IN[asked.group(1)]
    deps, po, version = deps_of(context), asked.group(2), int(asked.group(3))
    # One line, without bidi or zero-width tricks: it goes on the requester's news and the trail.
    reason = flatten(message.text or "")[:_MAX_REASON]
    async with deps.store.reading() as tx:
        job = await tx.job_by_po(po)
        reviewed = await _hash_of(tx, job, version) if job else ""
        tr = translator(language_of((await tx.languages([user.id])).get(user.id)))
    if job is None or not reason:
        await message.reply_text(tr(NOT_VALID if job is None else REASON_MISSING))
        return
    review = Review(po, user.id, verdict, version, reviewed, reason)
    text, decided = await _decide(deps, job, review, tr=tr)
    await message.reply_text(text)
    if decided:
        deliver_now(context, deps, job.id)  # the requester's news is in the outbox


async def on_tap(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    """A card's button: Approve or Details (Reject asks for a reason first). Approve taps are
    decided together with the others of their burst (decide_taps); one whose job a concurrent
    writer changed meanwhile is decided again alone, below."""
    query, deps = update.callback_query, deps_of(context)
    assert query is not None
    button = await signed_button(query, deps)
    if button is None:
        return
    if claimed_with_decision(button) and await _approved_together(update, context, button):
        return
    tap = await checked_tap(update, context, button)
    if tap is None:
        return
    query, user, deps, button, job = tap.query, tap.user, tap.deps, tap.button, tap.job
    reviewed, tr = tap.signed_for, tap.tr
    verdict = Verdict.REJECT if button.action is ButtonAction.REJECT else Verdict.APPROVE
    review = Review(job.po_number, user.id, verdict, button.draft_version, reviewed)
    if button.action is ButtonAction.APPROVE:
        try:
            claiming = _Claiming(deps.store, update, user)
            text, decided = await _decide(deps, job, review, claiming, tr=tr)
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
    reading = button.action is ButtonAction.DETAILS
    refused = await refusal(deps, job, review, reading=reading, tr=tr)
    if refused is not None:  # checked again where a decision is recorded
        await answer_tap(query, refused)
    elif button.action is ButtonAction.DETAILS:
        await _details(context, tap)
    elif button.action is ButtonAction.REJECT:
        await _ask_reason(context, tap, Verdict.REJECT)
    else:
        await answer_tap(query, tr(NOT_VALID))


async def _ask_reason(context: ContextTypes.DEFAULT_TYPE, tap: Tap, verdict: Verdict) -> None:
    """Answer the tap, then ask for the decision's reason with a prompt the reply quotes."""
    answer, placeholder = (tap.tr(text) for text in _ASKED[verdict])
    await answer_tap(tap.query, answer)
    asked = tap.tr.ltr(f"{tap.job.po_number} v{tap.button.draft_version}")
    await context.bot.send_message(
        tap.user.id,
        f"{tap.tr(_PROMPTS[verdict])} {asked}?",
        reply_markup=ForceReply(input_field_placeholder=placeholder),
    )


@dataclass(frozen=True)
class _Asked:
    """An Approve tap whose button's signature checked out, to be decided with its burst."""

    update: Update
    user: User
    button: Button


class Then(Enum):
    """What on_tap does once decide_taps decided an Approve tap."""

    ANSWER = "answer"  # answer with the text
    TURN_AWAY = "turn away"  # a stranger: nothing was written
    REPEAT = "repeat"  # Telegram delivered it again: nothing to do
    ASK_REASON = "ask reason"  # over budget: nothing recorded until the reason comes
    ALONE = "alone"  # a concurrent writer won: decide it again on its own
    FAILED = "failed"  # an unexpected error, nothing kept: the tap's handler fails with it


@dataclass(frozen=True)
class Decided:
    """What decide_taps made of one Approve tap: what to do, the answer, whether the decision
    owes notices (delivered at once), and the tap as read (for ASK_REASON)."""

    then: Then
    text: str = ""
    notices_owed: bool = False
    tap: Tap | None = None
    error: Exception | None = None  # Then.FAILED: raised in the tap's own handler


async def _approved_together(
    update: Update, context: ContextTypes.DEFAULT_TYPE, button: Button
) -> bool:
    """Decide an Approve tap with the others of its burst (decide_taps) and answer it; False
    if it must be decided on its own (Then.ALONE)."""
    deps, user, query = deps_of(context), update.effective_user, update.callback_query
    assert user is not None and query is not None
    gathering = context.application.bot_data.get(_APPROVALS)
    if gathering is None:
        gathering = Gathering(partial(decide_taps, deps), limit=_BATCH)
        context.application.bot_data[_APPROVALS] = gathering
    try:
        decided: Decided = await gathering.ask(_Asked(update, user, button))
    except ConcurrencyError as lost:  # the whole batch: busy, or its COMMIT failed
        log.info("a burst's decisions left to each tap alone: %s", lost)
        return False
    if decided.tap is not None:
        logs.about(po_number=decided.tap.job.po_number, job_id=decided.tap.job.id)
    match decided.then:
        case Then.ALONE:
            return False
        case Then.FAILED:
            assert decided.error is not None
            raise decided.error  # the error handler apologises; its claim was not kept
        case Then.TURN_AWAY:
            await turn_away(deps, update, user)
        case Then.REPEAT:
            log.info("update %s delivered again; ignored", update.update_id)
        case Then.ASK_REASON:
            assert decided.tap is not None
            await _ask_reason(context, decided.tap, Verdict.APPROVE)
        case Then.ANSWER:
            await answer_tap(query, decided.text)
            if decided.notices_owed and decided.tap is not None:
                deliver_now(context, deps, decided.tap.job.id)
    return True


# Where the application keeps its Gathering of Approve taps (bot_data), and how many of a
# burst are decided in one transaction at most (FairProcessor lets 64 taps in at once).
_APPROVALS = "approvals"
_BATCH = 64


async def decide_taps(deps: Deps, asked: Sequence[_Asked]) -> list[Decided]:
    """Decide a burst of Approve taps in one transaction: what they read is read once
    (ShellStore.begin_batch), each is claimed and decided in a part of its own of which a
    refusal keeps nothing, and they commit together. The same checks, in the same order, as a
    tap decided alone (checked_tap, then core.approval.decisions.decide): a stranger is turned
    away with nothing written, a button for a job or draft that is not there is not valid.
    Returns what to do for each, in order."""
    now, rules = utcnow(), deps.settings.rules()
    async with deps.store.reading() as tx:  # a stranger costs a read, never a write
        roles = await tx.roles_of({a.user.id for a in asked})
    decided: dict[int, Decided] = {}
    refused: dict[int, tuple[Tap, Review, Exception]] = {}
    known = {n for n, a in enumerate(asked) if held_roles(deps, a.user.id, roles[a.user.id])}
    if known:
        async with deps.store.begin_batch() as batch:
            jobs = {asked[n].button.job_id for n in known}
            users = {asked[n].user.id for n in known}
            await batch.prefetch(jobs, users, {asked[n].update.update_id for n in known})
            languages = await batch.languages(users)
            for n in sorted(known):
                tr = translator(language_of(languages.get(asked[n].user.id)))
                tap = await _read_tap(batch, deps, asked[n], tr)
                if tap is None:
                    decided[n] = Decided(Then.ANSWER, tr(NOT_VALID))
                    continue
                try:
                    decided[n] = await _decide_in(batch, tap, asked[n].update, now, rules)
                except (ApprovalError, IllegalTransition) as no:
                    refused[n] = (tap, _review(tap), no)
    for n, (tap, review, why) in refused.items():
        text = await _refused(deps, tap.job, review, why, tap.tr)
        decided[n] = Decided(Then.ANSWER, text, tap=tap)
    return [decided.get(n, Decided(Then.TURN_AWAY)) for n in range(len(asked))]


async def _read_tap(tx: BatchTx, deps: Deps, asked: _Asked, tr: Translator) -> Tap | None:
    """The tap on the job its button names, as checked_tap reads it; None if the job, or the
    draft version the button was signed for, is not there."""
    query = asked.update.callback_query
    assert query is not None
    try:
        job = await tx.job(asked.button.job_id)
    except UnknownJob:
        return None
    signed_for = await _hash_of(tx, job, asked.button.draft_version)
    if not signed_for.startswith(asked.button.hash_prefix):
        return None
    return Tap(query, asked.user, deps, asked.button, job, signed_for, tr)


def _review(tap: Tap) -> Review:
    """The approval a tap on Approve asks for."""
    button = tap.button
    return Review(
        tap.job.po_number, tap.user.id, Verdict.APPROVE, button.draft_version, tap.signed_for
    )


async def _decide_in(tx: BatchTx, tap: Tap, update: Update, now: datetime, rules: Rules) -> Decided:
    """Claim the update and decide the tap in its own part of `tx`; a refusal is raised, and
    nothing of its part is kept, the claim included (BatchTx.each)."""
    try:
        async with tx.each():
            if not await record_claim(tx, update, tap.user, now):
                raise Redelivered(f"update {update.update_id}")
            result = await decisions.decide_in(tx, _review(tap), now, rules)
    except Redelivered:
        return Decided(Then.REPEAT, tap=tap)
    except ReasonRequired:
        return Decided(Then.ASK_REASON, tap=tap)
    except ApprovalExpired:
        return Decided(Then.ANSWER, tap.tr(EXPIRED), True, tap)
    except (StaleJob, InsertConflict):
        return Decided(Then.ALONE, tap=tap)
    except (ApprovalError, IllegalTransition, ConcurrencyError):
        raise
    except Exception as error:  # one tap's fault is its own; the others of the burst stand
        return Decided(Then.FAILED, tap=tap, error=error)
    if result is None:  # the approval window had closed: the expiry is news
        return Decided(Then.ANSWER, tap.tr(EXPIRED), True, tap)
    return Decided(Then.ANSWER, _recorded(result, tap.tr), True, tap)


def claimed_with_decision(button: Button) -> bool:
    """Whether a tap on this button is claimed (app.claim) in the transaction that records
    its decision rather than in one of its own: an Approve tap on a card."""
    return button.action is ButtonAction.APPROVE


class Redelivered(Exception):
    """The update was handled before: Telegram delivered it again."""


@dataclass(frozen=True)
class _Claiming:
    """The store, for a use case that writes in one transaction (core.approval.decisions.decide):
    that transaction also claims the update, so the tap costs one write, the claim and what it
    recorded commit together, and a refusal (rolled back) leaves no claim behind. A repeat raises
    Redelivered from inside it, so nothing of it is written."""

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
    tr: Translator  # the tapper's language


async def checked_tap(
    update: Update, context: ContextTypes.DEFAULT_TYPE, button: Button | None = None
) -> Tap | None:
    """The tap, its button's signed data checked before any database work (`button`: checked
    already); None, with the tap answered "not valid", for forged, altered or unknown data, or
    turned away for a stranger (for an Approve tap, app.claim leaves that check to this read)."""
    query, user, deps = update.callback_query, update.effective_user, deps_of(context)
    assert query is not None and user is not None
    button = button or await signed_button(query, deps)
    if button is None:
        return None
    async with deps.store.reading() as tx:
        roles = held_roles(deps, user.id, await tx.roles(user.id))
        try:
            job = await tx.job(button.job_id) if roles else None
        except UnknownJob:
            job = None
        signed_for = await _hash_of(tx, job, button.draft_version) if job else ""
        tr = translator(language_of((await tx.languages([user.id])).get(user.id)))
    if job is not None:
        logs.about(po_number=job.po_number, job_id=job.id)
    if not roles:
        await turn_away(deps, update, user)
        return None
    if job is None or not signed_for.startswith(button.hash_prefix):
        await answer_tap(query, tr(NOT_VALID))
        return None
    return Tap(query, user, deps, button, job, signed_for, tr)


async def signed_button(query: CallbackQuery, deps: Deps) -> Button | None:
    """The button in a tap's callback data, its signature checked before any database work;
    None, with the tap answered "not valid", for forged, altered or malformed data."""
    try:
        return verify_button(deps.settings.secrets, query.data)
    except InvalidToken:
        await answer_tap(query, NOT_VALID)
        return None


async def _hash_of(tx: ShellReadTx, job: Job, version: int) -> str:
    """The hash of the job's draft `version` (an old card names an old one), or ""."""
    if version == job.draft_version:
        return job.draft_hash or ""
    if 1 <= version < (job.draft_version or 0):
        return draft_hash(await tx.draft(job.id, version))
    return ""


async def _decide(
    deps: Deps, job: Job, review: Review, store: Store | None = None, *, tr: Translator
) -> tuple[str, bool]:
    """Record the decision (through `store`, deps.store by default); the answer for the
    decider, and whether anything was recorded (notices to deliver). ReasonRequired passes
    through: an approval over budget without a reason, which records nothing."""
    try:
        result = await decisions.decide(
            store or deps.store, review, utcnow(), deps.settings.rules()
        )
    except ApprovalExpired:
        return tr(EXPIRED), True  # the expiry it found is news
    except ReasonRequired:  # for the caller, which asks for the reason
        raise
    except (ApprovalError, IllegalTransition) as refused:
        return await _refused(deps, job, review, refused, tr), False
    return _recorded(result, tr), True


def _recorded(result: decisions.DecisionResult, tr: Translator) -> str:
    """The answer to a decision that was recorded."""
    if result.decision.verdict is Verdict.REJECT:
        po = result.job.po_number
        return tr("Rejected {po}. The requester is told your reason.", po=po)
    if result.outcome is Outcome.APPROVED:
        return tr("Approved — e-mailing the supplier.")
    return pending_answer(result, tr)


EXPIRED = N_("This request expired.")


def pending_answer(result: decisions.DecisionResult, tr: Translator) -> str:
    """The answer to an approval that does not yet complete the route."""
    route, counted, stage = result.route, result.tally, result.decision.stage
    if counted.stage > stage:  # this approval completed its stage: the next group's turn
        waiting = route.stages[counted.stage].group
        return tr(
            "Recorded. Stage {stage} of {stages} is complete; it now waits for {group}.",
            stage=stage + 1,
            stages=len(route.stages),
            group=waiting,
        )
    needed = route.stages[counted.stage].approvals
    left = needed - len(counted.counted[counted.stage])
    if (needed, left) == (2, 1):
        return tr("Needs a second approver. Your approval is recorded.")
    if left == 1:
        return tr("Needs one more approver. Your approval is recorded.")
    return tr("Needs {count} more approvers. Your approval is recorded.", count=left)


async def refusal(
    deps: Deps, job: Job, review: Review, *, reading: bool, tr: Translator = ENGLISH
) -> str | None:
    """Why this person may not use this card's button now, as the tap's answer; None if they
    may (core.approval.decisions.may_decide: the checks a decision makes, without recording one)."""
    try:
        rules = deps.settings.rules()
        await decisions.may_decide(deps.store, review, utcnow(), rules, reading=reading)
    except (ApprovalError, IllegalTransition) as refused:
        return await _refused(deps, job, review, refused, tr)
    return None


async def _refused(deps: Deps, job: Job, review: Review, refused: Exception, tr: Translator) -> str:
    """What a refused tap is called in its answer (refused_text, for this review)."""
    return await refused_text(
        deps.store, deps.settings.tz, job, refused, tr,
        reviewer_id=review.reviewer_id, verdict=review.verdict, version=review.draft_version,
    )  # fmt: skip


async def refused_text(
    store: Store,
    tz: tzinfo,
    job: Job,
    refused: Exception,
    tr: Translator,
    *,
    reviewer_id: int,
    verdict: Verdict | None = None,
    version: int | None = None,
) -> str:
    """What a refused decision is called, in the reviewer's language, from what the error
    carries (the stage and group whose turn it is, the approver back): a tap's answer, and the
    Mini App's. `verdict` None: no decision named yet; `version` None: the current draft's."""
    match refused:
        case NotAnApprover():
            return tr("You are not an approver.")
        case SelfApproval() if reviewer_id != job.requester_id:
            return tr("You cannot decide this request: you and its requester act for each other.")
        case SelfApproval() if verdict is Verdict.APPROVE:
            return tr("You cannot approve your own request.")
        case SelfApproval():
            return tr("You cannot decide your own request.")
        case DelegationEnded():
            async with store.reading() as tx:
                known = await tx.telegram_user(refused.delegator)
            name = flatten(known.first_name) if known else tr("user {id}", id=refused.delegator)
            return delegation_refusal(name, tr=tr)
        case DraftChanged():
            return tr("This card was superseded by v{version}.", version=job.draft_version)
        case NotYourTurn():
            return turn_refusal(refused, tr=tr)
        case ApprovalExpired():
            return tr(EXPIRED)
        case _:
            return await _already(store, tz, job.po_number, (reviewer_id, version), tr)


def turn_refusal(refused: NotYourTurn, *, tr: Translator = ENGLISH) -> str:
    """A tap's answer when the request waits for a stage of a group the tapper is not in."""
    stage, group = refused.stage, flatten(refused.group)
    return tr("Not your turn: stage {stage} waits for {group}.", stage=stage, group=group)


def delegation_refusal(name: str, *, tr: Translator = ENGLISH) -> str:
    """A tap's answer when the tapper held the card for `name`, who is back now."""
    return tr("Not counted: you no longer act for {name}; they are back.", name=name)


async def _already(
    store: Store, tz: tzinfo, po: str, whose: tuple[int, int | None], tr: Translator
) -> str:
    """An AlreadyDecided refusal: the reviewer's own decision on the draft `version` (None:
    the current one), or their delegate's for them, or where the PO stands."""
    user_id, version = whose
    async with store.reading() as tx:
        job = await tx.job_by_po(po)
        assert job is not None
        version = job.draft_version if version is None else version
        mine = [
            d
            for d in await tx.decisions(job.id)
            if user_id in (d.reviewer_id, d.on_behalf_of) and d.draft_version == version
        ]
        by = None if not mine else await tx.telegram_user(mine[-1].reviewer_id)
    if mine:
        approved = mine[-1].verdict is Verdict.APPROVE
        when = local_time(mine[-1].at, tz, TIME_OF_DAY)
        if mine[-1].reviewer_id != user_id:  # their delegate's, for them
            name = flatten(by.first_name) if by else f"user {mine[-1].reviewer_id}"
            if approved:
                return tr("Already approved for you by {name} at {at}.", name=name, at=when)
            return tr("Already rejected for you by {name} at {at}.", name=name, at=when)
        if approved:
            return tr("Already approved by you at {at}.", at=when)
        return tr("Already rejected by you at {at}.", at=when)
    if job.state is State.AWAITING_APPROVAL:  # one person with someone who counted
        return tr(
            "Already counted: you and the approver you act with while one is away count as one "
            "person on this request."
        )
    return tr(
        "Already decided: {po} is {state}.",
        po=job.po_number,
        state=job.state.value.lower().replace("_", " "),
    )


@dataclass(frozen=True)
class DetailsFile:
    """A Details CSV Telegram holds already: sent again by its file_id, not rendered again."""

    file_id: str
    lines: int


async def _details(context: ContextTypes.DEFAULT_TYPE, tap: Tap) -> None:
    """The whole PO as the supplier will get it, a PDF (marked DRAFT until approved), and its
    lines as a CSV file; one export per approver, PO and version at a time, and the CSV
    Telegram already holds is sent again by its id."""
    guards, user_id, version = tap.deps.guards, tap.user.id, tap.button.draft_version
    with guards.details.hold((user_id, tap.job.id, version)) as mine:
        if not mine:
            await answer_tap(tap.query, tap.tr(DETAILS_IN_FLIGHT))
            return
        await answer_tap(tap.query, tap.tr(DETAILS_SENDING))
        deps = tap.deps
        async with deps.store.reading() as tx:
            draft = await tx.draft(tap.job.id, version)
        po = f"{tap.job.po_number} v{version}"
        if len(draft.lines) <= PREVIEW_LINES:
            pdf = await approver_copy(deps.store, tap.job, version, deps.settings.tz, utcnow())
            name = f"{tap.job.po_number}-v{version}.pdf"
            await context.bot.send_document(user_id, pdf, filename=name)
        else:
            said = tap.tr(NO_PDF_PREVIEW, count=f"{len(draft.lines):,}")
            await context.bot.send_message(user_id, f"{po}: {said}")
        known = guards.details_files.get((tap.job.id, version))
        if isinstance(known, DetailsFile):
            caption = _details_caption(tap, known.lines)
            await context.bot.send_document(user_id, known.file_id, caption=caption)
            return
        caption = _details_caption(tap, len(draft.lines))
        sent = await context.bot.send_document(
            user_id,
            (await deps.offload(partial(render_csv, draft))).encode(),  # off the loop
            filename=f"{tap.job.po_number}-v{version}.csv",
            caption=caption,
        )
        if sent.document is not None:
            guards.details_files.put(
                (tap.job.id, version), DetailsFile(sent.document.file_id, len(draft.lines))
            )


def _details_caption(tap: Tap, lines: int) -> str:
    """ "PO-2026-0001 v1: 120 lines", in the tapper's language."""
    po = f"{tap.job.po_number} v{tap.button.draft_version}"
    return tap.tr.plural("{po}: {count} line", "{po}: {count} lines", lines, po=po)


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
            # After the burst of taps this is in.
            await taps_paused(context.application, DELIVERY_PATIENCE)
            # Not urgent, though started by a tap: the next taps' writes go first.
            with urgent_writes(False):
                await NoticeRunner(deps.store, context.bot, deps.settings).run_once(job_id)
        except Exception:  # the decision stands; the background pass retries the notices
            log.exception("notices of job %s left to the background pass", job_id)

    context.application.create_task(deliver(), name=f"deliver-{job_id}")  # awaited on stop

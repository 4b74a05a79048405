"""Taps on approval cards: the signed data is checked first, the engine decides, the tap is
answered at once with the truth, and only then are the cards edited (slow work, after the
answer, because Telegram refuses answers after about 15 seconds).
"""

from __future__ import annotations

import html
import logging
import re
from datetime import datetime

from telegram import ForceReply, InlineKeyboardMarkup, Update
from telegram.constants import ParseMode
from telegram.error import BadRequest, TelegramError
from telegram.ext import ContextTypes

from bot.cards import CardFacts, card_html, outcome_html
from bot.context import Deps, deps_of
from bot.emails import render_csv
from bot.messages import local_time
from bot.notifier import card_facts, card_markup
from bot.runner import utcnow
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
from core.notices import Notice, NoticeStatus
from core.people import TelegramUser
from core.policies import Decision, Outcome, Verdict
from core.signing import ButtonAction, InvalidToken, verify_button
from core.states import State

log = logging.getLogger(__name__)

NOT_VALID = "This button is not valid."
# The reason prompt names the PO and version; the reply to it is matched by this text, which
# only the bot can have written (the reply quotes the bot's own message).
REASON_PROMPT = "Reason for rejecting"
_PROMPTED = re.compile(rf"^{REASON_PROMPT} (PO-[A-Za-z0-9-]+) v(\d+)\?$")
_MAX_REASON = 500


async def on_reason(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    """A reply to the reason prompt: the rejection, with its reason, for the requester."""
    message, user = update.effective_message, update.effective_user
    assert message is not None and user is not None
    prompt = message.reply_to_message
    asked = _PROMPTED.match(prompt.text or "") if prompt is not None else None
    if (
        prompt is None
        or prompt.from_user is None
        or prompt.from_user.id != context.bot.id
        or not asked
    ):
        return  # a reply to something else: nothing to decide
    deps, po, version = deps_of(context), asked.group(1), int(asked.group(2))
    reason = " ".join((message.text or "").split())[:_MAX_REASON] or "no reason given"
    text, decided = await _reject(deps, user.id, po, version, reason)
    await message.reply_text(text)
    if decided:
        async with deps.store.begin() as tx:
            job = await tx.job_by_po(po)
        assert job is not None
        await refresh_cards(context, deps, job.id)  # the requester's news is in the outbox


async def _reject(deps: Deps, user_id: int, po: str, version: int, reason: str) -> tuple[str, bool]:
    async with deps.store.begin() as tx:
        job = await tx.job_by_po(po)
        if job is None:
            return NOT_VALID, False
        reviewed = (
            draft_hash(await tx.draft(job.id, version))
            if version <= (job.draft_version or 0)
            else ""
        )
    try:
        await service.decide(deps.store, po, user_id, Verdict.REJECT, version, reviewed,
                             utcnow(), deps.settings.rules(), reason)  # fmt: skip
    except NotAnApprover:
        return "You are not an approver.", False
    except SelfApproval:
        return "You cannot decide your own request.", False
    except DraftChanged:
        return f"This card was superseded by v{job.draft_version}.", False
    except ApprovalExpired:
        return "This request expired.", True
    except AlreadyDecided:
        return await _already(deps, user_id, po, version), False
    return f"Rejected {po}. The requester is told your reason.", True


async def on_tap(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    """A card's button: Approve or Details (Reject asks for a reason first)."""
    query, user = update.callback_query, update.effective_user
    assert query is not None and user is not None
    deps = deps_of(context)
    try:
        button = verify_button(deps.settings.secret, query.data)  # before any database work
    except InvalidToken:
        await _answer(query, NOT_VALID)
        return
    async with deps.store.begin() as tx:
        try:
            job = await tx.job(button.job_id)
        except UnknownJob:
            job = None
    if job is None or not (job.draft_hash or "").startswith(button.hash_prefix):
        await _answer(query, NOT_VALID)
        return
    if button.action is ButtonAction.DETAILS:
        await _answer(query, "Sending the whole PO as a CSV file…")
        await _details(context, deps, user.id, job.id, button.draft_version)
        return
    if button.action is ButtonAction.REJECT:
        await _answer(query, "Why reject it? Reply to my next message with the reason.")
        await context.bot.send_message(
            user.id, f"{REASON_PROMPT} {job.po_number} v{button.draft_version}?",
            reply_markup=ForceReply(input_field_placeholder="The reason, for the requester"),
        )  # fmt: skip
        return
    if button.action is not ButtonAction.APPROVE:
        await _answer(query, NOT_VALID)
        return
    text, decided = await _approve(deps, user.id, job, button.draft_version)
    await _answer(query, text)
    if decided:
        await refresh_cards(context, deps, job.id)


async def _approve(deps: Deps, user_id: int, job: Job, version: int) -> tuple[str, bool]:
    """The answer for the tapper, and whether a decision was recorded (cards to refresh)."""
    po = job.po_number
    try:  # a button naming another version than the job's current one gets DraftChanged
        result = await service.decide(
            deps.store,
            po,
            user_id,
            Verdict.APPROVE,
            version,
            job.draft_hash or "",
            utcnow(),
            deps.settings.rules(),
        )
    except NotAnApprover:
        return "You are not an approver.", False
    except SelfApproval:
        return "You cannot approve your own request.", False
    except DraftChanged:
        return f"This card was superseded by v{job.draft_version}.", False
    except ApprovalExpired:
        return "This request expired.", True
    except AlreadyDecided:
        return await _already(deps, user_id, po, version), False
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


async def _answer(query: object, text: str) -> None:
    """Answer a tap; a query that is too old already timed out on the phone: nothing to do."""
    try:
        await query.answer(text)  # type: ignore[attr-defined]
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


async def refresh_cards(context: ContextTypes.DEFAULT_TYPE, deps: Deps, job_id: str) -> None:
    """Edit every delivered card of the job to what is true now; best effort, after answering."""
    async with deps.store.begin() as tx:
        job = await tx.job(job_id)
        cards = [
            n
            for n in await tx.notices_for(job_id)
            if n.kind == "card" and n.status is NoticeStatus.SENT and n.message_id
        ]
        decisions = await tx.decisions(job_id)
        one_per_version = {n.draft_version: n for n in cards}  # facts depend on the version only
        facts = {v: await card_facts(tx, n, deps.settings) for v, n in one_per_version.items()}
        drafts = {n.draft_version: await tx.draft(job_id, n.draft_version) for n in cards}
        names = {d.reviewer_id: await tx.telegram_user(d.reviewer_id) for d in decisions}
    for notice in cards:
        waiting = facts[notice.draft_version]
        mine = [d for d in decisions if d.reviewer_id == notice.user_id
                and d.draft_version == notice.draft_version]  # fmt: skip
        if waiting is not None and not mine:  # this approver may still tap: keep the buttons
            markup = card_markup(deps.settings.secret, waiting)
            await _edit(context, notice, card_html(waiting, deps.settings.tz), markup)
            continue
        summary = waiting or CardFacts(job, drafts[notice.draft_version], "", "", None, 0, 1)
        headline = _headline(deps, job, decisions, names, mine)
        await _edit(context, notice, outcome_html(summary, headline), None)


def _headline(
    deps: Deps,
    job: Job,
    decisions: list[Decision],
    names: dict[int, TelegramUser | None],
    mine: list[Decision],
) -> str:
    """What happened, for the top of a card that can no longer be tapped (escaped HTML)."""
    tz = deps.settings.tz
    approvals = [d for d in decisions if d.verdict is Verdict.APPROVE]
    if job.state in (State.APPROVED, State.SENDING, State.SENT) and approvals:
        by = ", ".join(_name(names, d.reviewer_id) for d in approvals[-2:])
        return f"✅ <b>Approved</b> by {html.escape(by)} at {local_time(approvals[-1].at, tz)}"
    rejections = [d for d in decisions if d.verdict is Verdict.REJECT]
    if job.state is State.REJECTED and rejections:
        who = html.escape(_name(names, rejections[-1].reviewer_id))
        return f"❌ <b>Rejected</b> by {who} at {local_time(rejections[-1].at, tz)}"
    if job.state is State.AWAITING_APPROVAL and mine:
        return f"🕓 You approved at {local_time(mine[-1].at, tz)}; waiting for a second approver"
    if job.state is State.AWAITING_APPROVAL:
        return f"🔁 <b>Superseded</b> by v{job.draft_version}: a new card follows"
    return f"ℹ️ <b>{html.escape(job.state.value.replace('_', ' ').capitalize())}</b>"


def _name(names: dict[int, TelegramUser | None], user_id: int) -> str:
    known = names.get(user_id)
    return known.first_name if known else f"user {user_id}"


async def _edit(
    context: ContextTypes.DEFAULT_TYPE,
    notice: Notice,
    text: str,
    markup: InlineKeyboardMarkup | None,
) -> None:
    try:
        await context.bot.edit_message_text(
            text, chat_id=notice.user_id, message_id=notice.message_id,
            parse_mode=ParseMode.HTML, reply_markup=markup,
        )  # fmt: skip
    except BadRequest as error:
        if "not modified" not in str(error).lower():
            log.warning("card %s not edited: %s", notice.key, error)
    except TelegramError as error:
        log.warning("card %s not edited: %s", notice.key, error)

"""Delivers owed Telegram messages (core.notices) under a lease, within Telegram's limits.

The application's AIORateLimiter keeps to about 30 messages a second overall and one a second
per chat in groups (a burst to one private chat that Telegram answers with 429 is retried after
its retry_after), and waits out a 429 itself; what still fails comes here and is classified: a
flood wait or a network error is retried with the outbox's backoff, a refusal (the approver
never started the bot, or blocked it) is final; an approver's card that is refused, or whose
retries run out, is reported to the admins.

Card edits are notices too ("cards"): each renders what is true when it is delivered, so a
late or repeated one is harmless, and a crash between a decision and the edit only delays it.
A tap's handler delivers its job's notices itself, right after answering, so the phone sees the
edit at once; the background pass picks up whatever that misses.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import socket
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from telegram import Bot, InlineKeyboardButton, InlineKeyboardMarkup
from telegram.constants import ParseMode
from telegram.error import BadRequest, Forbidden, NetworkError, RetryAfter, TelegramError

from bot.clock import utcnow
from bot.config import Settings
from bot.telegram import texts
from bot.telegram.cards import CardFacts, card_buttons, card_html, headline_html, outcome_html
from core.errors import LeaseLost
from core.jobs import Job
from core.notices import (
    EVERYONE,
    UNDELIVERED,
    UNREACHABLE,
    Notice,
    NoticeStatus,
    fanned_out,
    queue_alert,
    queue_refresh,
)
from core.policies import Role, Verdict
from core.retries import ErrorClass, decide
from core.states import NEEDS_REVIEW, State
from core.workflow import standing_decisions
from store.sql import SqlStore, SqlTx

log = logging.getLogger(__name__)

# Notices one pass leases: a card each, at Telegram's pace of about 30 a second.
BATCH = 30
# Long enough for the rate limiter to wait out a flood of cards; a dead process's lease ends.
LEASE = timedelta(minutes=2)


class NoticeRunner:
    """Claims due notices and sends them through the bot."""

    def __init__(
        self,
        store: SqlStore,
        bot: Bot,
        settings: Settings,
        *,
        owner: str | None = None,
        clock: Callable[[], datetime] = utcnow,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self.store, self.bot, self.settings = store, bot, settings
        self.owner = owner or f"{socket.gethostname()}:{os.getpid()}:notices"
        self.clock, self.rand = clock, rand

    async def run_once(self, job_id: str | None = None) -> int:
        """One pass: lease due notices (of one job, if given) and deliver each; the number
        claimed."""
        now = self.clock()
        async with self.store.begin() as tx:
            claimed = await tx.claim_notices(now, self.owner, now + LEASE, BATCH, job_id)
        for notice in claimed:
            try:
                await self._deliver(await self._keep_lease(notice))
            except LeaseLost:
                log.info("notice %s moved on under this sender", notice.key)
            except Exception as error:  # a bug or the database: back off; the batch goes on
                log.exception("notice %s could not be delivered", notice.key)
                with contextlib.suppress(LeaseLost):
                    await self._failed(notice, error)
        return len(claimed)

    async def _keep_lease(self, notice: Notice) -> Notice:
        """Renew a lease half gone (a batch can wait out several floods), so that no other
        process sends the same card meanwhile; raise LeaseLost if another has it already."""
        now = self.clock()
        if notice.lease_until is None or notice.lease_until - now > LEASE / 2:
            return notice
        async with self.store.begin() as tx:
            return await tx.update_notice(notice, lease_until=now + LEASE, updated_at=now)

    async def _deliver(self, notice: Notice) -> None:
        match notice.kind:
            case "card":
                await self._card(notice)
            case "status":
                await self._tell(notice)
            case "cards":
                await self._refresh(notice)
            case "alert" if notice.user_id == EVERYONE:
                await self._fan_out(notice)
            case "alert":
                await self._alert(notice)
            case _:
                raise ValueError(f"notice {notice.key} of unknown kind {notice.kind!r}")

    async def _card(self, notice: Notice) -> None:
        async with self.store.begin() as tx:
            job = await tx.job(notice.job_id)
            facts = await card_facts(tx, job, notice.draft_version, self.settings)
            if facts is None:  # decided, expired or re-drafted before the card went out
                await self._settle(tx, notice, NoticeStatus.CANCELLED)
                return
        markup = card_markup(self.settings.secret, facts)
        try:
            sent = await self.bot.send_message(
                notice.user_id, card_html(facts, self.settings.tz),
                parse_mode=ParseMode.HTML, reply_markup=markup,
            )  # fmt: skip
        except TelegramError as error:
            await self._failed(notice, error)
            return
        async with self.store.begin() as tx:
            await self._settle(tx, notice, NoticeStatus.SENT, message_id=sent.message_id,
                               attempts=notice.attempts + 1)  # fmt: skip
            job = await tx.job(notice.job_id)
            if job.version != facts.job.version:  # decided while the card was on its way, and
                # that decision's edits may have missed this card: owe it one more
                await queue_refresh(tx, job, self.clock(), late_card=notice.user_id)

    async def _moot(self, tx: SqlTx, notice: Notice, job: Job) -> bool:
        """Whether news that a PO needs a person is moot, since it left that state (a person
        acted already, say, or cancelled it in the same transaction); if so it is dropped."""
        if notice.event not in NEEDS_REVIEW or job.state.value == notice.event:
            return False
        await self._settle(tx, notice, NoticeStatus.CANCELLED)
        return True

    async def _tell(self, notice: Notice) -> None:
        """A requester's news: plain text, nothing to click."""
        async with self.store.begin() as tx:
            job = await tx.job(notice.job_id)
            if await self._moot(tx, notice, job):
                return
            reason = None
            if notice.event == State.REJECTED.value:
                rejections = [d for d in await tx.decisions(job.id) if d.verdict is Verdict.REJECT]
                reason = rejections[-1].reason if rejections else None
        await self._send_text(
            notice, texts.requester_notice(job.po_number, State(notice.event), reason)
        )

    async def _send_text(self, notice: Notice, text: str) -> None:
        """Plain text, nothing to click; the outcome recorded on the notice."""
        try:
            sent = await self.bot.send_message(notice.user_id, text)
        except TelegramError as error:
            await self._failed(notice, error)
            return
        await self._sent(notice, sent.message_id)

    async def _refresh(self, notice: Notice) -> None:
        """Edit every delivered card of the job to what is true now."""
        async with self.store.begin() as tx:
            edits = await card_edits(tx, notice.job_id, self.settings)
        for card, text, markup in edits:
            try:
                await self.bot.edit_message_text(
                    text, chat_id=card.user_id, message_id=card.message_id,
                    parse_mode=ParseMode.HTML, reply_markup=markup,
                )  # fmt: skip
            except BadRequest as error:  # before NetworkError: PTB derives one from the other
                if "not modified" not in str(error).lower():  # else the edit is there already
                    log.warning("card %s not edited: %s", card.key, error)
            except (RetryAfter, NetworkError) as error:
                await self._failed(notice, error)  # all again later: edits are idempotent
                return
            except TelegramError as error:  # Forbidden: the approver blocked the bot
                log.warning("card %s not edited: %s", card.key, error)
        await self._sent(notice, None)

    async def _fan_out(self, alert: Notice) -> None:
        """An alert for the admins becomes one notice per admin, then is done."""
        now = self.clock()
        async with self.store.begin() as tx:
            if await self._moot(tx, alert, await tx.job(alert.job_id)):
                return
            admins = set(self.settings.manzoori_admin_ids) | set(await tx.holders(Role.ADMIN))
            for admin in sorted(admins):
                await tx.insert_notice(fanned_out(alert, admin, now))
            await self._settle(tx, alert, NoticeStatus.SENT)
        if not admins:
            log.warning("alert %s has no admin to go to", alert.key)

    async def _alert(self, notice: Notice) -> None:
        async with self.store.begin() as tx:
            job = await tx.job(notice.job_id)
            if await self._moot(tx, notice, job):
                return
            event, _, whom = notice.event.partition(":")
            approver = None
            if whom:  # an approver's card did not go out
                known = await tx.telegram_user(int(whom))
                approver = f"{known.first_name if known else 'An approver'} (Telegram id {whom})"
        await self._send_text(notice, texts.admin_alert(job.po_number, event, approver))

    async def _settle(self, tx: SqlTx, notice: Notice, status: NoticeStatus, **more: Any) -> None:
        """Record where the notice ended up and give up its lease."""
        await tx.update_notice(notice, status=status, lease_owner=None, lease_until=None,
                               updated_at=self.clock(), **more)  # fmt: skip

    async def _sent(self, notice: Notice, message_id: int | None) -> None:
        async with self.store.begin() as tx:
            await self._settle(tx, notice, NoticeStatus.SENT, message_id=message_id,
                               attempts=notice.attempts + 1)  # fmt: skip

    async def _failed(self, notice: Notice, error: Exception) -> None:
        """Record a failed delivery: wait out a flood, give up on a refusal, back off on a
        network error or anything unforeseen (until the retry caps). An approver's card given
        up on is reported to the admins."""
        now, attempts = self.clock(), notice.attempts + 1
        refused = isinstance(error, Forbidden | BadRequest) or (
            isinstance(error, TelegramError) and not isinstance(error, NetworkError | RetryAfter)
        )
        if isinstance(error, RetryAfter):
            wait = error.retry_after
            seconds = wait.total_seconds() if isinstance(wait, timedelta) else float(wait)
            status, retry_at = NoticeStatus.PENDING, now + timedelta(seconds=seconds)
        elif refused:
            status, retry_at = NoticeStatus.FAILED, now
        else:
            verdict = decide(self.settings.retry_policy(), ErrorClass.TRANSIENT, attempts,
                             notice.created_at, now, self.rand())  # fmt: skip
            status = NoticeStatus.FAILED if verdict.retry_at is None else NoticeStatus.PENDING
            retry_at = verdict.retry_at or now
        async with self.store.begin() as tx:
            await self._settle(tx, notice, status, attempts=attempts, next_attempt_at=retry_at,
                               last_error=str(error)[:300])  # fmt: skip
            if status is not NoticeStatus.FAILED:
                return
            if isinstance(error, Forbidden) and "blocked" in str(error).lower():
                await tx.mark_blocked(notice.user_id, now)
            log.warning("notice %s to user %s given up after %d attempts: %s", notice.key,
                        notice.user_id, attempts, error)  # fmt: skip
            if notice.kind == "card":  # an approver the admins must chase
                why = UNREACHABLE if refused else UNDELIVERED
                await queue_alert(tx, await tx.job(notice.job_id), now, f"{why}:{notice.user_id}")


def card_markup(secret: bytes, facts: CardFacts) -> InlineKeyboardMarkup:
    """The card's signed Approve / Reject / Details buttons, as Telegram takes them."""
    rows = card_buttons(secret, facts.job)
    return InlineKeyboardMarkup(
        [[InlineKeyboardButton(text, callback_data=data) for text, data in row] for row in rows]
    )


async def card_facts(tx: SqlTx, job: Job, version: int, settings: Settings) -> CardFacts | None:
    """What a card of draft `version` shows, or None if that draft no longer waits."""
    if job.state is not State.AWAITING_APPROVAL or job.draft_version != version:
        return None
    assert job.draft_version is not None and job.total_paisa is not None
    draft = await tx.draft(job.id, job.draft_version)
    requester = await tx.telegram_user(job.requester_id)
    terms = await tx.terms_record(draft.terms_version)
    approvals = sum(
        1
        for d in await standing_decisions(tx, job.id)
        if d.verdict is Verdict.APPROVE and (d.draft_version, d.draft_hash) == (
            job.draft_version, job.draft_hash)
    )  # fmt: skip
    return CardFacts(
        job=job,
        draft=draft,
        requester=requester.first_name if requester else f"user {job.requester_id}",
        sheet_name=str(job.source_versions.get("sheet_name", job.input_ref)),
        terms_imported_at=terms["imported_at"] if terms else None,
        approvals=approvals,
        required=settings.approval_policy().required(job.total_paisa),
    )


async def card_edits(
    tx: SqlTx, job_id: str, settings: Settings
) -> list[tuple[Notice, str, InlineKeyboardMarkup | None]]:
    """Each delivered card of the job with the text and buttons it should show now: the full
    card while its approver may still tap it, else what happened, buttons gone."""
    job = await tx.job(job_id)
    cards = [
        n
        for n in await tx.notices_for(job_id)
        if n.kind == "card" and n.status is NoticeStatus.SENT and n.message_id
    ]
    decisions = await tx.decisions(job_id)
    names = {}
    for reviewer in {d.reviewer_id for d in decisions}:
        known = await tx.telegram_user(reviewer)
        names[reviewer] = known.first_name if known else f"user {reviewer}"
    facts: dict[int, CardFacts | None] = {}
    summaries: dict[int, CardFacts] = {}
    edits: list[tuple[Notice, str, InlineKeyboardMarkup | None]] = []
    for card in cards:
        version = card.draft_version
        if version not in facts:  # what a card shows depends on its draft version only
            facts[version] = await card_facts(tx, job, version, settings)
            summaries[version] = facts[version] or CardFacts(
                job, await tx.draft(job.id, version), "", "", None, 0, 1
            )
        mine = [d for d in decisions if (d.reviewer_id, d.draft_version) == (card.user_id, version)]
        waiting = facts[version]
        if waiting is not None and not mine:  # this approver may still tap: keep the buttons
            edits.append((card, card_html(waiting, settings.tz), card_markup(settings.secret,
                                                                             waiting)))  # fmt: skip
            continue
        tally = (waiting.approvals, waiting.required) if waiting else (0, 1)
        headline = headline_html(job, version, decisions, names, mine, settings.tz, tally)
        edits.append((card, outcome_html(summaries[version], version, headline), None))
    return edits

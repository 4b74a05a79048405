"""Delivers owed Telegram messages (core.notices) under a lease, within Telegram's limits.

The application's AIORateLimiter keeps to about 30 messages a second overall and one a second
per chat, and waits out a 429 itself; what still fails comes here and is classified: a flood
wait or a network error is retried with the outbox's backoff, a refusal (the approver never
started the bot, or blocked it) is final and logged for the admins.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import socket
from collections.abc import Callable
from datetime import datetime, timedelta

from telegram import Bot, InlineKeyboardButton, InlineKeyboardMarkup
from telegram.constants import ParseMode
from telegram.error import BadRequest, Forbidden, NetworkError, RetryAfter, TelegramError

from bot import messages
from bot.cards import CardFacts, card_buttons, card_html
from bot.config import Settings
from bot.runner import utcnow
from core.errors import LeaseLost
from core.notices import Notice, NoticeStatus
from core.policies import Verdict
from core.retries import ErrorClass, decide
from core.states import State
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

    async def run_once(self) -> int:
        """One pass: lease due notices and deliver each; the number claimed."""
        now = self.clock()
        async with self.store.begin() as tx:
            claimed = await tx.claim_notices(now, self.owner, now + LEASE, BATCH)
        for notice in claimed:
            try:
                await self._deliver(notice)
            except LeaseLost:
                log.info("notice %s moved on under this sender", notice.key)
        return len(claimed)

    async def run_forever(self, poll: float, stop: asyncio.Event) -> None:
        """Run passes until `stop` is set; a failing pass is logged and retried."""
        while not stop.is_set():
            try:
                claimed = await self.run_once()
            except Exception:
                log.exception("notice pass failed; retrying after %.1fs", poll)
                claimed = 0
            if claimed == 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), timeout=poll)

    async def _deliver(self, notice: Notice) -> None:
        if notice.kind == "status":
            await self._tell(notice)
            return
        async with self.store.begin() as tx:
            facts = await card_facts(tx, notice, self.settings)
            if facts is None:  # decided, expired or re-drafted before the card went out
                await tx.update_notice(notice, status=NoticeStatus.CANCELLED, lease_owner=None,
                                       lease_until=None, updated_at=self.clock())  # fmt: skip
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
        await self._sent(notice, sent.message_id)

    async def _tell(self, notice: Notice) -> None:
        """A requester's news: plain text, nothing to click."""
        async with self.store.begin() as tx:
            job = await tx.job(notice.job_id)
            reason = None
            if notice.event == State.REJECTED.value:
                rejections = [d for d in await tx.decisions(job.id) if d.verdict is Verdict.REJECT]
                reason = rejections[-1].reason if rejections else None
        text = messages.requester_notice(job.po_number, State(notice.event), reason)
        try:
            sent = await self.bot.send_message(notice.user_id, text)
        except TelegramError as error:
            await self._failed(notice, error)
            return
        await self._sent(notice, sent.message_id)

    async def _sent(self, notice: Notice, message_id: int) -> None:
        async with self.store.begin() as tx:
            await tx.update_notice(notice, status=NoticeStatus.SENT, message_id=message_id,
                                   attempts=notice.attempts + 1, lease_owner=None,
                                   lease_until=None, updated_at=self.clock())  # fmt: skip

    async def _failed(self, notice: Notice, error: TelegramError) -> None:
        now, attempts = self.clock(), notice.attempts + 1
        common = {"attempts": attempts, "last_error": str(error)[:300], "lease_owner": None,
                  "lease_until": None, "updated_at": now}  # fmt: skip
        async with self.store.begin() as tx:
            if isinstance(error, RetryAfter):
                wait = error.retry_after
                seconds = wait.total_seconds() if isinstance(wait, timedelta) else float(wait)
                retry_at = now + timedelta(seconds=seconds)
                await tx.update_notice(notice, status=NoticeStatus.PENDING,
                                       next_attempt_at=retry_at, **common)  # fmt: skip
                return
            if isinstance(error, Forbidden | BadRequest) or not isinstance(error, NetworkError):
                if isinstance(error, Forbidden) and "blocked" in str(error).lower():
                    await tx.mark_blocked(notice.user_id, now)
                log.warning("card %s to user %s refused for good: %s", notice.key,
                            notice.user_id, error)  # fmt: skip
                await tx.update_notice(notice, status=NoticeStatus.FAILED, **common)
                return
            verdict = decide(self.settings.retry_policy(), ErrorClass.TRANSIENT, attempts,
                             notice.created_at, now, self.rand())  # fmt: skip
            status = NoticeStatus.FAILED if verdict.retry_at is None else NoticeStatus.PENDING
            await tx.update_notice(notice, status=status,
                                   next_attempt_at=verdict.retry_at or now, **common)  # fmt: skip


def card_markup(secret: bytes, facts: CardFacts) -> InlineKeyboardMarkup:
    """The card's signed Approve / Reject / Details buttons, as Telegram takes them."""
    rows = card_buttons(secret, facts.job)
    return InlineKeyboardMarkup(
        [[InlineKeyboardButton(text, callback_data=data) for text, data in row] for row in rows]
    )


async def card_facts(tx: SqlTx, notice: Notice, settings: Settings) -> CardFacts | None:
    """What the card shows, or None if the draft it was owed for no longer waits."""
    job = await tx.job(notice.job_id)
    if job.state is not State.AWAITING_APPROVAL or job.draft_version != notice.draft_version:
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

"""Delivers owed Telegram messages (core.jobs.notices) under a lease, within Telegram's limits.

What each notice says, and what becomes of it, is core.messaging.delivery's; this runner renders it,
sends it through the bot, and hands any failure back classified (bot.telegram.errors).

The application's AIORateLimiter keeps to about 30 messages a second overall and one a second
per chat in groups (a burst to one private chat that Telegram answers with 429 is retried after
its retry_after), and waits out a 429 itself; what still fails comes back here. Card edits are
notices too: each renders what is true when it is delivered, so a late or repeated one is
harmless, and a crash between a decision and the edit only delays it. A tap's handler delivers
its job's notices itself, right after answering, so the phone sees the edit at once; the
background pass picks up whatever that misses.
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from datetime import timedelta, tzinfo

from telegram import Bot, InlineKeyboardButton, InlineKeyboardMarkup
from telegram.constants import ParseMode

from bot import logs
from bot.clock import Runtime
from bot.config import Settings
from bot.telegram.cards import card_html, card_markup, outcome_html, po_markup
from bot.telegram.errors import classify
from bot.telegram.ladder import nudge_html, nudge_markup
from bot.telegram.review_texts import left_html
from bot.telegram.texts import (
    WHATSAPP_TEXT,
    admin_alert,
    call_off_notice,
    chase_message,
    edit_notice,
    policy_alert,
    requester_notice,
    short_stage_alert,
    silent_notice,
    supplier_mail_notice,
    supplier_notice,
    turned_down_notice,
    whatsapp_url,
)
from bot.words.i18n import Translator, language_of, translator
from core.errors import LeaseLost
from core.jobs.notices import (
    CALL_OFF_DONE,
    CALLED_OFF,
    EDITED,
    EVERYONE,
    SILENT,
    SUPPLIER,
    SUPPLIER_MAIL,
    TURNED_DOWN,
    Notice,
    NoticeKind,
    NoticeStatus,
)
from core.messaging import cards, delivery, nudges
from core.messaging.delivery import Failure, News, Undelivered
from core.outbox import review
from core.ports import ShellStore

log = logging.getLogger(__name__)

# Notices one pass leases: a card each, at Telegram's pace of about 30 a second.
BATCH = 30
# Long enough for the rate limiter to wait out a flood of cards; a dead process's lease ends.
LEASE = timedelta(minutes=2)
# What a failed edit of one card leaves to the next pass (all the job's cards are edited again:
# edits are idempotent); any other failure is that card's alone.
_RETRY_EDITS = frozenset({Failure.FLOOD, Failure.TRANSIENT})


class NoticeRunner:
    """Claims due notices and sends them through the bot."""

    def __init__(
        self, store: ShellStore, bot: Bot, settings: Settings, *, runtime: Runtime | None = None
    ) -> None:
        self.store, self.bot, self.settings = store, bot, settings
        self.runtime = runtime or Runtime.of_process("notices")
        self._together: dict[str, list[Notice]] = {}  # this pass's nudges carried by another

    async def run_once(self, job_id: str | None = None) -> int:
        """One pass: lease due notices (of one job, if given) and deliver each; the number
        claimed."""
        now, owner = self.runtime.now(), self.runtime.owner
        claimed = await delivery.claim(self.store, now, owner, LEASE, BATCH, job_id)
        self._together, carried = nudges.together(claimed)  # one person's nudges: one message
        for notice in claimed:
            if notice.key in carried:
                continue
            logs.about(job_id=notice.job_id)
            try:
                await self._deliver(
                    await delivery.keep_lease(self.store, notice, self.runtime.now(), LEASE)
                )
            except LeaseLost:
                log.info("notice %s moved on under this sender", notice.key)
            except Exception as error:  # a bug or the database: back off; the batch goes on
                log.exception("notice %s could not be delivered", notice.key)
                try:
                    await self._failed(notice, classify(error))
                except LeaseLost:
                    log.info("notice %s moved on under this sender", notice.key)
        return len(claimed)

    async def _deliver(self, notice: Notice) -> None:
        match notice.kind:
            case NoticeKind.CARD:
                await self._card(notice)
            case NoticeKind.CARD_EDITS:
                await self._edit_cards(notice)
            case NoticeKind.QUEUE_EDITS:
                await self._edit_queue_items(notice)
            case NoticeKind.ALERT if notice.user_id == EVERYONE:
                admins, now = self.settings.manzoori_admin_ids, self.runtime.now()
                default = self.settings.approval_policy().default_policy
                if not await delivery.fan_out(self.store, notice, now, admins, default):
                    log.warning("alert %s has no admin to go to", notice.key)
            case NoticeKind.NUDGE if notice.user_id == EVERYONE:
                admins = self.settings.manzoori_admin_ids
                if not await nudges.fan_out_escalation(
                    self.store, notice, self.runtime.now(), admins
                ):
                    log.info("escalation %s is moot or has nobody to go to", notice.key)
            case NoticeKind.NUDGE:
                await self._nudge(notice)
            case NoticeKind.STATUS | NoticeKind.ALERT:
                default = self.settings.approval_policy().default_policy
                news = await delivery.news_to_send(self.store, notice, self.runtime.now(), default)
                if news is not None:
                    tr = (await self._speaking([notice.user_id]))[notice.user_id]
                    markup = self._whatsapp(news, tr) or self._po_buttons(news, tr)
                    text = _news_text(notice, news, tr, self.settings.tz)
                    await self._send_text(notice, text, markup)

    async def _card(self, notice: Notice) -> None:
        policy, now = self.settings.approval_policy(), self.runtime.now()
        facts = await cards.card_to_send(self.store, notice, now, policy)
        if facts is None:  # decided, expired or re-drafted before the card went out
            return
        tr = (await self._speaking([notice.user_id]))[notice.user_id]
        html = card_html(facts, self.settings.tz, notice.user_id, tr=tr)
        markup = card_markup(
            self.settings.secret, facts.job, tr=tr, public_url=self.settings.manzoori_public_url
        )
        message_id = await self._send_html(notice.user_id, html, markup, [notice])
        if message_id is not None:
            await cards.card_sent(self.store, notice, message_id, facts.job, self.runtime.now())

    async def _nudge(self, notice: Notice) -> None:
        """A person's due nudge, with the others of the same step in one message."""
        now = self.runtime.now()
        carried = [
            await delivery.keep_lease(self.store, other, now, LEASE)
            for other in self._together.get(notice.key, [])
        ]
        policy = self.settings.approval_policy()
        nudge = await nudges.nudge_to_send(self.store, [notice, *carried], now, policy, now + LEASE)
        if nudge is None:  # decided, expired, re-drafted, or no longer theirs
            return
        tr = (await self._speaking([notice.user_id]))[notice.user_id]
        html = nudge_html(nudge, self.settings.tz, notice.user_id, tr=tr)
        markup = nudge_markup(
            nudge, self.settings.secret, tr=tr, public_url=self.settings.manzoori_public_url
        )
        message_id = await self._send_html(notice.user_id, html, markup, nudge.settles)
        if message_id is not None:
            await nudges.nudge_sent(self.store, nudge, message_id, self.runtime.now())

    async def _send_html(
        self,
        user_id: int,
        html: str,
        markup: InlineKeyboardMarkup | None,
        settles: Collection[Notice],
    ) -> int | None:
        """Send an HTML message with its buttons; the id of the message sent, or None once
        the failure is recorded on each notice it `settles`."""
        try:
            sent = await self.bot.send_message(
                user_id, html, parse_mode=ParseMode.HTML, reply_markup=markup
            )
        except Exception as error:
            why = classify(error)
            for each in settles:
                await self._failed(each, why)
            return None
        return sent.message_id

    def _whatsapp(self, news: News, tr: Translator) -> InlineKeyboardMarkup | None:
        """A silent supplier's news: a button that opens WhatsApp to the supplier's phone with
        a message holding their link, when the terms give a phone."""
        if news.event != SILENT or not news.phone or news.draft is None or news.sent is None:
            return None
        links = self.settings.supplier_links()
        link = links.url(news.sent) if links is not None else ""
        url = whatsapp_url(news.phone, chase_message(news.draft, link))
        return InlineKeyboardMarkup([[InlineKeyboardButton(tr(WHATSAPP_TEXT), url=url)]])

    def _po_buttons(self, news: News, tr: Translator) -> InlineKeyboardMarkup | None:
        """An e-mail reply's news: the PO's Details (its PDF) and, with a public URL, Review
        (the Mini App, which shows the supplier's status), for its current version."""
        job = news.job
        if news.event != SUPPLIER_MAIL or job is None or job.draft_version is None:
            return None
        if job.draft_hash is None:
            return None
        return po_markup(
            self.settings.secret, job, tr=tr, public_url=self.settings.manzoori_public_url
        )

    async def _send_text(
        self, notice: Notice, text: str, markup: InlineKeyboardMarkup | None = None
    ) -> None:
        """Plain text, with a link button at most; the outcome recorded on the notice."""
        try:
            sent = await self.bot.send_message(notice.user_id, text, reply_markup=markup)
        except Exception as error:
            await self._failed(notice, classify(error))
            return
        await delivery.sent(self.store, notice, sent.message_id, self.runtime.now())

    async def _edit_cards(self, notice: Notice) -> None:
        """Edit every delivered card of the job to what is true now."""
        assert notice.job_id is not None  # CARD_EDITS are a job's
        edits = await cards.card_edits(
            self.store, notice.job_id, self.settings.approval_policy(), self.runtime.now()
        )
        speaking = await self._speaking({edit.card.user_id for edit in edits})
        for edit in edits:
            card, tz, tr = edit.card, self.settings.tz, speaking[edit.card.user_id]
            if edit.waiting is not None:  # its approver may still tap: the card, its buttons
                text = card_html(edit.waiting, tz, card.user_id, tr=tr)
                markup = card_markup(
                    self.settings.secret,
                    edit.waiting.job,
                    tr=tr,
                    public_url=self.settings.manzoori_public_url,
                )
            else:
                assert edit.outcome is not None
                text, markup = outcome_html(edit.outcome, tz, tr=tr), None
            assert card.message_id is not None  # a delivered card
            if not await self._edit(notice, card, card.message_id, text, markup):
                return
        await delivery.sent(self.store, notice, None, self.runtime.now())

    async def _edit_queue_items(self, notice: Notice) -> None:
        """Edit every review-queue message of the job to say how it left the queue."""
        assert notice.job_id is not None  # QUEUE_EDITS are a job's
        left = await review.queue_items_left(self.store, notice.job_id)
        speaking = await self._speaking({item.message.user_id for item in left if item.message})
        for item in left:
            assert item.message is not None and item.message.message_id is not None
            text = left_html(item, self.settings.tz, tr=speaking[item.message.user_id])
            if not await self._edit(notice, item.message, item.message.message_id, text, None):
                return
        await delivery.sent(self.store, notice, None, self.runtime.now())

    async def _edit(
        self,
        notice: Notice,
        shown: Notice,
        message_id: int,
        html: str,
        markup: InlineKeyboardMarkup | None,
    ) -> bool:
        """Edit the message `shown` (a card, a queue message) to `html`; False if Telegram
        asked to wait, with `notice` put off so that all its edits are made again later (edits
        are idempotent). Any other failure is that message's alone."""
        try:
            await self.bot.edit_message_text(
                html,
                chat_id=shown.user_id,
                message_id=message_id,
                parse_mode=ParseMode.HTML,
                reply_markup=markup,
            )
        except Exception as error:
            why = classify(error)
            if why.failure in _RETRY_EDITS:
                await self._failed(notice, why)
                return False
            if why.failure is not Failure.NOT_MODIFIED:  # else the edit is there already
                log.warning("message %s not edited: %s", shown.key, why.detail)
        return True

    async def _speaking(self, user_ids: Collection[int]) -> dict[int, Translator]:
        """Each recipient's translator, read when their message is rendered: a choice made
        since the notice was owed counts."""
        async with self.store.reading() as tx:
            chosen = await tx.languages(user_ids)
        return {user_id: translator(language_of(chosen.get(user_id))) for user_id in user_ids}

    async def _failed(self, notice: Notice, why: Undelivered) -> None:
        """Record a failed delivery as core.messaging.delivery decides (retry, give up, alert)."""
        now, policy, rand = self.runtime.now(), self.settings.retry_policy(), self.runtime.rand()
        status = await delivery.undelivered(self.store, notice, why, now, policy, rand)
        if status is NoticeStatus.FAILED:
            tries = notice.attempts + 1
            log.warning("notice %s given up after %d attempts: %s", notice.key, tries, why.detail)


def _news_text(notice: Notice, news: News, tr: Translator, tz: tzinfo) -> str:
    """A requester's or an admin's news, in words, in their language."""
    if news.job is None:  # about a policy, not a PO
        return policy_alert(news.policy_version, news.unstaffed, tr=tr)
    if notice.kind is NoticeKind.STATUS and news.event in (CALLED_OFF, CALL_OFF_DONE):
        by, po = news.called_off_by, news.job.po_number
        return call_off_notice(po, news.event, news.reason, by, tr=tr)
    if news.event == SILENT and news.draft is not None and news.sent is not None:
        return silent_notice(news.draft, news.sent.updated_at, news.phone, tz, tr=tr)
    if notice.kind is NoticeKind.STATUS and news.event == TURNED_DOWN:
        return turned_down_notice(news.job.po_number, news.reason or "", tr=tr)
    if notice.kind is NoticeKind.STATUS and news.event == SUPPLIER:
        assert news.answer is not None and news.draft is not None
        return supplier_notice(news.answer, news.draft, tr=tr)
    if notice.kind is NoticeKind.STATUS and news.event == SUPPLIER_MAIL:
        assert news.mail is not None and news.job is not None
        return supplier_mail_notice(news.mail, news.job.po_number, news.addressed, tz, tr=tr)
    if notice.kind is NoticeKind.STATUS and news.event == EDITED:
        po, changes = news.job.po_number, news.changes
        return edit_notice(po, news.editor, changes, news.total_paisa, tr=tr)
    if notice.kind is NoticeKind.STATUS:
        assert news.state is not None
        return requester_notice(news.job.po_number, news.state, news.reason, tr=tr)
    if news.short is not None:
        return short_stage_alert(news.job.po_number, news.short, news.stages, tr=tr)
    return admin_alert(news.job.po_number, news.event, news.approver, news.group, tr=tr)

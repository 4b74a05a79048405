"""The reminder ladder in Telegram: what a due nudge (core.nudges) looks like, and the button
of a list that brings a request's card back.

One request due makes a reminder or a last warning that repeats the card, with its buttons
signed afresh for the same draft version and hash, so the approver can decide on it. Several
due at once make one list, as the digest is: a line each, oldest first, and a button each
that sends that request's card again. An escalation is the admins' list of who has not
decided, and who cannot be reached. The button's tap is /pending's
(bot.telegram.pending.on_resend_tap).
"""

from __future__ import annotations

from datetime import tzinfo

from telegram import InlineKeyboardMarkup

from bot.telegram.cards import card_html, card_markup, escaped, resend_markup
from bot.texts import local_time
from core import nudges
from core.delivery import CardFacts
from core.ladder import Step
from core.money import format_pkr
from core.notices import DIGEST
from core.nudges import Nudge

# --- texts ---------------------------------------------------------------------------------
REMINDER = "⏰ <b>Reminder</b>: this request is still waiting for your decision.\n\n"
EXPIRING = "⌛ <b>Expires at {at}</b>: decide before then, or it lapses.\n\n"
REMINDERS = "⏰ <b>Still waiting for your decision</b> ({count}):"
ALL_EXPIRING = "⌛ <b>Expiring soon, still waiting for your decision</b> ({count}):"
DIGEST_HEAD = "📋 <b>Waiting for your decision today</b> ({count}), oldest first:"
ESCALATION = "🚨 <b>Waiting too long</b>: these approvers have not decided ({count}):"
UNREACHABLE = "cannot be reached: they never started the bot, or blocked it"
NOT_DECIDED = "has not decided"
TAP_FOR_CARD = "Tap a request to see its card again."
MORE = "…and {count} more."


def nudge_html(nudge: Nudge, tz: tzinfo, holder: int) -> str:
    """The message of a due nudge, as `holder` reads it."""
    items = nudge.items
    if nudge.step == Step.ESCALATE.value:
        lines = [ESCALATION.format(count=len(items))]
        for due in items:
            what = UNREACHABLE if due.unreachable else NOT_DECIDED
            lines.append(f"• {_line(due.facts, tz)}: {escaped(due.person)} {what}")
        return "\n".join(lines)
    if len(items) == 1 and nudge.step != DIGEST:
        facts = items[0].facts
        above = REMINDER if nudge.step == Step.REMIND.value else _expiring(facts, tz)
        return card_html(facts, tz, holder, above)
    head = {DIGEST: DIGEST_HEAD, Step.EXPIRING.value: ALL_EXPIRING}.get(nudge.step, REMINDERS)
    lines = [head.format(count=len(items))]
    lines += [f"• {_line(due.facts, tz)}" for due in items[: nudges.DIGEST_LIMIT]]
    if len(items) > nudges.DIGEST_LIMIT:
        lines.append(MORE.format(count=len(items) - nudges.DIGEST_LIMIT))
    return "\n".join([*lines, "", TAP_FOR_CARD])


def nudge_markup(nudge: Nudge, secret: bytes) -> InlineKeyboardMarkup | None:
    """A lone reminder's card buttons, or a list's button per request; none for the admins."""
    if nudge.step == Step.ESCALATE.value:
        return None
    if len(nudge.items) == 1 and nudge.step != DIGEST:
        return card_markup(secret, nudge.items[0].facts.job)
    return resend_markup(secret, [due.facts.job for due in nudge.items[: nudges.DIGEST_LIMIT]])


def _expiring(facts: CardFacts, tz: tzinfo) -> str:
    deadline = facts.job.decision_deadline
    assert deadline is not None  # a warning is only owed before a deadline
    return EXPIRING.format(at=escaped(local_time(deadline, tz)))


def _line(facts: CardFacts, tz: tzinfo) -> str:
    """One request in a list: PO, supplier, amount, stage, deadline."""
    job, draft = facts.job, facts.draft
    parts = [f"<b>{escaped(job.po_number)}</b>", escaped(draft.supplier_name)]
    parts.append(escaped(format_pkr(draft.total_paisa)))
    if facts.stages > 1:
        parts.append(f"stage {facts.stage + 1} of {facts.stages} ({escaped(facts.group)})")
    if job.decision_deadline is not None:
        parts.append("expires " + escaped(local_time(job.decision_deadline, tz)))
    return " · ".join(parts)

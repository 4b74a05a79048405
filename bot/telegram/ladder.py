"""The reminder ladder in Telegram: what a due nudge (core.messaging.nudges) looks like, and the
button of a list that brings a request's card back.

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

from bot.telegram.cards import (
    MESSAGE_LIMIT,
    card_html,
    card_markup,
    cut,
    escaped,
    resend_markup,
    visible_length,
)
from bot.words.i18n import ENGLISH, N_, Translator
from bot.words.texts import local_time
from core.approval.ladder import Step
from core.drafting.money import format_pkr
from core.jobs.notices import DIGEST
from core.messaging import nudges
from core.messaging.cards import CardFacts
from core.messaging.nudges import Nudge

# --- texts (a list's heading, with its count, is in _head) ---------------------------------
REMINDER = N_("⏰ <b>Reminder</b>: this request is still waiting for your decision.")
EXPIRING = N_("⌛ <b>Expires at {at}</b>: decide before then, or it lapses.")
UNREACHABLE = N_("{request}: {person} cannot be reached: they never started the bot, or blocked it")
NOT_DECIDED = N_("{request}: {person} has not decided")
TAP_FOR_CARD = N_("Tap a request to see its card again.")
# A list line's supplier and group are cut, so that DIGEST_LIMIT lines at their longest fit
# one message in every language (tests/unit/test_nudge_texts.py).
_SUPPLIER_CUT = 40
_GROUP_CUT = 24


def nudge_html(nudge: Nudge, tz: tzinfo, holder: int, *, tr: Translator = ENGLISH) -> str:
    """The message of a due nudge, as `holder` reads it, in their language."""
    items = nudge.items
    if nudge.step == Step.ESCALATE.value:
        lines = [
            tr.plural(
                "🚨 <b>Waiting too long</b>: these approvers have not decided ({count}):",
                "🚨 <b>Waiting too long</b>: these approvers have not decided ({count}):",
                len(items),
            )
        ]
        for due in items:
            what = UNREACHABLE if due.unreachable else NOT_DECIDED
            lines.append(
                "• " + tr(what, request=_line(due.facts, tz, tr), person=escaped(due.person))
            )
        return _fitted(lines, tr)
    if len(items) == 1 and nudge.step != DIGEST:
        facts = items[0].facts
        above = tr(REMINDER) if nudge.step == Step.REMIND.value else _expiring(facts, tz, tr)
        return card_html(facts, tz, holder, above + "\n\n", tr=tr)
    lines = [_head(nudge.step, len(items), tr)]
    lines += [f"• {_line(due.facts, tz, tr)}" for due in items[: nudges.DIGEST_LIMIT]]
    if len(items) > nudges.DIGEST_LIMIT:
        hidden = len(items) - nudges.DIGEST_LIMIT
        lines.append(tr.plural("…and {count} more.", "…and {count} more.", hidden))
    return "\n".join([*lines, "", tr(TAP_FOR_CARD)])


def _fitted(lines: list[str], tr: Translator) -> str:
    """A heading and its lines, as many of them as fit one message, the rest counted."""
    shown = len(lines)
    while True:
        hidden = len(lines) - shown
        more = [tr.plural("…and {count} more.", "…and {count} more.", hidden)] if hidden else []
        text = "\n".join([*lines[:shown], *more])
        if visible_length(text) < MESSAGE_LIMIT:
            return text
        shown -= 1


def _head(step: str, count: int, tr: Translator) -> str:
    """A list's heading: the digest's, the warnings', or the reminders'."""
    if step == DIGEST:
        return tr.plural(
            "📋 <b>Waiting for your decision today</b> ({count}), oldest first:",
            "📋 <b>Waiting for your decision today</b> ({count}), oldest first:",
            count,
        )
    if step == Step.EXPIRING.value:
        return tr.plural(
            "⌛ <b>Expiring soon, still waiting for your decision</b> ({count}):",
            "⌛ <b>Expiring soon, still waiting for your decision</b> ({count}):",
            count,
        )
    return tr.plural(
        "⏰ <b>Still waiting for your decision</b> ({count}):",
        "⏰ <b>Still waiting for your decision</b> ({count}):",
        count,
    )


def nudge_markup(
    nudge: Nudge, secret: bytes, *, tr: Translator = ENGLISH, public_url: str | None = None
) -> InlineKeyboardMarkup | None:
    """A lone reminder's card buttons, or a list's button per request; none for the admins."""
    if nudge.step == Step.ESCALATE.value:
        return None
    if len(nudge.items) == 1 and nudge.step != DIGEST:
        return card_markup(secret, nudge.items[0].facts.job, tr=tr, public_url=public_url)
    return resend_markup(secret, [due.facts.job for due in nudge.items[: nudges.DIGEST_LIMIT]])


def _expiring(facts: CardFacts, tz: tzinfo, tr: Translator) -> str:
    deadline = facts.job.decision_deadline
    assert deadline is not None  # a warning is only owed before a deadline
    return tr(EXPIRING, at=escaped(local_time(deadline, tz)))


def _line(facts: CardFacts, tz: tzinfo, tr: Translator) -> str:
    """One request in a list: PO, supplier, amount, stage, deadline."""
    job, draft = facts.job, facts.draft
    parts = [f"<b>{escaped(job.po_number)}</b>", escaped(cut(draft.supplier_name, _SUPPLIER_CUT))]
    parts = [tr.ltr(part) for part in (*parts, escaped(format_pkr(draft.total_paisa)))]
    if facts.stages > 1:
        stage = {
            "stage": facts.stage + 1,
            "stages": facts.stages,
            "group": escaped(cut(facts.group, _GROUP_CUT)),
        }
        parts.append(tr("stage {stage} of {stages} ({group})", **stage))
    if job.decision_deadline is not None:
        parts.append(tr("expires {at}", at=escaped(local_time(job.decision_deadline, tz))))
    return " · ".join(parts)

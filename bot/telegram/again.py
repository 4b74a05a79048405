"""The button of a reminder's or digest's list (bot.telegram.ladder): a tap sends that
request's card again, as a card of its own, if the request still waits for the tapper."""

from __future__ import annotations

from telegram import Update
from telegram.ext import ContextTypes

from bot.clock import utcnow
from bot.telegram.context import answer_tap
from bot.telegram.decisions import checked_tap, deliver_now
from core import nudges

CARD_AGAIN = "Here is its card again."
NO_LONGER = "This request no longer waits for your decision."


async def on_card_again(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    """A list's button: send that request's card again, if it still waits for the tapper."""
    tap = await checked_tap(update, context)
    if tap is None:
        return
    deps, button, now = tap.deps, tap.button, utcnow()
    default = deps.settings.approval_policy().default_policy
    owed = await nudges.card_again(
        deps.store, tap.job.id, button.draft_version, tap.user.id, now, default
    )
    await answer_tap(tap.query, CARD_AGAIN if owed else NO_LONGER)
    if owed:
        deliver_now(context, deps, tap.job.id)

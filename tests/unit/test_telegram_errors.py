"""The one table that classifies Telegram's errors (bot.telegram.errors)."""

from __future__ import annotations

import inspect
from datetime import timedelta

import pytest
from telegram import error as ptb

from bot.telegram.errors import DESCRIPTIONS, PTB_ERROR_RULES, classify
from core.messaging.delivery import Failure


def test_every_exception_class_telegram_error_exports_is_mapped():
    exported = {
        cls
        for name in ptb.__all__
        if inspect.isclass(cls := getattr(ptb, name)) and issubclass(cls, ptb.TelegramError)
    }
    assert exported, "telegram.error exports no exception classes: PTB changed"
    assert exported - set(PTB_ERROR_RULES) == set(), "map the new PTB classes in PTB_ERROR_RULES"
    assert set(DESCRIPTIONS) <= set(PTB_ERROR_RULES)


@pytest.mark.parametrize(
    ("error", "failure"),
    [
        # Telegram's own descriptions, as the Bot API (and bot.dev.botapi) words them
        (ptb.Forbidden("Forbidden: bot was blocked by the user"), Failure.BLOCKED),
        (
            ptb.Forbidden("Forbidden: bot can't initiate conversation with a user"),
            Failure.NEVER_STARTED,
        ),
        (ptb.Forbidden("Forbidden: user is deactivated"), Failure.NEVER_STARTED),
        (
            ptb.BadRequest(
                "Bad Request: message is not modified: specified new message content and reply "
                "markup are exactly the same as a current content and reply markup of the message"
            ),
            Failure.NOT_MODIFIED,
        ),
        (
            ptb.BadRequest(
                "Bad Request: query is too old and response timeout expired or query ID is invalid"
            ),
            Failure.TOO_OLD,
        ),
        (ptb.BadRequest("Bad Request: chat not found"), Failure.REFUSED),  # a 400 is a refusal
        (ptb.BadRequest("Bad Request: message to edit not found"), Failure.REFUSED),
        (ptb.RetryAfter(7), Failure.FLOOD),  # 429
        (ptb.TimedOut(), Failure.TRANSIENT),  # no answer in time
        (ptb.NetworkError("Bad Gateway"), Failure.TRANSIENT),  # a 5xx reaches PTB like this
        (ptb.Conflict("terminated by other getUpdates request"), Failure.REFUSED),
        (ptb.ChatMigrated(42), Failure.REFUSED),
        (ptb.InvalidToken(), Failure.REFUSED),
        (ptb.EndPointNotFound("Not Found"), Failure.REFUSED),
        (ValueError("a bug in rendering"), Failure.TRANSIENT),  # the unforeseen, within caps
    ],
)
def test_each_answer_is_classified_by_the_table(error, failure):
    assert classify(error).failure is failure


def test_a_flood_carries_how_long_to_wait_and_the_detail_names_the_class():
    why = classify(ptb.RetryAfter(7))
    assert why.retry_after == timedelta(seconds=7)
    assert why.detail.startswith("RetryAfter: ")
    assert classify(ptb.BadRequest("Bad Request: chat not found")).detail == (
        "BadRequest: Chat not found"
    )

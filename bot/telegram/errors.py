"""Telegram's errors, classified once, at the boundary, into core.messaging.delivery's failures.

PTB raises one exception class per kind of answer; a few kinds share a class and differ only in
Telegram's description (a 403 for a user who blocked the bot and for one who never started it,
a 400 for an edit that changes nothing and for a tap answered too late). This module is the one
place that reads those descriptions.

    RetryAfter (429)               FLOOD           wait retry_after, then again
    NetworkError, TimedOut, 5xx    TRANSIENT       back off and retry
    Forbidden (403)                NEVER_STARTED   or BLOCKED ("blocked by the user")
    BadRequest (400)               REFUSED         or NOT_MODIFIED, TOO_OLD (see below)
    any other TelegramError        REFUSED         sending it again cannot help
    anything else                  TRANSIENT       the unforeseen is retried, within the caps
"""

from __future__ import annotations

from datetime import timedelta

from telegram import error as ptb

from core.messaging.delivery import Failure, Undelivered

# Every exception class telegram.error exports, named explicitly; a test fails when PTB adds one
# that is missing. The most specific class wins (method resolution order): BadRequest and
# TimedOut derive from NetworkError.
PTB_ERROR_RULES: dict[type[ptb.TelegramError], Failure] = {
    ptb.TelegramError: Failure.REFUSED,
    ptb.NetworkError: Failure.TRANSIENT,  # no answer, or a 5xx: nothing was refused
    ptb.TimedOut: Failure.TRANSIENT,
    ptb.RetryAfter: Failure.FLOOD,
    ptb.Forbidden: Failure.NEVER_STARTED,
    ptb.BadRequest: Failure.REFUSED,
    ptb.ChatMigrated: Failure.REFUSED,  # only groups migrate; this bot writes private chats
    ptb.Conflict: Failure.REFUSED,  # another getUpdates or a webhook: not a message's fault
    ptb.EndPointNotFound: Failure.REFUSED,
    ptb.InvalidToken: Failure.REFUSED,
    ptb.PassportDecryptionError: Failure.REFUSED,
}
# Telegram's descriptions (lower case, as substrings) that tell one answer of a class from
# another; the first that matches wins, else the class's rule above.
DESCRIPTIONS: dict[type[ptb.TelegramError], tuple[tuple[str, Failure], ...]] = {
    ptb.Forbidden: (("blocked by the user", Failure.BLOCKED),),
    ptb.BadRequest: (
        ("message is not modified", Failure.NOT_MODIFIED),
        ("query is too old", Failure.TOO_OLD),
    ),
}


def classify(error: BaseException) -> Undelivered:
    """What a failed Bot API call means for the notice or tap it served."""
    if not isinstance(error, ptb.TelegramError):
        return Undelivered(Failure.TRANSIENT, f"{type(error).__name__}: {error}")
    cls = next(c for c in type(error).__mro__ if c in PTB_ERROR_RULES)
    failure = PTB_ERROR_RULES[cls]
    said = error.message.lower()
    for phrase, meaning in DESCRIPTIONS.get(cls, ()):
        if phrase in said:
            failure = meaning
            break
    wait = None
    if isinstance(error, ptb.RetryAfter):
        after = error.retry_after
        wait = after if isinstance(after, timedelta) else timedelta(seconds=float(after))
    return Undelivered(failure, f"{type(error).__name__}: {error.message}", wait)

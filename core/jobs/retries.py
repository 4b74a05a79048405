"""Which failures may be retried, and when."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from core.errors import AmbiguousSendError, TransientSendError


class ErrorClass(StrEnum):
    """What a failure allows."""

    TRANSIENT = "transient"  # nothing happened; retry after a delay
    PERMANENT = "permanent"  # retrying cannot help
    AMBIGUOUS = "ambiguous"  # it may have happened; reconcile before anything else


def classify(error: BaseException) -> ErrorClass:
    """Map an error to its class; anything unclassified is permanent, never retried blindly."""
    if isinstance(error, TransientSendError):
        return ErrorClass.TRANSIENT
    if isinstance(error, AmbiguousSendError):
        return ErrorClass.AMBIGUOUS
    return ErrorClass.PERMANENT


@dataclass(frozen=True)
class RetryPolicy:
    """Capped exponential backoff with jitter, with caps on attempts and elapsed time."""

    base_delay: timedelta = timedelta(seconds=5)
    # At most fifteen minutes between tries: a greylisting or briefly down supplier server is
    # retried for about an hour (12 attempts) without ever seeing a storm.
    max_delay: timedelta = timedelta(minutes=15)
    # Jitter spreads many runners' retries so they do not return in lock-step.
    max_jitter: timedelta = timedelta(seconds=5)
    max_attempts: int = 12
    # After two hours a purchasing manager should hear about it, not wait longer.
    max_elapsed: timedelta = timedelta(hours=2)

    def delay(self, attempt: int, rand: float) -> timedelta:
        """`min(max, base·2^attempt) + rand·max_jitter`, with attempt counted from 0."""
        exponential = self.base_delay * (2 ** min(attempt, 30))
        capped: timedelta = min(self.max_delay, exponential)
        return capped + self.max_jitter * rand


@dataclass(frozen=True)
class RetryDecision:
    """Either retry at `retry_at`, or stop with `reason` (the dead letter)."""

    retry_at: datetime | None
    reason: str


def decide(
    policy: RetryPolicy,
    error: ErrorClass,
    attempts: int,
    first_attempt_at: datetime,
    now: datetime,
    rand: float,
) -> RetryDecision:
    """Decide what follows the `attempts`-th failed attempt (counted from 1)."""
    if error is ErrorClass.PERMANENT:
        return RetryDecision(None, "permanent error")
    if error is ErrorClass.AMBIGUOUS:
        return RetryDecision(None, "ambiguous outcome: reconcile")
    if attempts >= policy.max_attempts:
        return RetryDecision(None, f"gave up after {attempts} attempts")
    retry_at = now + policy.delay(attempts - 1, rand)
    if retry_at - first_attempt_at > policy.max_elapsed:
        return RetryDecision(None, f"gave up after {policy.max_elapsed} of retries")
    return RetryDecision(retry_at, f"retry {attempts + 1} of {policy.max_attempts}")

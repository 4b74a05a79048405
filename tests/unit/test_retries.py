"""Retry classification, backoff and the decision after a failed send."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from core.errors import (
    AmbiguousSendError,
    PermanentSendError,
    SendError,
    TransientSendError,
)
from core.jobs.retries import ErrorClass, RetryDecision, RetryPolicy, classify, decide

# Explicit, so the cases below do not move when the defaults are tuned.
POLICY = RetryPolicy(
    base_delay=timedelta(seconds=5),
    max_delay=timedelta(minutes=5),
    max_jitter=timedelta(seconds=5),
    max_attempts=8,
    max_elapsed=timedelta(hours=2),
)
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
T, P, AMB = ErrorClass.TRANSIENT, ErrorClass.PERMANENT, ErrorClass.AMBIGUOUS


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        pytest.param(TransientSendError("421 try later"), T, id="transient"),  # safe to retry
        pytest.param(PermanentSendError("550 no such user", code=550), P, id="permanent"),
        pytest.param(AmbiguousSendError("connection lost after DATA"), AMB, id="ambiguous"),
        pytest.param(SendError("unspecified"), P, id="bare_send_error"),  # unclassified sender
        pytest.param(ValueError("bug"), P, id="unrelated"),  # a bug is never retried blindly
        pytest.param(TimeoutError(), P, id="timeout_unmapped"),  # senders must map it themselves
        pytest.param(KeyboardInterrupt(), P, id="base_exception"),  # not even BaseException
    ],
)
def test_classify(error: BaseException, expected: ErrorClass) -> None:
    """Each sender error maps to its class; anything else is permanent."""
    assert classify(error) is expected


# base · 2^attempt, capped at 5 minutes, for the default policy (seconds, by hand)
BACKOFF = [
    pytest.param(0, 5, id="attempt0"),  # 5 s
    pytest.param(1, 10, id="attempt1"),  # 5 · 2
    pytest.param(2, 20, id="attempt2"),  # 5 · 4
    pytest.param(3, 40, id="attempt3"),  # 5 · 8
    pytest.param(5, 160, id="attempt5"),  # 5 · 32
    pytest.param(6, 300, id="attempt6_capped"),  # 5 · 64 = 320 → cap 300
    pytest.param(30, 300, id="attempt30"),  # far past the cap
    pytest.param(10**6, 300, id="attempt_huge"),  # no overflow
]
# rand · 5 s of jitter (milliseconds, by hand)
JITTER = [
    pytest.param(0.0, 0, id="rand0"),  # no jitter
    pytest.param(0.5, 2500, id="rand0.5"),  # half the jitter
    pytest.param(0.999, 4995, id="rand0.999"),  # just under the maximum
]


@pytest.mark.parametrize(("rand", "jitter_ms"), JITTER)
@pytest.mark.parametrize(("attempt", "backoff_s"), BACKOFF)
def test_delay_is_capped_exponential_plus_jitter(
    attempt: int, backoff_s: int, rand: float, jitter_ms: int
) -> None:
    """delay = min(max, base·2^attempt) + rand·max_jitter."""
    expected = timedelta(seconds=backoff_s, milliseconds=jitter_ms)
    assert POLICY.delay(attempt, rand) == expected


def test_delay_never_exceeds_cap_plus_jitter() -> None:
    """However many attempts, the wait stays below max_delay + max_jitter."""
    ceiling = timedelta(minutes=5) + timedelta(seconds=5)
    delays = [POLICY.delay(attempt, 0.999) for attempt in range(200)]
    assert max(delays) < ceiling
    assert delays == sorted(delays)  # and it never shrinks as attempts grow


def test_delay_uses_the_policy_parameters() -> None:
    """A custom policy's base, cap and jitter are the ones applied."""
    policy = RetryPolicy(
        base_delay=timedelta(seconds=1),
        max_delay=timedelta(seconds=6),
        max_jitter=timedelta(seconds=2),
    )
    assert [policy.delay(a, 0.5) for a in range(4)] == [
        timedelta(seconds=s)
        for s in (2, 3, 5, 7)  # 1, 2, 4, 6(cap of 8) plus 1 s jitter
    ]


@pytest.mark.parametrize(
    ("attempts", "rand", "wait"),
    [
        # first failure: wait base (attempt counted from 0 for the delay)
        pytest.param(1, 0.0, timedelta(seconds=5), id="after_1st"),
        # third failure with half jitter: 20 s + 2.5 s
        pytest.param(3, 0.5, timedelta(seconds=22.5), id="after_3rd"),
        # seventh failure, last one under the cap: capped 300 s
        pytest.param(7, 0.0, timedelta(seconds=300), id="after_7th"),
    ],
)
def test_transient_under_caps_is_retried(attempts: int, rand: float, wait: timedelta) -> None:
    """A transient error with attempts and time to spare gets a retry time."""
    decision = decide(POLICY, T, attempts, NOW, NOW, rand)
    assert decision == RetryDecision(NOW + wait, f"retry {attempts + 1} of 8")


@pytest.mark.parametrize(
    ("kind", "attempts", "first_at", "reason"),
    [
        # the provider refused: retrying cannot help
        pytest.param(P, 1, NOW, "permanent error", id="permanent"),
        # maybe delivered: reconcile, never blind-retry
        pytest.param(AMB, 1, NOW, "ambiguous outcome: reconcile", id="ambiguous"),
        # the eighth failure of eight allowed attempts
        pytest.param(T, 8, NOW, "gave up after 8 attempts", id="attempts_cap"),
        # past the cap too
        pytest.param(T, 9, NOW, "gave up after 9 attempts", id="attempts_over_cap"),
        # the retry would land 1 s after two hours of trying
        pytest.param(
            T,
            1,
            NOW - timedelta(hours=2) + timedelta(seconds=4),
            "gave up after 2:00:00 of retries",
            id="elapsed_cap",
        ),
    ],
)
def test_no_retry_says_why(
    kind: ErrorClass, attempts: int, first_at: datetime, reason: str
) -> None:
    """Permanent, ambiguous and capped failures stop with a reason (the dead letter)."""
    assert decide(POLICY, kind, attempts, first_at, NOW, 0.0) == RetryDecision(None, reason)


def test_retry_landing_exactly_on_elapsed_cap_is_allowed() -> None:
    """The elapsed cap is exceeded only strictly after two hours."""
    first = NOW - timedelta(hours=2) + timedelta(seconds=5)  # retry lands at exactly 2 h
    decision = decide(POLICY, T, 1, first, NOW, 0.0)
    assert decision.retry_at == NOW + timedelta(seconds=5)


def test_jitter_counts_toward_the_elapsed_cap() -> None:
    """The same failure is retried without jitter and dead-lettered with it."""
    first = NOW - timedelta(hours=2) + timedelta(seconds=6)
    assert decide(POLICY, T, 1, first, NOW, 0.0).retry_at is not None
    assert decide(POLICY, T, 1, first, NOW, 0.999).retry_at is None


def test_default_policy_retries_for_about_an_hour_within_the_elapsed_cap() -> None:
    """With the defaults, the attempt cap ends retrying before the two-hour cap would."""
    policy = RetryPolicy()
    waited = sum((policy.delay(n, 0.0) for n in range(policy.max_attempts - 1)), timedelta())
    assert timedelta(minutes=45) < waited < policy.max_elapsed

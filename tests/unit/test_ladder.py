"""The ladder's arithmetic (core.approval.ladder) on a fake clock: durations and working hours as
the policy file writes them, steps shifted into the working hours (Friday evening to Saturday
morning), never at or past the deadline, and the digest once a working day."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.words.policy_texts import ladder_text
from core.approval.ladder import (
    Ladder,
    Step,
    WorkingHours,
    digest_day,
    digest_moment,
    due_times,
    parse_clock,
    parse_duration,
)
from core.approval.policies import PAKISTAN

MON_SAT = WorkingHours.parse("Mon-Sat 09:00-19:00")
ALWAYS = WorkingHours.parse("Mon-Sun 00:00-24:00")
LADDER = Ladder(
    MON_SAT,
    remind_after=timedelta(hours=2),
    escalate_after=timedelta(hours=6),
    before_expiry=timedelta(hours=1),
    digest_at=time(9, 30),
)


def pkt(day: int, hour: int, minute: int = 0) -> datetime:
    """A moment of December 2026 in Pakistan time, as UTC (the 4th is a Friday)."""
    return datetime(2026, 12, day, hour, minute, tzinfo=PAKISTAN).astimezone(UTC)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90s", 90),  # seconds, for second-scale tests
        ("45m", 45 * 60),
        ("2h", 7200),
        ("3d", 3 * 86400),
        (" 2 h ", 7200),  # spaces around are forgiven
    ],
)
def test_durations_read_as_written(text: str, seconds: int) -> None:
    assert parse_duration(text) == timedelta(seconds=seconds)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("2", "is not a duration"),  # no unit
        ("2w", "is not a duration"),  # weeks are not a unit
        ("1.5h", "is not a duration"),  # whole numbers only
        ("0m", "no time at all"),
        ("-1h", "is not a duration"),
    ],
)
def test_bad_durations_say_why(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_duration(text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("Mon-Sat", "is not working hours"),  # no hours
        ("Mon-Fun 09:00-19:00", "days are Mon"),
        ("Mon-Sat 19:00-09:00", "must end after they start"),
        ("Mon-Sat 09:00-25:00", "not on the clock"),
        ("Mon-Sat 09:75-19:00", "not on the clock"),
    ],
)
def test_bad_working_hours_say_why(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        WorkingHours.parse(text)


def test_working_hours_read_days_and_wrap_round_the_week() -> None:
    assert MON_SAT.days == frozenset(range(6)) and (MON_SAT.start, MON_SAT.end) == (540, 1140)
    assert WorkingHours.parse("Sat-Mon 10:00-12:00").days == frozenset({5, 6, 0})
    assert WorkingHours.parse("Fri 10:00-12:00").days == frozenset({4})
    assert ALWAYS.is_open(pkt(6, 3), PAKISTAN)  # a Sunday night: always is always


@pytest.mark.parametrize(
    ("text", "message"), [("9:30", "not a time of day"), ("24:00", "not a time of day")]
)
def test_bad_digest_times_say_why(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_clock(text)


@pytest.mark.parametrize(
    ("at", "opens"),
    [
        (pkt(4, 12), pkt(4, 12)),  # Friday noon: open
        (pkt(4, 9), pkt(4, 9)),  # the opening minute is inside
        (pkt(4, 19), pkt(5, 9)),  # the closing minute is outside: Saturday morning
        (pkt(4, 20, 30), pkt(5, 9)),  # Friday evening: Saturday morning
        (pkt(5, 19, 1), pkt(7, 9)),  # Saturday evening: over Sunday to Monday
        (pkt(6, 11), pkt(7, 9)),  # Sunday: Monday
        (pkt(7, 8, 59), pkt(7, 9)),  # before Monday's opening
    ],
)
def test_next_opening(at: datetime, opens: datetime) -> None:
    assert MON_SAT.next_open(at, PAKISTAN) == opens


def test_a_reminder_due_friday_evening_waits_for_saturday_morning() -> None:
    due = due_times(
        LADDER, delivered_at=pkt(4, 18), deadline=pkt(6, 18), reachable=True, zone=PAKISTAN
    )
    # 20:00 Friday is closed, and so is midnight; the warning (Sunday 17:00) would wait for
    # Monday, past the deadline.
    assert due == {Step.REMIND: pkt(5, 9), Step.ESCALATE: pkt(5, 9)}


def test_steps_in_hours_and_the_last_warning() -> None:
    due = due_times(
        LADDER, delivered_at=pkt(1, 10), deadline=pkt(2, 10), reachable=True, zone=PAKISTAN
    )
    assert due == {
        Step.REMIND: pkt(1, 12),
        Step.ESCALATE: pkt(1, 16),
        Step.EXPIRING: pkt(2, 9),  # 09:00 the next day, an hour before the deadline
    }


def test_nothing_at_or_past_the_deadline() -> None:
    # Delivered Saturday 17:00, deadline Sunday 17:00: every step would wait for Monday.
    due = due_times(
        LADDER, delivered_at=pkt(5, 17), deadline=pkt(6, 17), reachable=True, zone=PAKISTAN
    )
    assert due == {}


def test_an_unreachable_person_is_escalated_at_once_and_not_reminded() -> None:
    due = due_times(
        LADDER, delivered_at=pkt(1, 10), deadline=pkt(2, 10), reachable=False, zone=PAKISTAN
    )
    assert due == {Step.ESCALATE: pkt(1, 10)}


def test_a_card_delivered_in_the_last_hour_gets_no_warning_and_a_late_reminder_none() -> None:
    due = due_times(
        LADDER, delivered_at=pkt(1, 9, 30), deadline=pkt(1, 10), reachable=True, zone=PAKISTAN
    )
    assert due == {}  # the reminder (11:30) and escalation are past the deadline
    shorter = Ladder(ALWAYS, remind_after=timedelta(hours=3), before_expiry=timedelta(hours=1))
    due = due_times(
        shorter, delivered_at=pkt(1, 10), deadline=pkt(1, 13), reachable=True, zone=PAKISTAN
    )
    assert due == {Step.EXPIRING: pkt(1, 12)}  # the reminder would come after the warning


@given(
    delivered=st.datetimes(
        min_value=datetime(2026, 1, 1), max_value=datetime(2027, 1, 1), timezones=st.just(UTC)
    ),
    ttl=st.integers(min_value=60, max_value=5 * 86400),
    reachable=st.booleans(),
)
def test_every_step_is_in_hours_after_delivery_and_before_the_deadline(
    delivered: datetime, ttl: int, reachable: bool
) -> None:
    deadline = delivered + timedelta(seconds=ttl)
    due = due_times(
        LADDER, delivered_at=delivered, deadline=deadline, reachable=reachable, zone=PAKISTAN
    )
    for at in due.values():
        assert delivered <= at < deadline
        assert MON_SAT.is_open(at, PAKISTAN)
    if not reachable:
        assert set(due) <= {Step.ESCALATE}


def test_the_digest_is_due_once_its_time_comes_on_working_days() -> None:
    assert digest_day(LADDER, pkt(4, 9, 29), PAKISTAN) is None  # not yet
    assert digest_day(LADDER, pkt(4, 9, 30), PAKISTAN) == pkt(4, 12).astimezone(PAKISTAN).date()
    assert digest_day(LADDER, pkt(6, 10), PAKISTAN) is None  # Sunday: no digest
    assert digest_moment(LADDER, pkt(4, 12).astimezone(PAKISTAN).date(), PAKISTAN) == pkt(4, 9, 30)
    assert digest_day(Ladder(ALWAYS, timedelta(hours=1)), pkt(4, 10), PAKISTAN) is None


def test_the_ladder_in_words() -> None:
    assert ladder_text(LADDER) == (
        "remind after 2h, escalate to the admins after 6h, warn 1h before expiry, digest at "
        "09:30; working hours Mon,Tue,Wed,Thu,Fri,Sat 09:00-19:00"
    )
    seconds = Ladder(ALWAYS, timedelta(seconds=90), escalate_to="owners")
    assert ladder_text(seconds).startswith("remind after 90s;")

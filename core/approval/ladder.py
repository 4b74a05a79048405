"""The reminder ladder (a policy file's [reminders]): when each nudge of a waiting request is
due, as pure arithmetic on times handed in.

Every step is counted from the moment the person's card for the current stage was delivered:
a reminder after `remind_after`, the admins' escalation after `escalate_after` (at once for a
person the bot cannot write to), one last "expires soon" `before_expiry` ahead of the deadline.
A step due outside the working hours waits for their next opening, and a step that would then
fall at or past the request's deadline is never due. The digest goes out once a working day,
at `digest_at`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, tzinfo
from enum import StrEnum

from core.problems import ProblemCode
from core.toml_files import ValueProblem

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_DURATION = re.compile(r"^\s*(\d{1,6})\s*([smhd])\s*$")
_DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_HOURS = re.compile(
    r"^\s*([A-Za-z]{3})\s*(?:-\s*([A-Za-z]{3}))?\s+(\d{2}):(\d{2})\s*-\s*(\d{2}):(\d{2})\s*$"
)
_CLOCK = re.compile(r"^\s*(\d{2}):(\d{2})\s*$")
# Sixty days: further than any request waits, and far enough to cross every closed stretch.
_HORIZON = 60


class Unreadable(ValueProblem):
    """A duration, a time of day or working hours that do not read: the message says how in
    English (for the configuration's errors), and `code` with the text quoted in `values`
    lets a policy file's reader be told in their language (core.problems)."""

    def __init__(self, message: str, code: ProblemCode, text: str) -> None:
        super().__init__(message, code, {"value": repr(text)})


class Step(StrEnum):
    """A rung of the ladder; the values are in notice keys and the audit trail."""

    REMIND = "remind"
    ESCALATE = "escalate"
    EXPIRING = "expiring"


def parse_duration(text: str) -> timedelta:
    """'90s', '45m', '2h', '3d' as a duration; ValueError naming what is wrong."""
    found = _DURATION.match(text)
    if found is None:
        message = f"{text!r} is not a duration: a whole number and s, m, h or d, as 2h"
        raise Unreadable(message, ProblemCode.NOT_A_DURATION, text)
    seconds = int(found[1]) * _UNITS[found[2]]
    if seconds == 0:
        message = f"{text!r} is no time at all: a duration must be more than zero"
        raise Unreadable(message, ProblemCode.NO_TIME_AT_ALL, text)
    return timedelta(seconds=seconds)


def parse_clock(text: str) -> time:
    """'09:30' as a time of day; ValueError naming what is wrong."""
    found = _CLOCK.match(text)
    if found is None or int(found[1]) > 23 or int(found[2]) > 59:
        message = f"{text!r} is not a time of day: HH:MM, as 09:30"
        raise Unreadable(message, ProblemCode.NOT_A_TIME_OF_DAY, text)
    return time(int(found[1]), int(found[2]))


@dataclass(frozen=True)
class WorkingHours:
    """Days of the week (Monday 0) and the hours of each, in the zone the ladder is read in;
    `end` 24:00 is written as minutes past midnight, 1440."""

    days: frozenset[int]
    start: int  # minutes past midnight
    end: int

    @classmethod
    def parse(cls, text: str) -> WorkingHours:
        """'Mon-Sat 09:00-19:00' ('Mon-Sun 00:00-24:00': always); ValueError naming what is
        wrong."""
        found = _HOURS.match(text)
        shape = "days and hours, as Mon-Sat 09:00-19:00"
        if found is None:
            message = f"{text!r} is not working hours: {shape}"
            raise Unreadable(message, ProblemCode.NOT_WORKING_HOURS, text)
        first, last = (found[1].lower(), (found[2] or found[1]).lower())
        if first not in _DAYS or last not in _DAYS:
            message = f"{text!r}: days are Mon, Tue, Wed, Thu, Fri, Sat, Sun"
            raise Unreadable(message, ProblemCode.UNKNOWN_DAY, text)
        a, b = _DAYS.index(first), _DAYS.index(last)
        days = frozenset((a + n) % 7 for n in range((b - a) % 7 + 1))
        start, end = int(found[3]) * 60 + int(found[4]), int(found[5]) * 60 + int(found[6])
        if int(found[4]) > 59 or int(found[6]) > 59 or start >= 24 * 60 or end > 24 * 60:
            message = f"{text!r} has a time that is not on the clock: {shape}"
            raise Unreadable(message, ProblemCode.OFF_THE_CLOCK, text)
        if end <= start:
            message = f"{text!r}: the hours must end after they start"
            raise Unreadable(message, ProblemCode.HOURS_END_FIRST, text)
        return cls(days, start, end)

    def is_open(self, at: datetime, zone: tzinfo) -> bool:
        """Whether `at` falls inside the working hours."""
        local = at.astimezone(zone)
        minute = local.hour * 60 + local.minute
        return local.weekday() in self.days and self.start <= minute < self.end

    def next_open(self, at: datetime, zone: tzinfo) -> datetime:
        """`at` if it falls inside the working hours, else their next opening."""
        if self.is_open(at, zone):
            return at
        local = at.astimezone(zone)
        for ahead in range(_HORIZON):
            day = local.date() + timedelta(days=ahead)
            opening = _at(day, self.start, zone)
            if day.weekday() in self.days and opening > at:
                return opening.astimezone(at.tzinfo)
        raise AssertionError("working hours have at least one day a week")  # pragma: no cover


def _at(day: date, minutes: int, zone: tzinfo) -> datetime:
    """That day's moment `minutes` past midnight in `zone`."""
    return datetime.combine(day, time(minutes // 60, minutes % 60), zone)


@dataclass(frozen=True)
class Ladder:
    """A policy's [reminders], parsed."""

    working_hours: WorkingHours
    remind_after: timedelta
    escalate_after: timedelta | None = None
    escalate_to: str | None = None  # a group of the policy, told beside the admins
    before_expiry: timedelta | None = None
    digest_at: time | None = None

    def canonical(self) -> str:
        """The ladder as the text a policy's content hash is taken over (core.approval.policies).
        These words must never change, or every stored policy would change version; people read the
        ladder in their own language (bot.words.policy_texts)."""
        parts = [f"remind after {shown(self.remind_after)}"]
        if self.escalate_after is not None:
            to = f" and {self.escalate_to}" if self.escalate_to else ""
            parts.append(f"escalate to the admins{to} after {shown(self.escalate_after)}")
        if self.before_expiry is not None:
            parts.append(f"warn {shown(self.before_expiry)} before expiry")
        if self.digest_at is not None:
            parts.append(f"digest at {self.digest_at:%H:%M}")
        hours = self.working_hours
        days = ",".join(_DAYS[d].title() for d in sorted(hours.days))
        span = (
            f"{hours.start // 60:02}:{hours.start % 60:02}-{hours.end // 60:02}:{hours.end % 60:02}"
        )
        return f"{', '.join(parts)}; working hours {days} {span}"


ALWAYS = WorkingHours(frozenset(range(7)), 0, 24 * 60)  # no [reminders]: every hour counts


class ChaseStep(StrEnum):
    """A rung of chasing a silent supplier; the values are in keys and the audit trail."""

    REMIND = "remind"  # one reminder e-mail to the supplier
    ESCALATE = "escalate"  # the requester and the admins told in Telegram


@dataclass(frozen=True)
class Chase:
    """A policy's [suppliers]: how long a sent PO may wait for its supplier's answer before the
    supplier is reminded, once, and before the requester and the admins are told."""

    remind_after: timedelta
    escalate_after: timedelta

    def canonical(self) -> str:
        """The text a policy's content hash is taken over; never to change (see Ladder)."""
        return (
            f"remind the supplier after {shown(self.remind_after)}, "
            f"escalate after {shown(self.escalate_after)}"
        )

    def due(
        self, sent_at: datetime, hours: WorkingHours, zone: tzinfo
    ) -> dict[ChaseStep, datetime]:
        """When each rung is due for a PO e-mailed at `sent_at`, shifted into `hours`."""
        return {
            ChaseStep.REMIND: hours.next_open(sent_at + self.remind_after, zone),
            ChaseStep.ESCALATE: hours.next_open(sent_at + self.escalate_after, zone),
        }


# Without a [suppliers] section: a reminder after two days, the team told after four.
DEFAULT_CHASE = Chase(timedelta(days=2), timedelta(days=4))


def shown(duration: timedelta) -> str:
    """A duration as the policy file writes it: 90s, 45m, 2h, 3d."""
    seconds = int(duration.total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def due_times(
    ladder: Ladder,
    *,
    delivered_at: datetime,
    deadline: datetime | None,
    reachable: bool,
    zone: tzinfo,
) -> dict[Step, datetime]:
    """When each step of the ladder is due for one person's card delivered at `delivered_at`:
    shifted into the working hours, and left out if that falls at or past `deadline`. A person
    the bot cannot write to gets no reminder and no warning, and the escalation at once."""
    hours = ladder.working_hours
    due: dict[Step, datetime] = {}
    if ladder.escalate_after is not None:
        wait = timedelta() if not reachable else ladder.escalate_after
        due[Step.ESCALATE] = hours.next_open(delivered_at + wait, zone)
    if reachable:
        due[Step.REMIND] = hours.next_open(delivered_at + ladder.remind_after, zone)
        if ladder.before_expiry is not None and deadline is not None:
            warn_from = deadline - ladder.before_expiry
            if warn_from > delivered_at:  # a card delivered later is itself the last word
                due[Step.EXPIRING] = hours.next_open(warn_from, zone)
    if Step.EXPIRING in due and due[Step.REMIND] >= due[Step.EXPIRING]:
        del due[Step.REMIND]  # the warning says it all
    return {s: at for s, at in due.items() if deadline is None or at < deadline}


def digest_day(ladder: Ladder, now: datetime, zone: tzinfo) -> date | None:
    """The day whose digest is due at `now`: today (in `zone`) once its `digest_at` has come,
    if that moment falls inside the working hours; None on other days and before then."""
    if ladder.digest_at is None:
        return None
    today = now.astimezone(zone).date()
    moment = digest_moment(ladder, today, zone)
    if moment is None or now < moment:
        return None
    return today


def digest_moment(ladder: Ladder, day: date, zone: tzinfo) -> datetime | None:
    """When `day`'s digest is due, or None if there is none that day (no digest_at, or it
    falls outside the working hours)."""
    if ladder.digest_at is None:
        return None
    at = ladder.digest_at
    moment = _at(day, at.hour * 60 + at.minute, zone)
    return moment if ladder.working_hours.is_open(moment, zone) else None

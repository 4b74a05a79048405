"""Delegation: an approver who is away hands their approvals to another approver until a time.

While a delegation is active, the delegator's cards (waiting and new) go to the delegate,
marked "for <delegator>", and the delegate's approval counts as the delegator's, in the
delegator's groups. Within one request the two are one person (core.approval.tally.People): their
approvals, as themselves or for each other, count once, and neither may approve the other's
request. A delegation is followed one step only: if Ali hands over to Bilal and Bilal to
Chand, Ali's cards go to Bilal, not on to Chand.

Each delegation is kept, ended or not, so that a request remembers who were one person while
it waited. It ends at `until`, or earlier by /back (`ended_at`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, tzinfo

from core.errors import DelegationRefused, Refusal
from core.texts import echo

# The longest hand-over a person may set in one go: a long leave is set again, on purpose.
LONGEST = timedelta(days=90)
# The same in hours, the other unit a duration may have (2160h).
_LONGEST_HOURS = LONGEST // timedelta(hours=1)
# Why an end is refused (for logs and the CLI; the shell says it from the reason).
PAST = "that time has passed: name a later date or a duration"
_TOO_LONG = f"a delegation lasts at most {LONGEST.days} days"
# A duration as typed: ASCII digits and a unit. Any number of digits matches, so that a long
# one is refused as too long; its digits are counted before any is converted.
_DURATION = re.compile(r"([0-9]+)([dh])")
# A date as typed: the ISO date the usage shows, nothing else (fromisoformat reads more).
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


@dataclass(frozen=True)
class Delegation:
    """`delegate` acts for `delegator` from `starts_at` until `until`, or `ended_at` if it
    was ended earlier (/back)."""

    id: int
    delegator: int
    delegate: int
    starts_at: datetime
    until: datetime
    set_by: str  # the audit actor that set it: the delegator, or an admin
    ended_at: datetime | None = None

    @property
    def ends_at(self) -> datetime:
        """When it stops, or stopped."""
        return self.until if self.ended_at is None else min(self.ended_at, self.until)

    def active(self, now: datetime) -> bool:
        """Whether the delegate acts for the delegator at `now`."""
        return self.starts_at <= now < self.ends_at

    def overlaps(self, start: datetime, end: datetime, *, closed: bool = True) -> bool:
        """Whether it was active at some moment of [start, end] (of [start, end) if not
        `closed`: one that began at `end` began after it)."""
        began = self.starts_at <= end if closed else self.starts_at < end
        return began and start < self.ends_at


@dataclass(frozen=True)
class Window:
    """The ends a delegation set now may have, as a person names them: the end of a date from
    `first` (today) to `last` (in the configured time zone), or a duration up to LONGEST."""

    first: date
    last: date

    @classmethod
    def at(cls, now: datetime, tz: tzinfo) -> Window:
        """The window of a delegation set at `now`: `last` is the last date whose end is at
        most LONGEST after now."""
        today = now.astimezone(tz).date()
        return cls(today, (now + LONGEST).astimezone(tz).date() - timedelta(days=1))

    def refusal(self, message: str, reason: Refusal, **values: str | int) -> DelegationRefused:
        """The refusal of an end, carrying the window so that the shell can say what is
        allowed."""
        allowed: dict[str, str | int] = {
            "first": self.first.isoformat(),
            "last": self.last.isoformat(),
            "longest": f"{LONGEST.days}d",
            "days": LONGEST.days,
        }
        return DelegationRefused(message, reason, **values, **allowed)


def parse_until(text: str, now: datetime, tz: tzinfo) -> datetime:
    """When a delegation set at `now` ends: a date (YYYY-MM-DD) ends at the end of that day in
    `tz` (the configured Pakistan time); a duration (`3d`, `12h`) from now. Each is checked
    against the Window before any arithmetic; DelegationRefused carries the window."""
    window, typed = Window.at(now, tz), text.strip().lower()
    duration = _DURATION.fullmatch(typed)
    if duration is not None:
        return _after(window, now, duration.group(1), duration.group(2))
    day = _date(typed)
    if day is None:
        message = f"{echo(text)} is not a date (YYYY-MM-DD) or a duration like 3d or 12h"
        raise window.refusal(message, Refusal.NOT_A_DATE, text=echo(text))
    if day < window.first:
        raise window.refusal(PAST, Refusal.HAS_PASSED)
    if day > window.last:
        raise window.refusal(_TOO_LONG, Refusal.TOO_LONG)
    return datetime.combine(day + timedelta(days=1), time(), tz)


def _after(window: Window, now: datetime, digits: str, unit: str) -> datetime:
    """`now` plus a duration of `digits` days (`d`) or hours (`h`), if within LONGEST."""
    most = LONGEST.days if unit == "d" else _LONGEST_HOURS
    significant = digits.lstrip("0")
    # More digits than `most` has is more than `most`: such a number is never converted.
    amount = int(significant or "0") if len(significant) <= len(str(most)) else most + 1
    if amount > most:
        raise window.refusal(_TOO_LONG, Refusal.TOO_LONG)
    if amount == 0:
        raise window.refusal(PAST, Refusal.HAS_PASSED)
    return now + (timedelta(days=amount) if unit == "d" else timedelta(hours=amount))


def _date(typed: str) -> date | None:
    """The date written YYYY-MM-DD, or None: not that shape, or no such day."""
    if _DATE.fullmatch(typed) is None:
        return None
    try:
        return date.fromisoformat(typed)
    except ValueError:  # 2026-02-30, 0000-00-00
        return None


def check_delegation(
    delegator: int,
    delegate: int,
    approvers: Iterable[int],
    active: Iterable[Delegation],
) -> None:
    """Raise DelegationRefused unless `delegator` may hand over to `delegate` now: both are
    approvers, they are two people, and the delegate has not handed over to the delegator
    (no delegation back). `active`: the delegations active now."""
    if delegator == delegate:
        raise DelegationRefused("nobody delegates to themselves", Refusal.TO_ONESELF)
    held = set(approvers)
    for who, name, why in (
        (delegator, "the one away", Refusal.AWAY_NOT_APPROVER),
        (delegate, "the delegate", Refusal.DELEGATE_NOT_APPROVER),
    ):
        if who not in held:
            raise DelegationRefused(f"user {who} ({name}) is not an approver", why, user=who)
    for d in active:
        if (d.delegator, d.delegate) == (delegate, delegator):
            message = f"user {delegate} has delegated to user {delegator}: no delegation back"
            values = {"delegate": delegate, "delegator": delegator}
            raise DelegationRefused(message, Refusal.DELEGATION_BACK, **values)


def acting_for(delegations: Iterable[Delegation], now: datetime) -> dict[int, int]:
    """Who acts for whom now: delegator -> delegate, one step."""
    return {d.delegator: d.delegate for d in delegations if d.active(now)}

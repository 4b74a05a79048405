"""Delegation: an approver who is away hands their approvals to another approver until a time.

While a delegation is active, the delegator's cards (waiting and new) go to the delegate,
marked "for <delegator>", and the delegate's approval counts as the delegator's, in the
delegator's groups. Within one request the two are one person (core.policies.People): their
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

# The longest hand-over a person may set in one go: a long leave is set again, on purpose.
LONGEST = timedelta(days=90)
# Why a delegation ending at or before now is refused (for logs; the shell says it).
PAST = "that time has passed: name a later date or a duration"
_DURATION = re.compile(r"(\d{1,4})([dh])")


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


def parse_until(text: str, now: datetime, tz: tzinfo) -> datetime:
    """When a delegation set at `now` ends: a date (YYYY-MM-DD) ends at the end of that day in
    `tz` (the configured Pakistan time); a duration (`3d`, `12h`) from now. At most LONGEST
    ahead, and in the future."""
    text = text.strip().lower()
    duration = _DURATION.fullmatch(text)
    if duration is not None:
        amount, unit = int(duration.group(1)), duration.group(2)
        until = now + (timedelta(days=amount) if unit == "d" else timedelta(hours=amount))
    else:
        try:
            day = date.fromisoformat(text) if len(text) == 10 else None
        except ValueError:
            day = None
        if day is None:
            message = f"{text!r} is not a date (YYYY-MM-DD) or a duration like 3d or 12h"
            raise DelegationRefused(message, Refusal.NOT_A_DATE, text=repr(text))
        until = datetime.combine(day + timedelta(days=1), time(), tz)
    if until <= now:
        raise DelegationRefused(PAST, Refusal.IN_THE_PAST)
    if until - now > LONGEST:
        message = f"a delegation lasts at most {LONGEST.days} days"
        raise DelegationRefused(message, Refusal.TOO_LONG, days=LONGEST.days)
    return until


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

"""A typed request between its summary and Submit: the lines as read, kept (sealed) with the
id the digest is taken over (core.purchasing.requests), so a Submit made after a restart, made
twice, or made twice at once, submits the same request, which makes its POs once.

Whether a tap on the summary's Submit or Cancel may act is decided here, on the kept request,
who tapped and when (`standing`): only its requester, only while it is open, and a Submit only
within its validity."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from core.purchasing.requests import RequestLine, Source, request_sheet
from core.purchasing.submissions import Sheet

# A summary's Submit works this long (MANZOORI_TYPED_REQUEST_SECONDS): prices and budgets may
# have moved by the next day; sending the lines again shows the day's.
VALID_FOR = timedelta(hours=24)


class SummaryState(StrEnum):
    """Where a kept request stands."""

    OPEN = "open"  # shown, neither submitted nor cancelled
    SUBMITTED = "submitted"  # Submit was tapped: its POs are made (or, after a crash, owed)
    CANCELLED = "cancelled"  # Cancel was tapped: nothing will come of it


@dataclass(frozen=True)
class TypedRequest:
    """A typed request as its summary showed it, waiting for Submit or Cancel."""

    request_id: str  # a UUID, made with the summary; the digest is taken over it
    requester_id: int
    lines: tuple[RequestLine, ...]
    numbers: tuple[int, ...]  # each line's number in the requester's message
    created_at: datetime
    state: SummaryState = SummaryState.OPEN

    def sheet(self) -> Sheet:
        """The request as the sheet the intake reads (always the same digest)."""
        return request_sheet(Source.TYPED, self.request_id, self.lines)


class Standing(StrEnum):
    """What a tap on a summary's button finds."""

    GONE = "gone"  # no such request kept (purged, or never made)
    NOT_YOURS = "not_yours"  # someone other than its requester tapped
    CANCELLED = "cancelled"
    SUBMITTED = "submitted"  # submitted before: a Submit again returns its POs
    EXPIRED = "expired"  # open, but its Submit is past VALID_FOR
    OPEN = "open"


def standing(
    request: TypedRequest | None, tapper: int, now: datetime, valid_for: timedelta = VALID_FOR
) -> Standing:
    """What a tap by `tapper` at `now` finds on `request`."""
    if request is None:
        return Standing.GONE
    if request.requester_id != tapper:
        return Standing.NOT_YOURS
    if request.state is SummaryState.CANCELLED:
        return Standing.CANCELLED
    if request.state is SummaryState.SUBMITTED:
        return Standing.SUBMITTED
    if now >= request.created_at + valid_for:
        return Standing.EXPIRED
    return Standing.OPEN

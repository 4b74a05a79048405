"""/away's arguments (bot.telegram.people.away_args) and its UNTIL
(core.approval.delegations.parse_until):
ids the database holds, and a date or a duration inside the window a delegation may have, or a
refusal that names that window; never another exception (issue 21)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from bot.telegram.people import away_args
from bot.words.arguments import BIGINT_MAX, parse_user_id
from bot.words.i18n import ENGLISH, Language, translator
from bot.words.refusals import refusal_text
from core.approval.delegations import LONGEST, parse_until
from core.errors import DelegationRefused, Refusal

PKT = ZoneInfo("Asia/Karachi")
NOW = datetime(2026, 12, 4, 10, 0, tzinfo=UTC)  # 15:00 on 4 Dec in Karachi
# What every refusal of an end names: today, the last date whose end is within LONGEST of now
# (90 days on is 15:00 on 4 Mar, so 3 Mar is the last whole day), and the longest duration.
WINDOW = {"first": "2026-12-04", "last": "2027-03-03", "longest": "90d", "days": 90}
ALLOWED = "name a date from 2026-12-04 to 2027-03-03, or a duration from 1h to 90d"
UR = translator(Language.UR)
# The three ways an end is refused.
REFUSALS = {Refusal.NOT_A_DATE, Refusal.HAS_PASSED, Refusal.TOO_LONG}


def midnight(day: date) -> datetime:
    """The start of `day` in Karachi: where a delegation to the day before ends."""
    return datetime(day.year, day.month, day.day, tzinfo=PKT)


@pytest.mark.parametrize(
    ("text", "until"),
    [
        ("2026-12-04", midnight(date(2026, 12, 5))),  # today: to the end of today
        ("2027-03-03", midnight(date(2027, 3, 4))),  # the last date within 90 days
        ("1h", NOW + timedelta(hours=1)),  # the shortest
        ("90d", NOW + LONGEST),  # the longest, in days
        ("2160h", NOW + LONGEST),  # and in hours
        (" 3D ", NOW + timedelta(days=3)),  # as a phone capitalises and pads it
        ("007d", NOW + timedelta(days=7)),  # leading zeros are only zeros
    ],
)
def test_every_end_inside_the_window_is_read(text, until):
    assert parse_until(text, NOW, PKT) == until


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        # The crash: the day after 9999-12-31 overflowed; now refused before that.
        ("9999-12-31", Refusal.TOO_LONG),
        # Durations no timedelta holds: refused by their digits, never converted.
        ("99999999999d", Refusal.TOO_LONG),
        ("999999999999h", Refusal.TOO_LONG),
        ("9" * 5000 + "d", Refusal.TOO_LONG),  # beyond the digits int() converts at all
        ("91d", Refusal.TOO_LONG),  # one day past LONGEST
        ("2161h", Refusal.TOO_LONG),  # one hour past it
        ("2027-03-04", Refusal.TOO_LONG),  # the first date whose end is past it
        ("2026-12-03", Refusal.HAS_PASSED),  # yesterday
        ("0001-01-01", Refusal.HAS_PASSED),  # the calendar's first day
        ("0d", Refusal.HAS_PASSED),  # a hand-over of nothing
        ("000h", Refusal.HAS_PASSED),
        ("-3d", Refusal.NOT_A_DATE),  # a negative duration is no duration
        ("2026-02-30", Refusal.NOT_A_DATE),  # no such day
        ("0000-00-00", Refusal.NOT_A_DATE),
        ("10000-01-01", Refusal.NOT_A_DATE),  # a five-digit year
        ("۱۲d", Refusal.NOT_A_DATE),  # Urdu digits: ids, dates and durations are written 0-9
        ("2026-W49-5", Refusal.NOT_A_DATE),  # ISO's week date: not what the usage shows
        ("1e309", Refusal.NOT_A_DATE),
        ("3w", Refusal.NOT_A_DATE),  # only days and hours
        ("", Refusal.NOT_A_DATE),
        ("\x00", Refusal.NOT_A_DATE),
        ("\u200f3d", Refusal.NOT_A_DATE),  # a right-to-left mark glued to it
    ],
)
def test_ends_outside_the_window_or_unreadable_are_refused_with_the_window(text, reason):
    with pytest.raises(DelegationRefused) as refused:
        parse_until(text, NOW, PKT)
    assert refused.value.reason is reason
    assert {k: refused.value.values[k] for k in WINDOW} == WINDOW
    assert refusal_text(refused.value).endswith(ALLOWED)


def test_a_refusal_says_what_is_allowed_and_repeats_only_the_start_of_the_text():
    with pytest.raises(DelegationRefused) as refused:
        parse_until("tomorrow", NOW, PKT)
    assert refusal_text(refused.value) == (
        "'tomorrow' is not a date (YYYY-MM-DD) or a duration like 3d or 12h: " + ALLOWED
    )
    with pytest.raises(DelegationRefused) as refused:
        parse_until("x" * 4000 + "\x01", NOW, PKT)
    assert refused.value.values["text"] == "'" + "x" * 40 + "…'"
    with pytest.raises(DelegationRefused) as refused:
        parse_until("a\x00\u200fb", NOW, PKT)
    assert refused.value.values["text"] == "'a\\x00\\u200fb'"  # escaped, not sent as they are


def test_the_first_date_is_today_where_the_office_is():
    late = datetime(2026, 12, 4, 19, 30, tzinfo=UTC)  # 00:30 on 5 Dec in Karachi
    with pytest.raises(DelegationRefused) as refused:
        parse_until("2026-12-04", late, PKT)
    assert refused.value.reason is Refusal.HAS_PASSED
    assert refused.value.values["first"] == "2026-12-05"
    assert parse_until("2026-12-05", late, PKT) == midnight(date(2026, 12, 6))


# Any moment the bot may run at, to the minute.
MOMENTS = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
)
# Text as a person types it, and text shaped like what parse_until reads.
TYPED = st.one_of(
    st.text(),
    st.from_regex(r"\s*-?[0-9۰-۹]{1,14}[dhDHw]?\s*", fullmatch=True),
    st.from_regex(r"[0-9]{1,5}-[0-9]{1,2}-[0-9]{1,2}", fullmatch=True),
    st.dates().map(date.isoformat),
)


@settings(max_examples=400, deadline=None)
@given(TYPED, MOMENTS)
def test_any_text_gives_an_end_within_the_window_or_a_refusal_that_says_it(text, now):
    try:
        until = parse_until(text, now, PKT)
    except DelegationRefused as refused:
        assert refused.reason in REFUSALS
        for tr in (ENGLISH, UR):  # renders in both languages: every placeholder has its value
            assert refusal_text(refused, tr=tr)
        return
    assert now < until <= now + LONGEST


@settings(max_examples=200, deadline=None)
@given(st.dates(), MOMENTS)
@example(date.max, NOW)  # the crash: the calendar's last day
@example(date.min, NOW)
def test_a_date_is_taken_exactly_when_it_is_inside_the_window(day, now):
    first = now.astimezone(PKT).date()
    last = (now + LONGEST).astimezone(PKT).date() - timedelta(days=1)
    try:
        until = parse_until(day.isoformat(), now, PKT)
    except DelegationRefused as refused:
        assert not first <= day <= last
        assert refused.reason is (Refusal.HAS_PASSED if day < first else Refusal.TOO_LONG)
        return
    assert first <= day <= last and until == midnight(day + timedelta(days=1))


SENDER = 2002
# The words after /away: hostile ids, ends and anything else, two or three of them or not.
WORD = st.one_of(
    TYPED,
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.sampled_from(["2003", "9223372036854775807", "9223372036854775808", "0", "۱۲۳"]),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(WORD, max_size=4), MOMENTS)
def test_any_away_arguments_give_a_delegation_the_database_holds_or_a_refusal(args, now):
    wanted = away_args(args, SENDER)
    ids = [parse_user_id(arg) for arg in args]
    if wanted is None:  # the handler answers with the usage: neither form, or an id not held
        assert not (len(args) == 2 and ids[1]) and not (len(args) == 3 and ids[0] and ids[2])
        return
    delegator, until_text, delegate = wanted
    assert 1 <= delegator <= BIGINT_MAX and 1 <= delegate <= BIGINT_MAX
    assert delegator == (SENDER if len(args) == 2 else parse_user_id(args[0]))
    try:
        until = parse_until(until_text, now, PKT)
    except DelegationRefused as refused:
        assert refused.reason in REFUSALS and refusal_text(refused, tr=UR)
        return
    assert now < until <= now + LONGEST


@pytest.mark.parametrize(
    ("args", "wanted"),
    [
        (["3d", "2003"], (SENDER, "3d", 2003)),  # an approver's own
        (["2001", "2026-12-24", "2003"], (2001, "2026-12-24", 2003)),  # an admin's, for 2001
        (["3d", "99999999999999999999"], None),  # no such id: the usage
        (["9223372036854775808", "3d", "2003"], None),
        (["3d", "0"], None),
        (["3d"], None),
        ([], None),
    ],
)
def test_away_reads_the_sender_s_form_and_the_admin_s(args, wanted):
    assert away_args(args, SENDER) == wanted

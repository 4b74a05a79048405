"""Approve with changes, the pure part: an approver's changes to the draft they were shown
(core.purchasing.edits.edited_draft), what changed (line_diff), and the edits refused; and the
client's decision ids (core.approval.replays)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.approval.decisions import Review
from core.approval.policies import Verdict
from core.drafting.drafts import Draft, DraftLine, Flag, LineDiff, draft_hash, line_diff
from core.drafting.flags import FlagCode
from core.errors import BadClientId, EditProblem, EditRefused
from core.purchasing.edits import Edit, LineChange, edited_draft

CHARGER = DraftLine("ADP-65W", "65 W charger", 10, 450_000)
CABLE = DraftLine("CBL-USB-C-1M", "USB-C cable 1 m", 50, 25_000)
HUB = DraftLine("HUB-7P", "7-port hub", 4, 300_000)


def shown(*flags: Flag, lines: tuple[DraftLine, ...] = (CHARGER, CABLE, HUB)) -> Draft:
    return Draft(
        po_number="PO-2026-0042",
        supplier_id="SUP-LHR-01",
        supplier_name="Hall Road Electronics",
        recipient_email="orders@supplier.example",
        terms_version="terms-2026-11",
        lines=lines,
        flags=flags,
    )


def test_a_trim_and_a_drop_make_a_new_draft_with_its_own_total_and_hash():
    before = shown()
    after = edited_draft(before, [LineChange(2, 30), LineChange(3, 0)])
    assert [(line.sku, line.quantity) for line in after.lines] == [
        ("ADP-65W", 10),
        ("CBL-USB-C-1M", 30),
    ]
    assert after.total_paisa == 10 * 450_000 + 30 * 25_000
    assert draft_hash(after) != draft_hash(before)
    # Everything but the lines is as shown: the same PO, supplier, address and terms.
    assert (after.po_number, after.recipient_email, after.terms_version) == (
        before.po_number,
        before.recipient_email,
        before.terms_version,
    )
    assert line_diff(before, after) == [
        LineDiff(2, "CBL-USB-C-1M", 50, 30),
        LineDiff(3, "HUB-7P", 4, 0),
    ]


@pytest.mark.parametrize(
    ("changes", "code", "line"),
    [
        # line 4 of a three-line draft
        ([LineChange(4, 1)], EditProblem.UNKNOWN_LINE, 4),
        # lines are numbered from 1: there is no line 0
        ([LineChange(0, 1)], EditProblem.UNKNOWN_LINE, 0),
        # one line changed twice in one edit: which one did they mean?
        ([LineChange(2, 30), LineChange(2, 20)], EditProblem.DUPLICATE_LINE, 2),
        # more than the requester asked for: a larger order is their new sheet
        ([LineChange(2, 51)], EditProblem.ABOVE_SHOWN, 2),
        # a quantity below zero
        ([LineChange(1, -1)], EditProblem.NEGATIVE, 1),
        # not a whole number: True is an int to Python, never a quantity here
        ([LineChange(1, True)], EditProblem.NEGATIVE, 1),
        # every line dropped: that is a rejection
        (
            [LineChange(1, 0), LineChange(2, 0), LineChange(3, 0)],
            EditProblem.NOTHING_LEFT,
            None,
        ),
        # every quantity as shown: that is an approval
        ([LineChange(1, 10), LineChange(3, 4)], EditProblem.NO_CHANGE, None),
        # no change at all
        ([], EditProblem.NO_CHANGE, None),
    ],
    ids=[
        "unknown-line",
        "line-zero",
        "duplicate",
        "above-shown",
        "negative",
        "bool",
        "nothing-left",
        "same-quantities",
        "empty",
    ],
)
def test_an_edit_that_cannot_be_made_is_refused_with_its_code(changes, code, line):
    with pytest.raises(EditRefused) as refused:
        edited_draft(shown(), changes)
    assert (refused.value.code, refused.value.line) == (code, line)


@pytest.mark.parametrize(
    ("flag", "changes", "after"),
    [
        # a dropped line's flag goes with it
        (
            Flag(FlagCode.PRICE_CHANGED, "HUB-7P", (250_000, 300_000), "PO-2026-0041"),
            [LineChange(3, 0)],
            None,
        ),
        # a kept line's price flag stays as it was: the price did not change
        (
            Flag(FlagCode.PRICE_CHANGED, "ADP-65W", (400_000, 450_000), "PO-2026-0041"),
            [LineChange(3, 0)],
            Flag(FlagCode.PRICE_CHANGED, "ADP-65W", (400_000, 450_000), "PO-2026-0041"),
        ),
        # trimmed to the supplier's maximum: no longer above it
        (Flag(FlagCode.QUANTITY_ABOVE_MAX, "CBL-USB-C-1M", (50, 40)), [LineChange(2, 40)], None),
        # trimmed, still above it: the flag says the new quantity
        (
            Flag(FlagCode.QUANTITY_ABOVE_MAX, "CBL-USB-C-1M", (50, 40)),
            [LineChange(2, 45)],
            Flag(FlagCode.QUANTITY_ABOVE_MAX, "CBL-USB-C-1M", (45, 40)),
        ),
        # below the minimum already: lower still
        (
            Flag(FlagCode.QUANTITY_BELOW_MIN, "HUB-7P", (4, 5)),
            [LineChange(3, 2)],
            Flag(FlagCode.QUANTITY_BELOW_MIN, "HUB-7P", (2, 5)),
        ),
        # a jump to five times the last order trimmed to less: no jump
        (
            Flag(FlagCode.QUANTITY_JUMP, "CBL-USB-C-1M", (50, 10), "PO-2026-0041"),
            [LineChange(2, 30)],
            None,
        ),
        # the total trimmed below the two-approver threshold: no dual-approval flag
        (
            Flag(FlagCode.DUAL_APPROVAL, "", (6_950_000, 6_000_000)),
            [LineChange(3, 0)],
            None,
        ),
        # still above it: the flag carries the new total
        (
            Flag(FlagCode.DUAL_APPROVAL, "", (6_950_000, 5_000_000)),
            [LineChange(3, 0)],
            Flag(FlagCode.DUAL_APPROVAL, "", (5_750_000, 5_000_000)),
        ),
    ],
    ids=[
        "dropped-line",
        "kept-price",
        "max-met",
        "max-still",
        "min-lower",
        "jump-gone",
        "dual-gone",
        "dual-total",
    ],
)
def test_flags_follow_the_new_quantities(flag, changes, after):
    edited = edited_draft(shown(flag), changes)
    assert edited.flags == (() if after is None else (after,))


def test_a_trim_below_the_terms_minimum_is_flagged():
    edited = edited_draft(shown(), [LineChange(2, 8)], minimums={"CBL-USB-C-1M": 10})
    assert edited.flags == (Flag(FlagCode.QUANTITY_BELOW_MIN, "CBL-USB-C-1M", (8, 10)),)


@given(
    st.lists(st.tuples(st.integers(1, 3), st.integers(0, 50)), unique_by=lambda c: c[0], max_size=3)
)
def test_the_diff_names_exactly_the_lines_that_changed(pairs):
    before = shown()
    changes = [LineChange(n, min(q, before.lines[n - 1].quantity)) for n, q in pairs]
    try:
        after = edited_draft(before, changes)
    except EditRefused as refused:
        assert refused.code in {EditProblem.NO_CHANGE, EditProblem.NOTHING_LEFT}
        return
    asked = {c.line: c.quantity for c in changes if c.quantity != before.lines[c.line - 1].quantity}
    diff = line_diff(before, after)
    assert {d.line: d.after for d in diff} == asked
    assert len(after.lines) == 3 - sum(1 for q in asked.values() if q == 0)


@pytest.mark.parametrize(
    "client_id",
    [
        "",  # empty
        "x" * 65,  # longer than 64
        "queued 1",  # a space
        "a/b",  # a slash: it would be a path in a URL
        "ключ",  # not ASCII
    ],
    ids=["empty", "too-long", "space", "slash", "non-ascii"],
)
def test_a_malformed_client_id_is_refused_before_anything_is_read(client_id):
    with pytest.raises(BadClientId):
        Review("PO-1", 1, Verdict.APPROVE, 1, "0" * 64, client_id=client_id)
    with pytest.raises(BadClientId):
        Edit("PO-1", 1, 1, "0" * 64, (LineChange(1, 1),), client_id=client_id)


def test_a_replay_must_repeat_its_request_exactly():
    at = datetime(2026, 12, 2, tzinfo=UTC)
    first = Review("PO-1", 1, Verdict.APPROVE, 1, "0" * 64, client_id="q-1", device_time=at)
    assert first.request_sha256 == Review("PO-1", 1, Verdict.APPROVE, 1, "0" * 64).request_sha256
    for other in (
        Review("PO-2", 1, Verdict.APPROVE, 1, "0" * 64),  # another PO
        Review("PO-1", 1, Verdict.REJECT, 1, "0" * 64, "no"),  # another verdict
        Review("PO-1", 1, Verdict.APPROVE, 2, "0" * 64),  # another version
    ):
        assert other.request_sha256 != first.request_sha256
    trim = Edit("PO-1", 1, 1, "0" * 64, (LineChange(1, 1),))
    assert trim.request_sha256 != Edit("PO-1", 1, 1, "0" * 64, (LineChange(1, 2),)).request_sha256
    assert trim.request_sha256 != first.request_sha256

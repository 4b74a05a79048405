"""The Mini App's decision body (bot/web/decisions.py) against whatever a page, or anyone holding
initData, can POST (issue 21): arbitrary bytes, arbitrary JSON of any shape (deeply nested,
odd unicode, lone surrogates, numbers too long to read) and bodies shaped like a decision with
values of every kind. `parse` gives a decision every store and answer can hold, or
BadDecision, and never raises anything else."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.web.decisions import Asked, BadDecision, parse

# Fast enough for the unit suite (a body is at most a few kilobytes), deterministic.
FUZZ = settings(max_examples=200, deadline=None, derandomize=True)
HASH = "ab" * 32


def holds(raw: bytes) -> None:
    """The property: a decision the store and an answer can hold, or BadDecision saying why."""
    try:
        asked = parse(raw)
    except BadDecision as bad:
        assert str(bad)
        return
    assert isinstance(asked, Asked)
    assert asked.client_id.isascii() and 1 <= len(asked.client_id) <= 64
    assert type(asked.draft_version) is int and asked.draft_version >= 1
    assert asked.reason is None or asked.reason.encode("utf-8")  # no lone surrogate
    assert all(change.line >= 1 and change.quantity >= 0 for change in asked.changes)
    assert asked.device_time is None or asked.device_time.tzinfo is not None


# Any unicode, lone surrogates included: JSON escapes them, and a page can send them so.
any_text = st.text(st.characters(codec=None, categories=None), max_size=12)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    any_text,
    st.sampled_from(["approve", "reject", HASH, "2026-12-02T06:00:00Z", "9999-12-31T23:59-23:59"]),
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(any_text, inner, max_size=3),
    max_leaves=15,
)
# A decision the page could send, each field possibly replaced by anything at all.
lone_surrogates = st.text(st.characters(categories=["Cs"]), min_size=1, max_size=3)
required = {
    "id": st.from_regex(r"[A-Za-z0-9_-]{1,64}", fullmatch=True),
    "verdict": st.sampled_from(["approve", "reject"]),
    "draft_version": st.integers(0, 10**30),
    "draft_hash": st.just(HASH),
}
optional = {
    "reason": st.one_of(any_text, st.tuples(any_text, lone_surrogates).map("".join)),
    "changes": st.lists(
        st.fixed_dictionaries({"line": st.integers(), "quantity": st.integers()}), max_size=3
    ),
    "device_time": st.datetimes(timezones=st.timezones()).map(str),
}
decisions = st.tuples(
    st.fixed_dictionaries(required, optional=optional),
    st.dictionaries(st.sampled_from(sorted({*required, *optional})), values, max_size=2),
).map(lambda both: {**both[0], **both[1]})


def _dumped(value: Any, ascii_only: bool) -> bytes:
    text = json.dumps(value, ensure_ascii=ascii_only)
    return text.encode("utf-8", "surrogatepass")  # as a careless client might send it


@FUZZ
@given(st.binary(max_size=200))
def test_property_any_bytes(raw: bytes) -> None:
    holds(raw)


@FUZZ
@given(values, st.booleans())
def test_property_any_json(value: Any, ascii_only: bool) -> None:
    holds(_dumped(value, ascii_only))


@FUZZ
@given(decisions, st.booleans())
def test_property_bodies_shaped_like_a_decision(body: dict[str, Any], ascii_only: bool) -> None:
    holds(_dumped(body, ascii_only))


@FUZZ
@given(
    st.integers(1, 5000),
    st.sampled_from([b"[", b'{"a":', b'{"changes":[', b'[{"x":"]",']),
    st.booleans(),
)
def test_property_any_depth(depth: int, opener: bytes, closed: bool) -> None:
    closer = {b"[": b"]", b'{"a":': b"}", b'{"changes":[': b"]}", b'[{"x":"]",': b"}]"}[opener]
    holds(opener * depth + (b"1" + closer * depth if closed else b""))


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (b"[" * 3000, "the body nests deeper than 16"),  # the 3 KB of brackets
        (b'{"id": "\xff"}', "the body is not UTF-8"),
        (b'{"draft_version": 1' + b"0" * 5000 + b"}", "the body is not JSON"),  # int() refuses
    ],
)
def test_what_a_hostile_body_is_told(body: bytes, said: str) -> None:
    with pytest.raises(BadDecision) as refused:
        parse(body)
    assert str(refused.value) == said


@pytest.mark.parametrize("blank", ["\u200b", " \t", "\u2066\u2069", "\x00"])
def test_a_reason_of_nothing_visible_is_no_reason(blank: str) -> None:
    body = {"id": "d-1", "verdict": "approve", "draft_version": 1, "draft_hash": HASH}
    assert parse(json.dumps({**body, "reason": blank}).encode()).reason is None
    with pytest.raises(BadDecision, match="a rejection has a reason"):
        parse(json.dumps({**body, "verdict": "reject", "reason": blank}).encode())

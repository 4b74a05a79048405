"""Drafts: canonical bytes, their sha256, validation, and the round trip."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from core.drafting.drafts import (
    Draft,
    DraftLine,
    Flag,
    canonical_bytes,
    draft_hash,
    from_canonical,
    to_dict,
)
from core.errors import InvalidDraft

BOLTS = DraftLine(sku="BOLT-M8", description="M8 bolts, zinc", quantity=500, unit_price_paisa=1250)
NUTS = DraftLine(sku="NUT-M8", description="M8 nuts", quantity=500, unit_price_paisa=400)

# The canonical form of `_draft()`, typed out by hand: sorted keys at both levels, no spaces,
# money as bare integers.
PINNED_BYTES = (
    b'{"lines":['
    b'{"description":"M8 bolts, zinc","quantity":500,"sku":"BOLT-M8","unit_price_paisa":1250},'
    b'{"description":"M8 nuts","quantity":500,"sku":"NUT-M8","unit_price_paisa":400}],'
    b'"po_number":"PO-2026-014",'
    b'"recipient_email":"orders@karachi-traders.example.pk",'
    b'"supplier_id":"SUP-042",'
    b'"supplier_name":"Karachi Traders",'
    b'"terms_version":"net30-v3"}'
)
# sha256 of PINNED_BYTES, computed once outside core; a change here breaks every stored approval.
PINNED_HASH = "216d6d340b0d17ac52ebc342216e1b6706a79a62f69dd17622f9e28e9e16081c"


def _draft(**changes: Any) -> Draft:
    fields: dict[str, Any] = {
        "po_number": "PO-2026-014",
        "supplier_id": "SUP-042",
        "supplier_name": "Karachi Traders",
        "recipient_email": "orders@karachi-traders.example.pk",
        "terms_version": "net30-v3",
        "lines": (BOLTS, NUTS),
    }
    return Draft(**{**fields, **changes})


def test_canonical_bytes_are_sorted_compact_json_with_integer_paisa() -> None:
    """The exact bytes a reviewer's approval is bound to."""
    assert canonical_bytes(_draft()) == PINNED_BYTES


def test_canonical_money_fields_are_json_integers() -> None:
    """Quantities and prices come back from the JSON as int, never float."""
    data = json.loads(canonical_bytes(_draft()))
    money = [(line["quantity"], line["unit_price_paisa"]) for line in data["lines"]]
    assert money == [(500, 1250), (500, 400)]
    assert all(type(v) is int for pair in money for v in pair)


def test_hash_is_sha256_of_canonical_bytes_and_pinned() -> None:
    """draft_hash is hex sha256 of the canonical bytes, and its value does not drift."""
    assert hashlib.sha256(PINNED_BYTES).hexdigest() == PINNED_HASH
    assert draft_hash(_draft()) == PINNED_HASH


def test_hash_is_stable_across_calls_and_instances() -> None:
    """Hashing the same draft twice, or an equal copy, gives the same digest."""
    first, second = _draft(), _draft()
    assert first is not second
    assert draft_hash(first) == draft_hash(first) == draft_hash(second)


def test_non_ascii_text_is_encoded_as_utf8() -> None:
    """Urdu names go into the bytes as UTF-8, not as \\u escapes."""
    name = "کراچی ٹریڈرز"
    raw = canonical_bytes(_draft(supplier_name=name))
    assert f'"supplier_name":"{name}"'.encode() in raw
    assert b"\\u" not in raw


def test_total_is_sum_of_line_totals_in_paisa() -> None:
    """500 × 12.50 + 500 × 4.00 rupees = 8,250 rupees."""
    assert _draft().total_paisa == 825_000


MATERIAL_CHANGES = [
    # another supplier gets the order
    pytest.param({"supplier_id": "SUP-043"}, id="supplier_id"),
    # the mail goes to someone else
    pytest.param({"recipient_email": "sales@karachi-traders.example.pk"}, id="recipient_email"),
    # other contract terms
    pytest.param({"terms_version": "net30-v4"}, id="terms_version"),
    # the name printed on the PO
    pytest.param({"supplier_name": "Karachi Traders Ltd"}, id="supplier_name"),
    # the PO number itself
    pytest.param({"po_number": "PO-2026-015"}, id="po_number"),
    # one more bolt
    pytest.param({"lines": (dataclasses.replace(BOLTS, quantity=501), NUTS)}, id="line_quantity"),
    # one paisa dearer
    pytest.param(
        {"lines": (BOLTS, dataclasses.replace(NUTS, unit_price_paisa=401))}, id="line_unit_price"
    ),
    # a different article at the same price
    pytest.param({"lines": (dataclasses.replace(BOLTS, sku="BOLT-M10"), NUTS)}, id="line_sku"),
    # the description the supplier reads
    pytest.param(
        {"lines": (BOLTS, dataclasses.replace(NUTS, description="M8 nuts, steel"))},
        id="line_description",
    ),
    # a line added
    pytest.param(
        {"lines": (BOLTS, NUTS, DraftLine("WASHER-M8", "M8 washers", 500, 150))},
        id="add_line",
    ),
    # a line removed
    pytest.param({"lines": (BOLTS,)}, id="remove_line"),
]


@pytest.mark.parametrize("changes", MATERIAL_CHANGES)
def test_material_change_changes_hash(changes: dict[str, Any]) -> None:
    """Any change a supplier would notice gives a different hash (so old approvals lapse)."""
    assert draft_hash(_draft(**changes)) != PINNED_HASH


def test_keyword_order_does_not_matter() -> None:
    """Drafts built with keyword arguments in another order are equal and hash equal."""
    lines = (
        DraftLine(unit_price_paisa=1250, quantity=500, description="M8 bolts, zinc", sku="BOLT-M8"),
        DraftLine(quantity=500, sku="NUT-M8", unit_price_paisa=400, description="M8 nuts"),
    )
    shuffled = Draft(
        lines=lines,
        terms_version="net30-v3",
        supplier_name="Karachi Traders",
        recipient_email="orders@karachi-traders.example.pk",
        supplier_id="SUP-042",
        po_number="PO-2026-014",
    )
    assert shuffled == _draft()
    assert draft_hash(shuffled) == PINNED_HASH


def test_round_trip_through_canonical_bytes() -> None:
    """from_canonical(canonical_bytes(d)) rebuilds an equal draft with tuple lines."""
    again = from_canonical(canonical_bytes(_draft()))
    assert again == _draft()
    assert isinstance(again.lines, tuple)
    assert canonical_bytes(again) == PINNED_BYTES  # the bytes it was read from, kept
    assert canonical_bytes(dataclasses.replace(again)) == PINNED_BYTES  # and written out anew


@pytest.mark.parametrize(
    "changes",
    [
        # free samples are allowed: zero price is not negative
        pytest.param({"lines": (dataclasses.replace(BOLTS, unit_price_paisa=0),)}, id="price_0"),
        # the smallest order
        pytest.param({"lines": (dataclasses.replace(BOLTS, quantity=1),)}, id="quantity_1"),
        # 64 characters is the longest plain identifier
        pytest.param({"po_number": "P" * 64}, id="po_64_chars"),
        # dots, slashes and underscores are allowed after the first character
        pytest.param({"supplier_id": "SUP_42/a.b-c"}, id="supplier_punctuation"),
    ],
)
def test_boundary_values_are_valid(changes: dict[str, Any]) -> None:
    """Values on the edge of the rules still make a draft, unchanged."""
    draft = _draft(**changes)
    assert {name: getattr(draft, name) for name in changes} == changes


INVALID = [
    # no lines at all
    pytest.param({"lines": ()}, r"^a purchase order needs at least one line$", id="no_lines"),
    # zero quantity, reported with its line number
    pytest.param(
        {"lines": (BOLTS, dataclasses.replace(NUTS, quantity=0))},
        r"^line 2: quantity must be positive$",
        id="zero_quantity_line2",
    ),
    # negative quantity on the first line
    pytest.param(
        {"lines": (dataclasses.replace(BOLTS, quantity=-5), NUTS)},
        r"^line 1: quantity must be positive$",
        id="negative_quantity_line1",
    ),
    # negative price, reported with its line number
    pytest.param(
        {"lines": (BOLTS, dataclasses.replace(NUTS, unit_price_paisa=-1))},
        r"^line 2: unit price must not be negative$",
        id="negative_price_line2",
    ),
    # a SKU with a space, on the third line
    pytest.param(
        {"lines": (BOLTS, NUTS, DraftLine("WASHER M8", "washers", 1, 1))},
        r"^line 3: SKU 'WASHER M8' is not a plain identifier$",
        id="bad_sku_line3",
    ),
    # e-mail without an @
    pytest.param({"recipient_email": "orders.example.pk"}, r"e-mail", id="email_no_at"),
    # e-mail without a top-level domain
    pytest.param({"recipient_email": "orders@example"}, r"e-mail", id="email_no_tld"),
    # e-mail with a one-letter top-level domain
    pytest.param({"recipient_email": "orders@example.p"}, r"e-mail", id="email_short_tld"),
    # e-mail with two @
    pytest.param({"recipient_email": "a@b@example.pk"}, r"e-mail", id="email_two_at"),
    # e-mail with a space
    pytest.param({"recipient_email": "or ders@example.pk"}, r"e-mail", id="email_space"),
    # e-mail in a display-name wrapper (header injection risk)
    pytest.param({"recipient_email": "<orders@example.pk>"}, r"e-mail", id="email_brackets"),
    # e-mail with a second recipient smuggled in
    pytest.param({"recipient_email": "a@example.pk,b@evil.pk"}, r"e-mail", id="email_comma"),
    # empty e-mail
    pytest.param({"recipient_email": ""}, r"e-mail", id="email_empty"),
    # empty PO number
    pytest.param({"po_number": ""}, r"^PO number '' is not", id="po_empty"),
    # PO number with a space
    pytest.param({"po_number": "PO 2026"}, r"^PO number 'PO 2026' is not", id="po_space"),
    # PO number with a colon would break the idempotency key's fields
    pytest.param({"po_number": "PO:2026"}, r"^PO number", id="po_colon"),
    # PO number starting with punctuation
    pytest.param({"po_number": "-PO-1"}, r"^PO number", id="po_leading_dash"),
    # PO number one character too long
    pytest.param({"po_number": "P" * 65}, r"^PO number", id="po_65_chars"),
    # PO number with a newline (header injection)
    pytest.param({"po_number": "PO-1\nBcc: x"}, r"^PO number", id="po_newline"),
    # bad supplier id
    pytest.param({"supplier_id": "SUP 42"}, r"^supplier id 'SUP 42'", id="supplier_space"),
    # empty terms version
    pytest.param({"terms_version": ""}, r"^terms version is empty$", id="terms_empty"),
]


@pytest.mark.parametrize(("changes", "message"), INVALID)
def test_invalid_draft_is_refused_with_a_precise_message(
    changes: dict[str, Any], message: str
) -> None:
    """A draft that cannot be sent raises InvalidDraft naming the field (and the line)."""
    with pytest.raises(InvalidDraft, match=message):
        _draft(**changes)


@pytest.mark.parametrize(
    "line",
    [
        # float paisa: canonical bytes would hold 1250.0, not an integer
        pytest.param(dataclasses.replace(BOLTS, unit_price_paisa=1250.0), id="float_price"),
        # bool is an int subclass; JSON would say `true`
        pytest.param(dataclasses.replace(BOLTS, unit_price_paisa=True), id="bool_price"),
        # NaN is not valid JSON at all
        pytest.param(dataclasses.replace(BOLTS, unit_price_paisa=float("nan")), id="nan_price"),
        # a fractional quantity makes a fractional total
        pytest.param(dataclasses.replace(BOLTS, quantity=1.5), id="float_quantity"),
    ],
)
def test_non_integer_money_is_refused(line: DraftLine) -> None:
    """Money and quantities must be int (not bool, not float) so the hash sees integers."""
    with pytest.raises(InvalidDraft, match=r"^line 1: "):
        _draft(lines=(line,))


def test_equal_drafts_never_hash_differently() -> None:
    """Draft equality and hash equality agree, even for 1250 vs 1250.0 (which compare equal)."""
    as_int = (dataclasses.replace(BOLTS, unit_price_paisa=1250),)
    try:
        as_float = _draft(lines=(dataclasses.replace(BOLTS, unit_price_paisa=1250.0),))
    except InvalidDraft:
        return  # refusing the float is also a correct fix
    assert as_float == _draft(lines=as_int)
    assert draft_hash(as_float) == draft_hash(_draft(lines=as_int))


@pytest.mark.parametrize(
    "email",
    [
        # an empty label before the top-level domain
        pytest.param("orders@..pk", id="double_dot"),
        # the domain starts with a dot
        pytest.param("orders@.example.pk", id="leading_dot"),
    ],
)
def test_email_with_empty_domain_label_is_refused(email: str) -> None:
    """A domain with an empty label cannot receive mail; refuse it before approval."""
    with pytest.raises(InvalidDraft, match="e-mail"):
        _draft(recipient_email=email)


# --- properties -----------------------------------------------------------------------------

_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
_LOWER = "abcdefghijklmnopqrstuvwxyz"
# Identifiers as core defines them: alphanumeric runs joined by single '.', '_' or '-'.
_IDENTS = st.from_regex(r"[A-Za-z0-9]{1,6}(?:[._-][A-Za-z0-9]{1,6}){0,2}", fullmatch=True)
_EMAILS = st.builds(
    "{}@{}.{}".format,
    # a dot-atom: dots only between runs of other characters
    st.from_regex(r"[a-z0-9_+-]{1,4}(?:\.[a-z0-9_+-]{1,4})?", fullmatch=True),
    st.text(alphabet=_LOWER + "0123456789", min_size=1, max_size=8),
    st.text(alphabet=_LOWER, min_size=2, max_size=6),
)
_TEXT = st.text(max_size=12)
_LINES = st.builds(
    DraftLine,
    sku=_IDENTS,
    description=_TEXT,
    quantity=st.integers(min_value=1, max_value=10**6),
    unit_price_paisa=st.integers(min_value=0, max_value=10**10),
)
_DRAFTS = st.builds(
    Draft,
    po_number=_IDENTS,
    supplier_id=_IDENTS,
    supplier_name=_TEXT,
    recipient_email=_EMAILS,
    terms_version=st.text(min_size=1, max_size=8),
    lines=st.lists(_LINES, min_size=1, max_size=4).map(tuple),
)


@st.composite
def _draft_and_variant(draw: st.DrawFn) -> tuple[Draft, Draft]:
    """A draft and a copy with exactly one field (or one line field) changed."""
    draft = draw(_DRAFTS)
    top = {
        "po_number": _IDENTS,
        "supplier_id": _IDENTS,
        "supplier_name": _TEXT,
        "recipient_email": _EMAILS,
        "terms_version": st.text(min_size=1, max_size=8),
    }
    per_line = {
        "sku": _IDENTS,
        "description": _TEXT,
        "quantity": st.integers(min_value=1, max_value=10**6),
        "unit_price_paisa": st.integers(min_value=0, max_value=10**10),
        "category": st.sampled_from(["", "chargers", "accessories"]),
    }
    target = draw(st.sampled_from([*top, "add_line", "drop_line", *per_line]))
    if target in top:
        old = getattr(draft, target)
        new = draw(top[target].filter(lambda v: v != old))
        return draft, dataclasses.replace(draft, **{target: new})
    if target == "add_line":
        return draft, dataclasses.replace(draft, lines=(*draft.lines, draw(_LINES)))
    if target == "drop_line":
        assume(len(draft.lines) > 1)
        index = draw(st.integers(min_value=0, max_value=len(draft.lines) - 1))
        return draft, dataclasses.replace(
            draft, lines=draft.lines[:index] + draft.lines[index + 1 :]
        )
    index = draw(st.integers(min_value=0, max_value=len(draft.lines) - 1))
    line = draft.lines[index]
    old = getattr(line, target)
    changed = dataclasses.replace(
        line, **{target: draw(per_line[target].filter(lambda v: v != old))}
    )
    lines = (*draft.lines[:index], changed, *draft.lines[index + 1 :])
    return draft, dataclasses.replace(draft, lines=lines)


@settings(max_examples=150, deadline=None)
@given(_draft_and_variant())
def test_property_one_field_changed_changes_hash(pair: tuple[Draft, Draft]) -> None:
    """Changing any single field, anywhere, changes the hash."""
    draft, variant = pair
    assert draft != variant
    assert draft_hash(draft) != draft_hash(variant)


@settings(max_examples=50, deadline=None)
@given(_DRAFTS, _DRAFTS)
def test_property_different_drafts_hash_differently(first: Draft, second: Draft) -> None:
    """Two drafts hash equal exactly when they are equal."""
    assert (draft_hash(first) == draft_hash(second)) == (first == second)


@settings(max_examples=100, deadline=None)
@given(_DRAFTS)
def test_property_round_trip(draft: Draft) -> None:
    """Canonical bytes parse back to an equal draft with the same bytes and hash."""
    again = from_canonical(canonical_bytes(draft))
    assert again == draft
    assert canonical_bytes(again) == canonical_bytes(draft)
    assert draft_hash(again) == draft_hash(draft)
    # Written out anew, not the kept bytes: from_canonical may keep them only because this holds.
    rebuilt = dataclasses.replace(again)
    assert canonical_bytes(rebuilt) == canonical_bytes(draft)
    assert draft_hash(rebuilt) == draft_hash(draft)


_CATEGORIES = st.sampled_from(["", "chargers", "usb & power", "چائے"])
_FLAGS = st.builds(
    Flag,
    code=st.sampled_from(["price_drift", "new_item", "first_order"]),
    sku=_IDENTS,
    amounts=st.lists(st.integers(min_value=0, max_value=10**9), max_size=3).map(tuple),
    ref=_TEXT,
)
_FULL_DRAFTS = st.builds(
    Draft,
    po_number=_IDENTS,
    supplier_id=_IDENTS,
    supplier_name=_TEXT,
    recipient_email=_EMAILS,
    terms_version=st.text(min_size=1, max_size=8),
    lines=st.lists(
        st.builds(
            DraftLine,
            sku=_IDENTS,
            description=_TEXT,
            quantity=st.integers(min_value=1, max_value=10**6),
            unit_price_paisa=st.integers(min_value=0, max_value=10**10),
            note=_TEXT,
            category=_CATEGORIES,
        ),
        min_size=1,
        max_size=4,
    ).map(tuple),
    flags=st.lists(_FLAGS, max_size=3).map(tuple),
)


@settings(max_examples=150, deadline=None)
@given(_FULL_DRAFTS)
def test_property_canonical_bytes_are_json_dumps_of_to_dict(draft: Draft) -> None:
    """The bytes made member by member are exactly json.dumps of the whole draft, sorted, with
    notes, flags and any text (quotes, backslashes, Urdu, surrogate-free unicode)."""
    whole = json.dumps(to_dict(draft), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert canonical_bytes(draft) == whole.encode("utf-8")


@settings(max_examples=150, deadline=None)
@given(_FULL_DRAFTS, _IDENTS, st.booleans())
def test_property_renumbered_is_the_draft_under_another_number(
    draft: Draft, number: str, made: bool
) -> None:
    """renumbered() is dataclasses.replace of the PO number, bytes and hash included, whether
    or not the draft's own bytes were made before."""
    if made:
        canonical_bytes(draft)
        assert draft.total_paisa == draft.subtotal_paisa + draft.gst_paisa
    twin = draft.renumbered(number)
    expected = dataclasses.replace(draft, po_number=number)
    assert twin == expected and hash(twin) == hash(expected)
    assert twin.total_paisa == expected.total_paisa == sum(line.gross_paisa for line in twin.lines)
    assert canonical_bytes(twin) == canonical_bytes(expected)
    assert draft_hash(twin) == draft_hash(expected)
    assert draft.po_number != number or draft_hash(twin) == draft_hash(draft)


def test_renumbered_checks_the_new_number() -> None:
    with pytest.raises(InvalidDraft, match="PO number 'PO/1' is not a plain identifier"):
        _draft().renumbered("PO/1")


def test_renumbered_keeps_the_pinned_bytes() -> None:
    assert canonical_bytes(_draft(po_number="NEW-1").renumbered("PO-2026-014")) == PINNED_BYTES


def test_a_category_is_in_the_bytes_only_when_the_line_has_one() -> None:
    """An uncategorised line's bytes are what they were before categories existed."""
    plain = _draft()
    line = dataclasses.replace(plain.lines[0], category="chargers")
    categorised = dataclasses.replace(plain, lines=(line, *plain.lines[1:]))
    assert b"category" not in canonical_bytes(plain)
    assert json.loads(canonical_bytes(categorised))["lines"][0]["category"] == "chargers"
    assert from_canonical(canonical_bytes(categorised)) == categorised
    assert draft_hash(categorised) != draft_hash(plain)

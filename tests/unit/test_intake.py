"""From sheet rows to drafts: matching, flags, hashes and re-drafting, all pure."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import date, timedelta
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.files.sheets import read_csv_text
from bot.words.flags import flag_text as describe
from bot.words.problems import problem_lines
from core.drafting.drafts import Draft, Flag, canonical_bytes, draft_hash, from_canonical
from core.drafting.flags import FlagCode
from core.drafting.intake import Branches, PastLine, build_draft, check_sheet, redraft
from core.drafting.tables import Row, Table
from core.drafting.terms import Offer, Supplier, Terms, parse_terms

TERMS_FILE = Path(__file__).parent.parent / "data" / "terms" / "good.csv"
DUAL_ABOVE = 500_000 * 100  # the default threshold, in paisa
HALL, SADDAR = "SUP-LHR-01", "SUP-KHI-02"


def good_terms(version: str = "T1") -> Terms:
    terms, problems = parse_terms(read_csv_text(TERMS_FILE.read_bytes()))
    assert terms is not None and not problems
    return replace(terms, version=version)


def sheet(*rows: tuple[object, ...], header=("sku", "quantity", "supplier_id", "notes")) -> Table:
    cells = [header, *rows]
    return Table(tuple(Row(n, tuple(c)) for n, c in enumerate(cells, start=1)))


def drafts_of(table: Table, terms: Terms, history=None, dual=DUAL_ABOVE) -> list[Draft]:
    orders, problems = check_sheet(table, terms)
    assert problems == []
    return [
        build_draft(order, f"PO-2026-{n:04d}", terms, history or {}, dual)
        for n, order in enumerate(orders, start=1)
    ]


def codes(draft: Draft) -> list[tuple[str, str]]:
    return [(flag.code, flag.sku) for flag in draft.flags]


def test_one_draft_per_supplier_lines_sorted_and_totals_in_paisa():
    rows = (
        ("TEA-500G", "2", "", ""),
        ("chg-65w", "3", "", "for Eid"),
        ("cbl-usbc-1m", "20", "", ""),
    )
    saddar, hall = drafts_of(sheet(*rows), good_terms())  # one per supplier, by supplier id
    assert (hall.supplier_id, hall.supplier_name, hall.recipient_email) == (
        HALL, "Hall Road Traders", "orders@hallroad.pk",
    )  # fmt: skip
    assert [(line.sku, line.quantity, line.unit_price_paisa) for line in hall.lines] == [
        ("CBL-USBC-1M", 20, 45_000),  # the terms' spelling, whatever the sheet typed
        ("CHG-65W", 3, 650_050),
    ]
    assert hall.lines[1].note == "for Eid"
    assert hall.total_paisa == 20 * 45_000 + 3 * 650_050
    assert [line.sku for line in saddar.lines] == ["TEA-500G"]
    assert hall.terms_version == saddar.terms_version == "T1"


def test_cheapest_supplier_is_chosen_and_flagged_with_the_runner_up():
    (draft,) = drafts_of(sheet(("CBL-USBC-1M", "20", "", "")), good_terms())
    assert draft.supplier_id == HALL
    (flag,) = draft.flags
    assert flag == Flag(FlagCode.LOWEST_PRICE_CHOSEN, "CBL-USBC-1M", (45_000, 47_000, 2), SADDAR)
    assert describe(flag) == (
        "CBL-USBC-1M: offered by 2 suppliers; this one is the cheapest at Rs 450.00 "
        "(next: SUP-KHI-02 at Rs 470.00)"
    )


def test_a_named_dearer_supplier_is_honoured_and_the_cheaper_one_shown():
    (draft,) = drafts_of(sheet(("CBL-USBC-1M", "20", "sup-khi-02", "")), good_terms())
    assert draft.supplier_id == SADDAR
    assert draft.flags == (Flag(FlagCode.CHEAPER_ELSEWHERE, "CBL-USBC-1M", (47_000, 45_000), HALL),)
    assert (
        describe(draft.flags[0])
        == "CBL-USBC-1M: SUP-LHR-01 offers it for Rs 450.00, here Rs 470.00"
    )


def test_quantities_outside_the_limits_are_flags_not_errors():
    (draft,) = drafts_of(
        sheet(("CHG-65W", "60", "", ""), ("CBL-USBC-1M", "5", HALL, "")), good_terms()
    )
    assert codes(draft) == [
        (FlagCode.QUANTITY_BELOW_MIN, "CBL-USBC-1M"),
        (FlagCode.QUANTITY_ABOVE_MAX, "CHG-65W"),
    ]
    texts = [describe(f) for f in draft.flags]
    assert texts == [
        "CBL-USBC-1M: 5 ordered, below the supplier's minimum of 10",
        "CHG-65W: 60 ordered, above the supplier's maximum of 50",
    ]


def test_price_and_quantity_compared_with_the_last_sent_po():
    history = {(HALL.casefold(), "chg-65w"): PastLine("PO-2026-0007", 600_000, 2)}
    (draft,) = drafts_of(sheet(("CHG-65W", "10", "", "")), good_terms(), history)
    assert codes(draft) == [
        (FlagCode.PRICE_CHANGED, "CHG-65W"),
        (FlagCode.QUANTITY_JUMP, "CHG-65W"),
    ]
    price, jump = draft.flags
    assert price.amounts == (600_000, 650_050) and price.ref == "PO-2026-0007"
    assert (
        describe(price)
        == "CHG-65W: unit price Rs 6,500.50, was Rs 6,000.00 on PO-2026-0007 (+8.3%)"
    )
    assert describe(jump) == "CHG-65W: 10 ordered, 5× the 2 on PO-2026-0007"


def test_same_price_and_usual_quantity_raise_no_history_flag():
    history = {(HALL.casefold(), "chg-65w"): PastLine("PO-2026-0007", 650_050, 3)}
    (draft,) = drafts_of(sheet(("CHG-65W", "14", "", "")), good_terms(), history)
    assert draft.flags == ()  # 14 < 5 x 3


def test_total_above_the_threshold_needs_two_approvers():
    (draft,) = drafts_of(sheet(("CHG-65W", "40", "", "")), good_terms(), dual=100_000)
    assert draft.flags == (Flag(FlagCode.DUAL_APPROVAL, "", (40 * 650_050, 100_000)),)
    assert (
        describe(draft.flags[0]) == "Total Rs 260,020.00 is above Rs 1,000.00: two approvers needed"
    )
    (same,) = drafts_of(sheet(("CHG-65W", "40", "", "")), good_terms(), dual=40 * 650_050)
    assert same.flags == ()  # at the threshold: one approver is enough


def test_a_free_item_is_flagged():
    terms = good_terms()
    free = replace(terms, offers=(*terms.offers, Offer(HALL, "BAG-1", "Carry bag", 0)))
    (draft,) = drafts_of(sheet(("BAG-1", "100", "", "")), free)
    assert codes(draft) == [(FlagCode.ZERO_PRICE, "BAG-1")]


def test_every_flag_code_has_a_sentence():
    whole_po = {FlagCode.DUAL_APPROVAL, FlagCode.SUPPLIER_DETAILS_CHANGED}
    dated = {FlagCode.NEEDED_TOO_SOON: (20261206, 20261208, 3)}  # dates as YYYYMMDD
    for code in FlagCode:
        amounts = dated.get(code, (100, 200, 3, 4))
        sentence = describe(Flag(code, "" if code in whole_po else "SKU-1", amounts, "REF"))
        assert isinstance(sentence, str) and "None" not in sentence, code
        assert sentence.startswith("SKU-1: ") != (code in whole_po), code


# --- property tests ------------------------------------------------------------------------

SKUS = ["CBL-USBC-1M", "CHG-65W", "PB-20K", "TEA-500G"]
rows_strategy = st.lists(
    st.tuples(
        st.sampled_from(SKUS), st.integers(min_value=1, max_value=10**6), st.text(max_size=20)
    ),
    min_size=1,
    max_size=4,
    unique_by=lambda row: row[0],
)


@settings(max_examples=60, deadline=None)
@given(rows_strategy)
def test_totals_are_the_sum_of_their_lines(rows):
    drafts = drafts_of(sheet(*[(sku, str(q), "", note) for sku, q, note in rows]), good_terms())
    for draft in drafts:
        assert draft.total_paisa == sum(
            line.quantity * line.unit_price_paisa for line in draft.lines
        )
    wanted = {sku: q for sku, q, _ in rows}
    assert {line.sku: line.quantity for d in drafts for line in d.lines} == wanted


@settings(max_examples=60, deadline=None)
@given(rows_strategy, st.randoms(use_true_random=False))
def test_draft_hash_ignores_row_order_and_column_order(rows, rng: random.Random):
    header = ["sku", "quantity", "supplier_id", "notes"]
    cells = [[sku, str(q), "", note] for sku, q, note in rows]
    reference = [draft_hash(d) for d in drafts_of(sheet(*cells), good_terms())]
    order = list(range(4))
    rng.shuffle(order)
    rng.shuffle(cells)
    shuffled = sheet(
        *[tuple(c[i] for i in order) for c in cells],
        header=tuple(header[i].upper() for i in order),
    )
    assert [draft_hash(d) for d in drafts_of(shuffled, good_terms())] == reference


# --- re-drafting on new terms ---------------------------------------------------------------


def new_terms(*changes: tuple[str, str, dict[str, object]], suppliers=None) -> Terms:
    """good.csv's terms as version T2, with offers changed as (supplier, sku, fields)."""
    terms = good_terms("T2")
    offers = []
    for offer in terms.offers:
        fields = next((f for s, k, f in changes if (s, k) == (offer.supplier_id, offer.sku)), {})
        if fields.get("drop"):
            continue
        offers.append(replace(offer, **fields))
    return replace(terms, offers=tuple(offers), suppliers=suppliers or terms.suppliers)


def waiting() -> Draft:
    (draft,) = drafts_of(
        sheet(("CBL-USBC-1M", "20", "", ""), ("CHG-65W", "3", "", "x")), good_terms()
    )
    return draft


def test_terms_that_leave_the_po_alone_change_nothing():
    draft = waiting()
    unrelated = new_terms((SADDAR, "TEA-500G", {"unit_price_paisa": 1}))
    result = redraft(draft, good_terms(), unrelated, {}, DUAL_ABOVE)
    assert result.changes == () and result.draft is draft


def test_a_new_price_makes_a_new_draft_that_says_what_changed():
    draft = waiting()
    result = redraft(
        draft,
        good_terms(),
        new_terms((HALL, "CHG-65W", {"unit_price_paisa": 660_000})),
        {},
        DUAL_ABOVE,
    )
    assert result.changes == (
        Flag(FlagCode.TERMS_PRICE_CHANGED, "CHG-65W", (650_050, 660_000), "T1"),
    )
    assert result.draft is not None and result.draft.terms_version == "T2"
    assert [line.unit_price_paisa for line in result.draft.lines] == [45_000, 660_000]
    assert result.draft.lines[1].note == "x"  # the requester's note survives
    assert draft_hash(result.draft) != draft_hash(draft)
    assert (
        describe(result.changes[0])
        == "CHG-65W: new terms price Rs 6,600.00, was Rs 6,500.50 (+1.5%)"
    )
    assert result.changes[0] in result.draft.flags  # the approver sees why


def test_limits_description_and_supplier_details_count_as_changes():
    draft = waiting()
    limits = new_terms((HALL, "CHG-65W", {"max_qty": 2}))
    result = redraft(draft, good_terms(), limits, {}, DUAL_ABOVE)
    assert result.changes == (Flag(FlagCode.TERMS_LIMITS_CHANGED, "CHG-65W", (1, 50, 1, 2), "T1"),)
    assert (FlagCode.QUANTITY_ABOVE_MAX, "CHG-65W") in codes(result.draft)
    assert describe(result.changes[0]) == "CHG-65W: order limits now 1 to 2, were 1 to 50"
    wording = new_terms((HALL, "CHG-65W", {"description": "65 W charger"}))
    assert redraft(draft, good_terms(), wording, {}, DUAL_ABOVE).changes == (
        Flag(FlagCode.TERMS_DESCRIPTION_CHANGED, "CHG-65W", (), "T1"),
    )
    moved = dict(good_terms().suppliers)
    moved[HALL] = Supplier(HALL, "Hall Road Traders", "new-orders@hallroad.pk")
    result = redraft(draft, good_terms(), new_terms(suppliers=moved), {}, DUAL_ABOVE)
    assert result.changes == (Flag(FlagCode.SUPPLIER_DETAILS_CHANGED, "", (), "T1"),)
    assert result.draft is not None and result.draft.recipient_email == "new-orders@hallroad.pk"


def test_a_withdrawn_sku_leaves_the_po_and_no_sku_left_ends_it():
    draft = waiting()
    result = redraft(
        draft, good_terms(), new_terms((HALL, "CHG-65W", {"drop": True})), {}, DUAL_ABOVE
    )
    assert result.changes == (Flag(FlagCode.SKU_WITHDRAWN, "CHG-65W", (3,), "T1"),)
    assert result.draft is not None and [line.sku for line in result.draft.lines] == ["CBL-USBC-1M"]
    gone = new_terms((HALL, "CHG-65W", {"drop": True}), (HALL, "CBL-USBC-1M", {"drop": True}))
    assert redraft(draft, good_terms(), gone, {}, DUAL_ABOVE).draft is None


def test_a_line_chosen_by_price_shows_when_another_supplier_becomes_cheaper():
    draft = waiting()
    cheaper = new_terms((SADDAR, "CBL-USBC-1M", {"unit_price_paisa": 40_000}),
                        (HALL, "CBL-USBC-1M", {"unit_price_paisa": 46_000}))  # fmt: skip
    result = redraft(draft, good_terms(), cheaper, {}, DUAL_ABOVE)
    assert result.draft is not None and result.draft.supplier_id == HALL  # same PO, same supplier
    assert (FlagCode.CHEAPER_ELSEWHERE, "CBL-USBC-1M") in codes(result.draft)


def test_a_quantity_beyond_any_order_is_a_row_problem():
    orders, problems = check_sheet(sheet(("CHG-65W", "1000001", "", "")), good_terms())
    assert orders == []
    assert problem_lines(problems) == [
        "Row 2, quantity: 1,000,001 is more than the 1,000,000 one row can order"
    ]


def test_a_quantity_of_thousands_of_digits_is_a_short_problem_not_a_crash():
    huge, negative = "9" * 5_000, "-" + "7" * 5_000
    table = sheet(
        ("CBL-USBC-1M", huge, "", ""),
        ("PB-20K", negative, "", ""),
        ("TEA-500G", "2,000,000", "", ""),
    )
    _orders, problems = check_sheet(table, good_terms())
    assert problem_lines(problems) == [
        f'Row 2, quantity: "{"9" * 39}…" is more than the 1,000,000 one row can order',
        f'Row 3, quantity: "-{"7" * 38}…" must be at least 1',
        "Row 4, quantity: 2,000,000 is more than the 1,000,000 one row can order",
    ]
    assert (
        sum(len(line) for line in problem_lines(problems)) < 300
    )  # one short line each, however long the cell


def test_terms_with_a_limit_of_thousands_of_digits_get_a_short_problem():
    header = (
        "supplier_id,supplier_name,supplier_email,sku,description,unit_price_pkr,min_qty,max_qty"
    )
    line = f"S-1,Saddar,orders@saddar.example,A-1,Cable,10,1,{'5' * 5_000}"
    terms, problems = parse_terms(read_csv_text(f"{header}\n{line}\n".encode()))
    assert terms is None
    assert problem_lines(problems) == [
        f'Line 2, max_qty: "{"5" * 39}…" is more than the limit of 1,000,000,000'
    ]


# -- where, when and with what tax (issue 23) ---------------------------------------------------

TODAY = date(2026, 12, 5)
BRANCHES = Branches(("liberty", "hallroad"), "liberty")
SHIPPING = ("sku", "quantity", "supplier_id", "notes", "ship_to", "needed_by")


def shipped(terms: Terms, *rows: tuple[object, ...], branches: Branches = BRANCHES):
    orders, problems = check_sheet(sheet(*rows, header=SHIPPING), terms, branches)
    drafts = [
        build_draft(order, f"PO-2026-{n:04d}", terms, {}, None, today=TODAY, company_version="C1")
        for n, order in enumerate(orders, start=1)
    ]
    return drafts, problem_lines(problems)


def taxed_terms() -> Terms:
    terms = good_terms()
    offers = tuple(
        replace(o, lead_days=3, gst_basis_points=1800) if o.supplier_id == HALL else o
        for o in terms.offers
    )
    hall = replace(terms.suppliers[HALL], payment_terms="30 days credit")
    return replace(terms, offers=offers, suppliers={**terms.suppliers, HALL: hall})


def test_one_po_per_supplier_and_branch_the_home_branch_by_default():
    rows = (
        ("CBL-USBC-1M", "20", HALL, "", "", ""),
        ("CHG-65W", "3", HALL, "", "hallroad", ""),
        ("CBL-USBC-1M", "5", HALL, "", "HallRoad", ""),  # the same SKU, another branch: fine
    )
    drafts, problems = shipped(good_terms(), *rows)
    assert problems == []
    assert [(d.supplier_id, d.branch_id, [line.sku for line in d.lines]) for d in drafts] == [
        (HALL, "hallroad", ["CBL-USBC-1M", "CHG-65W"]),
        (HALL, "liberty", ["CBL-USBC-1M"]),
    ]
    assert {d.company_version for d in drafts} == {"C1"}


def test_an_unknown_branch_or_a_branch_without_a_company_file_is_a_row_problem():
    rows = (
        ("CBL-USBC-1M", "20", "", "", "gulberg", ""),
        ("CHG-65W", "3", "", "", "", "31/02/2026"),
    )
    _, problems = shipped(good_terms(), *rows)
    assert problems == [
        'Row 2, ship_to: "gulberg" is not a branch; the branches are liberty, hallroad',
        'Row 3, needed_by: "31/02/2026" is not a date: write it as 2026-12-20 or 20/12/2026 '
        "(day first)",
    ]
    _, problems = shipped(good_terms(), rows[0], branches=Branches())
    assert problems == [
        "Row 2, ship_to: no branches are known yet: an admin must import the company file first"
    ]


def test_without_the_new_columns_a_draft_reads_and_hashes_as_before():
    (plain,) = drafts_of(sheet(("CHG-65W", "3", HALL, "")), good_terms())
    assert (plain.branch_id, plain.delivery_date, plain.payment_terms, plain.gst_paisa) == (
        "", None, "", 0,
    )  # fmt: skip
    assert plain.total_paisa == plain.subtotal_paisa == 3 * 650_050
    assert b"branch_id" not in canonical_bytes(plain)
    assert b"gst" not in canonical_bytes(plain) and b"delivery" not in canonical_bytes(plain)


def test_gst_is_added_per_line_and_counts_in_the_total_rules_see():
    drafts, _ = shipped(taxed_terms(), ("CHG-65W", "3", HALL, "", "", ""))
    (draft,) = drafts
    line = draft.lines[0]
    assert line.gst_basis_points == 1800
    assert line.gst_paisa == (3 * 650_050 * 18 + 50) // 100  # 18%, rounded half up
    assert draft.subtotal_paisa == 3 * 650_050
    assert draft.total_paisa == draft.subtotal_paisa + line.gst_paisa
    assert draft.payment_terms == "30 days credit"
    assert from_canonical(canonical_bytes(draft)) == draft


def test_delivery_is_the_latest_needed_by_else_today_plus_the_longest_lead_time():
    terms = taxed_terms()
    (by_lead,), _ = shipped(terms, ("CHG-65W", "3", HALL, "", "", ""))
    assert by_lead.delivery_date == TODAY + timedelta(days=3)
    (by_date,), _ = shipped(
        terms,
        ("CHG-65W", "3", HALL, "", "", "2026-12-20"),
        ("CBL-USBC-1M", "3", HALL, "", "", "24/12/2026"),
    )
    assert by_date.delivery_date == date(2026, 12, 24)
    assert [line.needed_by for line in by_date.lines] == [date(2026, 12, 24), date(2026, 12, 20)]
    (neither,), _ = shipped(good_terms(), ("TEA-500G", "3", "", "", "", ""))
    assert neither.delivery_date is None


def test_a_needed_by_sooner_than_the_lead_time_allows_is_flagged_not_refused():
    (draft,), problems = shipped(taxed_terms(), ("CHG-65W", "3", HALL, "", "", "06/12/2026"))
    assert problems == []
    (flag,) = [f for f in draft.flags if f.code == FlagCode.NEEDED_TOO_SOON]
    assert flag == Flag(FlagCode.NEEDED_TOO_SOON, "CHG-65W", (20261206, 20261208, 3))
    assert describe(flag) == (
        "CHG-65W: needed by 6 Dec 2026, but the supplier takes 3 days: 8 Dec 2026 at the earliest"
    )
    (in_time,), _ = shipped(taxed_terms(), ("CHG-65W", "3", HALL, "", "", "2026-12-08"))
    assert not [f for f in in_time.flags if f.code == FlagCode.NEEDED_TOO_SOON]


def test_a_new_tax_rate_or_payment_terms_redraft_a_waiting_po():
    old = taxed_terms()
    (draft,), _ = shipped(old, ("CHG-65W", "3", HALL, "", "hallroad", "2026-12-20"))
    offers = tuple(
        replace(o, gst_basis_points=1700) if o.supplier_id == HALL else o for o in old.offers
    )
    new = replace(old, offers=offers, version="T2")
    result = redraft(draft, old, new, {}, None, TODAY)
    assert result.draft is not None
    assert [f.code for f in result.changes] == [FlagCode.TERMS_TAX_CHANGED]
    assert result.draft.lines[0].gst_basis_points == 1700
    # where and when it goes, and the company version it cites, stay as the requester asked
    assert (result.draft.branch_id, result.draft.delivery_date) == ("hallroad", date(2026, 12, 20))
    assert result.draft.company_version == draft.company_version
    hall = replace(old.suppliers[HALL], payment_terms="cash on delivery")
    moved = replace(old, suppliers={**old.suppliers, HALL: hall}, version="T3")
    result = redraft(draft, old, moved, {}, None, TODAY)
    assert [f.code for f in result.changes] == [FlagCode.SUPPLIER_DETAILS_CHANGED]
    assert result.draft is not None and result.draft.payment_terms == "cash on delivery"

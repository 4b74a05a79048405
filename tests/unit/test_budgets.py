"""Categories and budgets in core: the months budgets run in (Pakistan time, edges included),
what a PO uses of them and what is left, routing by the lines' categories and over a budget,
terms files' category column, and the policy file's category names."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.files.sheets import read_csv_text
from bot.words.problems import problem_lines
from core.approval.budgets import (
    CategoryMonth,
    month_of,
    over_budget,
    refusal,
    standings,
    uses,
)
from core.approval.policies import PAKISTAN, BudgetMode, Budgets, Condition, Policy, Rule, Stage
from core.approval.policy_file import parse_policy
from core.approval.routes import StageReason, route_draft
from core.drafting.drafts import Draft, DraftLine
from core.drafting.terms import Offer, Supplier, Terms, content_hash, is_category, parse_terms

SOFT = Budgets(BudgetMode.SOFT, {"chargers": 50_000_00, "accessories": 100_000_00}, Stage("owners"))
HARD = Budgets(BudgetMode.HARD, SOFT.monthly_paisa)
DECEMBER = month_of(datetime(2026, 12, 15, tzinfo=UTC), PAKISTAN)


@pytest.mark.parametrize(
    ("at", "month"),
    [
        (datetime(2026, 11, 30, 18, 59, 59, 999999, tzinfo=UTC), (2026, 11)),  # 23:59:59 PKT
        (datetime(2026, 11, 30, 19, 0, tzinfo=UTC), (2026, 12)),  # midnight, 1 Dec, PKT
        (datetime(2026, 12, 31, 18, 59, 59, tzinfo=UTC), (2026, 12)),  # last second of 2026
        (datetime(2026, 12, 31, 19, 0, tzinfo=UTC), (2027, 1)),  # the new year in Karachi
        (datetime(2028, 2, 29, 12, 0, tzinfo=UTC), (2028, 2)),  # a leap day
    ],
)
def test_a_month_starts_at_midnight_in_karachi(at: datetime, month: tuple[int, int]) -> None:
    found = month_of(at, PAKISTAN)
    assert (found.year, found.month) == month
    assert found.start.astimezone(PAKISTAN).replace(tzinfo=None) == datetime(*month, 1)


def test_december_runs_from_19_00_utc_on_30_november() -> None:
    assert DECEMBER.start == datetime(2026, 11, 30, 19, 0, tzinfo=UTC)
    assert DECEMBER.end == datetime(2026, 12, 31, 19, 0, tzinfo=UTC)
    assert (DECEMBER.name, DECEMBER.title) == ("December", "December 2026")


_INSTANTS = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
)
_ZONES = st.sampled_from([PAKISTAN, ZoneInfo("UTC"), ZoneInfo("America/New_York")])


@settings(max_examples=300)
@given(_INSTANTS, _ZONES)
def test_property_every_instant_is_in_exactly_its_month(at: datetime, zone: ZoneInfo) -> None:
    """The month holds the instant; it is the local calendar month; months tile time: the
    next starts where this one ends and the one before ends where it starts."""
    month = month_of(at, zone)
    local = at.astimezone(zone)
    assert month.start <= at < month.end
    assert (month.year, month.month) == (local.year, local.month)
    assert month_of(month.end, zone).start == month.end
    assert month_of(month.start - timedelta(microseconds=1), zone).end == month.start
    assert month_of(month.start, zone) == month


def _line(sku: str, quantity: int, price: int, category: str = "") -> DraftLine:
    return DraftLine(sku, sku.lower(), quantity, price, category=category)


def _draft(*lines: DraftLine, supplier: str = "SUP-A") -> Draft:
    return Draft("PO-2026-0001", supplier, "Hall Road", "o@hallroad.pk", "t1", lines)


def test_a_po_uses_only_the_categories_that_have_a_budget() -> None:
    lines = [
        _line("CHG-1", 2, 10_000_00, "chargers"),
        _line("CHG-2", 1, 5_000_00, "chargers"),
        _line("CBL-1", 3, 1_000_00, "cables"),  # no budget for cables
        _line("BAT-1", 4, 500_00),  # uncategorised
    ]
    assert uses(lines, SOFT) == {"chargers": 25_000_00}


def test_the_card_figures_left_used_and_over() -> None:
    found = standings(SOFT, DECEMBER, {"chargers": 30_000_00, "tea": 1}, {"chargers": 25_000_00})
    assert found == (CategoryMonth("chargers", DECEMBER, 50_000_00, 30_000_00, 25_000_00),)
    [chargers] = found
    assert (chargers.left_paisa, chargers.over_paisa, chargers.over) == (20_000_00, 5_000_00, True)
    assert over_budget(found)
    assert problem_lines(refusal(found)) == [
        "Over the December 2026 budget for chargers: budget Rs 50,000.00, committed "
        "Rs 30,000.00, this sheet uses Rs 25,000.00, over by Rs 5,000.00."
    ]


_PAISA = st.integers(min_value=0, max_value=10**12)


@given(_PAISA, _PAISA, _PAISA)
def test_property_over_exactly_when_committed_and_this_po_pass_the_budget(
    budget: int, committed: int, used: int
) -> None:
    month = CategoryMonth("chargers", DECEMBER, budget, committed, used)
    assert month.over == (committed + used > budget)
    assert month.over_paisa == max(0, committed + used - budget)
    assert month.left_paisa + committed == budget
    assert bool(refusal([month])) == month.over


POLICY = Policy(
    {"managers": "Managers", "owners": "Owners"},
    (
        Rule(
            "chargers",
            (Stage("managers"), Stage("owners")),
            Condition(categories=frozenset({"chargers"})),
        ),
        Rule("default", (Stage("managers"),)),
    ),
    budgets=SOFT,
)


def test_a_rule_applies_if_any_line_has_one_of_its_categories() -> None:
    mixed = _draft(_line("CBL-1", 1, 100, "cables"), _line("CHG-1", 1, 100, "chargers"))
    assert route_draft(POLICY, mixed).rule == "chargers"
    assert route_draft(POLICY, _draft(_line("CBL-1", 1, 100, "cables"))).rule == "default"
    assert route_draft(POLICY, _draft(_line("BAT-1", 1, 100))).rule == "default"


def test_over_budget_adds_the_soft_budgets_stage_and_nothing_in_hard_mode() -> None:
    draft = _draft(_line("CBL-1", 1, 100, "accessories"))
    route = route_draft(POLICY, draft, over_budget=True)
    assert route.stages == (Stage("managers"), Stage("owners"))
    assert route.reasons == (StageReason.RULE, StageReason.BUDGET)
    assert route_draft(POLICY, draft).stages == (Stage("managers"),)
    hard = Policy(POLICY.groups, POLICY.rules, budgets=HARD)
    assert route_draft(hard, draft, over_budget=True).stages == (Stage("managers"),)


_CATEGORY_SETS = st.frozensets(st.sampled_from(["chargers", "cables", "tea", "accessories"]))


@given(_CATEGORY_SETS, st.lists(st.sampled_from(["Chargers", "CABLES", "tea", ""]), max_size=4))
def test_property_a_category_condition_holds_when_a_line_shares_one(
    wanted: frozenset[str], lines: list[str]
) -> None:
    """Any one line's category (in any case) may match; no condition on categories always holds."""
    condition = Condition(categories=wanted)
    expected = not wanted or any(c.lower() in wanted for c in lines)
    assert condition.holds(100, "SUP-A", lines) == expected


def test_a_terms_file_may_give_each_offer_a_category() -> None:
    text = (
        b"supplier_id,supplier_name,supplier_email,sku,description,unit_price_pkr,min_qty,"
        b"max_qty,Category\n"
        b"SUP1,Hall Road,o@hallroad.pk,CHG-1,Charger,4500,1,,  USB & Power \n"
        b"SUP1,Hall Road,o@hallroad.pk,CBL-1,Cable,450,1,,\n"
    )
    terms, problems = parse_terms(read_csv_text(text))
    assert problems == [] and terms is not None
    assert terms.offer("SUP1", "CHG-1") == Offer(
        "SUP1", "CHG-1", "Charger", 450_000, 1, None, "usb & power"
    )
    assert terms.offer("SUP1", "CBL-1").category == ""  # type: ignore[union-attr]


def test_a_category_changes_the_content_hash_and_none_leaves_it_as_it_was() -> None:
    suppliers = {"SUP1": Supplier("SUP1", "Hall Road", "o@hallroad.pk")}
    plain = Terms(suppliers, (Offer("SUP1", "CHG-1", "Charger", 450_000),))
    tagged = Terms(suppliers, (Offer("SUP1", "CHG-1", "Charger", 450_000, category="chargers"),))
    # The hash of these offers as it was before categories existed.
    assert content_hash(plain) == "d98c92922ff69a9f3128d1046ac9dde0b67271d827d39bc68d9b1ac349eecab2"
    assert content_hash(tagged) != content_hash(plain)


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("chargers", True),
        ("USB & power", True),
        ("چائے", True),  # Urdu letters are letters
        ("c" * 64, True),
        ("c" * 65, False),  # the policy file's limit
        ("=SUM(A1)", False),  # a formula
        ("tea\n", False),  # a line break
        ("-tea", False),
        ("", False),
    ],
)
def test_a_category_name(text: str, ok: bool) -> None:
    assert is_category(text) is ok


def test_the_policy_file_names_a_category_no_terms_file_could_have() -> None:
    text = (
        '[groups]\nm = "M"\n\n[[rules]]\nname = "r"\nwhen = { categories = ["ok", "no!"] }\n'
        'stages = [{ group = "m" }]\n\n[[rules]]\nname = "d"\nstages = [{ group = "m" }]\n\n'
        '[budgets]\nmode = "hard"\nmonthly_pkr = { "=x" = 5 }\n'
    )
    policy, problems = parse_policy(text)
    assert policy is None
    assert problem_lines(problems) == [
        "Line 6, rules[1].when.categories[2]: 'no!' is not a category name: up to 64 letters, "
        "digits, spaces and . & / - _ ', starting and ending with a letter or digit",
        "Line 15, budgets.monthly_pkr.=x: '=x' is not a category name: up to 64 letters, "
        "digits, spaces and . & / - _ ', starting and ending with a letter or digit",
    ]

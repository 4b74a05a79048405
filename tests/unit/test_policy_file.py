"""The approval policy file: the issue's example reads as written; every problem is named by
its line, schema and cross-reference problems together; the line of any key is found."""

from __future__ import annotations

from datetime import time, timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.words.policy_texts import policy_lines
from bot.words.problems import problem_text
from core.approval.policies import BudgetMode, Condition, Policy, Rule, Stage, content_hash
from core.approval.policy_file import parse_policy
from core.toml_files import key_lines

SAMPLE = (Path(__file__).parents[2] / "samples" / "approval-policy.toml").read_text()


def problems(text: str) -> list[str]:
    policy, found = parse_policy(text)
    assert policy is None and found
    return [problem_text(p) for p in found]


def test_the_sample_reads_as_the_issue_describes_it() -> None:
    policy, found = parse_policy(SAMPLE)
    assert found == [] and policy is not None
    assert policy.groups == {"managers": "Purchasing managers", "owners": "Owners"}
    assert [r.name for r in policy.rules] == ["large", "medium", "default"]
    assert policy.rules[0] == Rule(
        "large", (Stage("managers", 1), Stage("owners", 1)), Condition(1_000_000 * 100)
    )
    assert policy.rules[1].stages == (Stage("managers", 2),)
    assert policy.rules[2].when.always
    assert policy.drift is not None and policy.drift.percent == Decimal("3")
    assert policy.drift.add_stage == Stage("owners", 1)
    assert policy.budgets is not None and policy.budgets.mode is BudgetMode.SOFT
    assert policy.budgets.monthly_paisa == {"accessories": 100_000_000, "chargers": 60_000_000}
    assert policy.budgets.over_budget_stage == Stage("owners", 1)


def test_the_first_rule_whose_condition_holds_applies() -> None:
    policy, _ = parse_policy(SAMPLE)
    assert policy is not None
    pkr = 100
    assert policy.rule_for(1_000_001 * pkr, "SUP-1").name == "large"
    assert policy.rule_for(1_000_000 * pkr, "SUP-1").name == "medium"  # above, not at
    assert policy.rule_for(200_000 * pkr, "SUP-1").name == "default"


def test_conditions_on_suppliers_and_categories() -> None:
    text = """
[groups]
managers = "Managers"
owners = "Owners"

[[rules]]
name = "chargers from Lahore"
when = { suppliers = ["sup-lhr"], categories = ["Chargers"], total_at_most_pkr = 50_000 }
stages = [ { group = "owners" } ]

[[rules]]
name = "default"
stages = [ { group = "managers" } ]
"""
    policy, found = parse_policy(text)
    assert found == [] and policy is not None
    rule = policy.rules[0]
    assert rule.stages == (Stage("owners", 1),)  # approvals defaults to 1
    assert rule.when.holds(50_000_00, "SUP-LHR", ["cables", "chargers"])  # any line's category
    assert not rule.when.holds(50_000_01, "SUP-LHR", ["chargers"])
    assert not rule.when.holds(10_00, "SUP-KHI", ["chargers"])
    assert not rule.when.holds(10_00, "SUP-LHR", ["cables"])
    assert not rule.when.holds(10_00, "SUP-LHR", [])


def test_the_default_is_todays_rule() -> None:
    policy = Policy.default(500_000 * 100)
    assert policy.groups == {"approvers": "Approvers"}
    assert policy.rule_for(500_001 * 100, "S").stages == (Stage("approvers", 2),)
    assert policy.rule_for(500_000 * 100, "S").stages == (Stage("approvers", 1),)


BROKEN = """\
[groups]
managers = "Managers"
Owners = "Owners"

[[rules]]
name = "large"
when = { total_above_pkr = 1_000_000, total_at_most_pkr = 10 }
stages = [
  { group = "managers", approvals = 0 },
  { group = "owners", approvals = 1 },
]

[[rules]]
name = "large"
stages = [ { group = "managers" } ]

[[rules]]
name = "late"
stages = [ { group = "managers", approvals = "two" } ]

[drift]
percent = -3
add_stage = { group = "managers" }
colour = "red"

[budgets]
mode = "hard"
over_budget_stage = { group = "owners" }
monthly_pkr = { accessories = 1_000_000, Accessories = 5 }
"""


def test_every_problem_comes_with_its_line_schema_and_cross_references_together() -> None:
    assert problems(BROKEN) == [
        "Line 3, groups.Owners: is not a group name: a lower-case letter, then up to 31 "
        "letters, digits, _ or -",
        "Line 7, rules[1].when: no total is above 1,000,000 and at most 10",
        "Line 9, rules[1].stages[1].approvals: must be at least 1",
        "Line 10, rules[1].stages[2].group: group 'owners' is not defined in [groups] "
        "(managers, Owners)",
        "Line 14, rules[2].name: rule 'large' is also rule 1",
        "Line 17, rules[3]: never applies: rule 2 ('large') applies to every request",
        "Line 19, rules[3].stages[1].approvals: must be a whole number",
        "Line 22, drift.percent: must be more than 0",
        "Line 24, drift: unknown key 'colour'",
        "Line 28, budgets.over_budget_stage: hard mode refuses a sheet over budget: "
        "it has no stage to add",
        "Line 29, budgets.monthly_pkr: a category appears twice (case does not count)",
    ]


def test_missing_pieces_are_named_where_they_belong() -> None:
    text = '[groups]\nmanagers = "M"\n\n[[rules]]\nname = "only"\nwhen = { total_above_pkr = 5 }\n'
    assert problems(text) == [
        "Line 4, rules[1]: the last rule must apply to every request: no `when`",
        "Line 4, rules[1]: 'stages' is missing",
    ]
    assert problems('[groups]\nm = "M"\n') == ["'rules' is missing"]
    soft = SAMPLE.replace('over_budget_stage = { group = "owners", approvals = 1 }\n', "")
    assert problems(soft) == ["Line 26, budgets.mode: soft mode needs an over_budget_stage to add"]


def test_toml_syntax_errors_keep_tomllibs_line() -> None:
    assert problems(SAMPLE.replace("[drift]", "[drift")) == [
        "Line 21: not valid TOML: Expected ']' at the end of a table declaration"
    ]
    assert problems('[groups]\nm = "M"\nm = "N"\n')[0].startswith("Line 3: not valid TOML")


def test_strings_are_not_numbers_nor_numbers_strings() -> None:
    text = SAMPLE.replace("accessories = 1_000_000", 'accessories = "1000000"')
    assert problems(text) == ["Line 28, budgets.monthly_pkr.accessories: must be a whole number"]
    text = SAMPLE.replace('owners   = "Owners"', "owners = 7")
    assert problems(text) == ["Line 5, groups.owners: must be text in quotes"]


def test_the_content_hash_ignores_layout_and_comments() -> None:
    first, _ = parse_policy(SAMPLE)
    again, _ = parse_policy("# moved about\n" + SAMPLE.replace(" = ", "=").replace("# name", "#"))
    other, _ = parse_policy(SAMPLE.replace("percent = 3", "percent = 4"))
    assert first and again and other
    assert content_hash(first) == content_hash(again) != content_hash(other)


def test_key_lines_places_tables_keys_elements_and_strings_with_brackets() -> None:
    text = '''\
a = 1
"quoted key" = "a [bracket] { and # not a comment"
[t.u]
multi = """one
[not a table]
two"""
list = [
  { x = 1 },   # a comment with ] and }
  { y = [2, 3] },
]
dotted.key = 'lit\\'
[[many]]
k = 1
[[many]]
k = 2
'''
    lines = key_lines(text)
    assert lines[("a",)] == 1
    assert lines[("quoted key",)] == 2
    assert lines[("t", "u")] == 3
    assert lines[("t", "u", "multi")] == 4
    assert lines[("t", "u", "list")] == 7
    assert lines[("t", "u", "list", 0, "x")] == 8
    assert lines[("t", "u", "list", 1, "y", 1)] == 9
    assert lines[("t", "u", "dotted", "key")] == 11
    assert lines[("many", 0)] == 12 and lines[("many", 1, "k")] == 15


_KEYS = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True)


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(_KEYS, st.lists(st.integers(0, 9), max_size=3), min_size=1, max_size=6))
def test_property_every_key_is_found_on_its_line(table: dict[str, list[int]]) -> None:
    """Keys written one to a line, under a header, are found on the lines they were written."""
    body = "\n".join(f"{key} = {values}" for key, values in table.items())
    lines = key_lines(f"# policy\n[section]\n{body}\n")
    for number, key in enumerate(table, start=3):
        assert lines[("section", key)] == number
        for index in range(len(table[key])):
            assert lines[("section", key, index)] == number


@pytest.mark.parametrize("approvals", [1, 20])
def test_approvals_within_bounds_are_accepted(approvals: int) -> None:
    policy, found = parse_policy(SAMPLE.replace("approvals = 2", f"approvals = {approvals}"))
    assert found == [] and policy is not None


def test_the_sample_ladder_reads_as_written() -> None:
    policy, _ = parse_policy(SAMPLE)
    assert policy is not None and policy.reminders is not None
    ladder = policy.reminders
    assert (ladder.remind_after, ladder.escalate_after) == (timedelta(hours=2), timedelta(hours=6))
    assert (ladder.escalate_to, ladder.before_expiry) == ("owners", timedelta(hours=1))
    assert ladder.digest_at == time(9, 30)
    assert ladder.working_hours.days == frozenset(range(6))
    assert policy_lines(policy)[-2].startswith("Reminders: remind after 2h, escalate to the admins")
    assert policy.suppliers is not None and policy.suppliers.escalate_after == timedelta(days=4)


LADDER_BASE = '[groups]\nmanagers = "M"\n[[rules]]\nname = "d"\nstages = [{ group = "managers" }]\n'


def test_every_problem_of_the_ladder_is_named_by_its_line() -> None:
    text = LADDER_BASE + (
        "[reminders]\n"  # line 6
        'working_hours = "Mon-Fun 09:00-19:00"\n'
        'remind_after = "2x"\n'
        'escalate_to = "owners"\n'
        "before_expiry = 5\n"
        'digest_at = "25:30"\n'
        'colour = "red"\n'
    )
    assert problems(text) == [
        "Line 7, reminders.working_hours: 'Mon-Fun 09:00-19:00': days are Mon, Tue, Wed, "
        "Thu, Fri, Sat, Sun",
        "Line 8, reminders.remind_after: '2x' is not a duration: a whole number and s, m, h "
        "or d, as 2h",
        "Line 9, reminders.escalate_to: group 'owners' is not defined in [groups] (managers)",
        "Line 10, reminders.before_expiry: must be text in quotes",
        "Line 11, reminders.digest_at: '25:30' is not a time of day: HH:MM, as 09:30",
        "Line 12, reminders: unknown key 'colour'",
    ]
    assert problems(LADDER_BASE + '[reminders]\nremind_after = "2h"\n') == [
        "Line 6, reminders: 'working_hours' is missing"
    ]


def test_a_ladder_changes_the_content_hash_and_none_leaves_it_as_it_was() -> None:
    plain, _ = parse_policy(LADDER_BASE)
    laddered, _ = parse_policy(
        LADDER_BASE + '[reminders]\nworking_hours = "Mon-Sun 00:00-24:00"\nremind_after = "2h"\n'
    )
    assert plain is not None and laddered is not None and plain.reminders is None
    assert content_hash(plain) != content_hash(laddered)
    # The hash of a policy with no ladder is the one it had before ladders existed.
    assert content_hash(plain) == "57516193bab85e01eaf71a5938010ac44cd72bed8b6d4309d5a3484a3f03e3fe"
    assert laddered.reminders is not None and laddered.reminders.escalate_after is None


# --- hostile files: a problem with its line, never an exception -------------------------------

TOO_DEEP = "arrays and tables nested more than 16 deep"
SAMPLE_LINES = SAMPLE.count("\n")


@pytest.mark.parametrize(
    ("text", "line"),
    [
        # The issue's 4 KB of nested arrays, after a good policy.
        (SAMPLE + "deep = " + "[" * 2000 + "]" * 2000 + "\n", SAMPLE_LINES + 1),
        # Inline tables inside inline tables, about 4 KB.
        (SAMPLE + "deep = " + "{ a = " * 700 + "1" + " }" * 700 + "\n", SAMPLE_LINES + 1),
        # Opened and never closed: tomllib recurses before it finds the end.
        ("deep = " + "[{a=" * 1000, 1),
        # One bracket a line: the problem is on the line of the seventeenth.
        ("# a matrix\nm = [\n" + "[\n" * 40 + "]\n" * 41, 18),
        # A dotted key of 20,000 parts (40 KB), which tomllib took seconds to read.
        (SAMPLE + "[groups]\n" + "a." * 20_000 + "b = 1\n", SAMPLE_LINES + 2),
        # A table's name of as many, quoted or not.
        ("x = 1\n[groups." + '"a" . ' * 20_000 + "b]\n", 2),
    ],
    ids=["arrays", "inline-tables", "unclosed", "a-bracket-a-line", "dotted-key", "header"],
)
def test_a_file_nested_too_deep_is_a_problem_on_its_line(text: str, line: int) -> None:
    assert problems(text) == [f"Line {line}: {TOO_DEEP}"]


def test_brackets_in_strings_and_comments_are_no_nesting() -> None:
    text = SAMPLE.replace(
        "[groups]                      # name", "[groups]  # " + "[{" * 40 + " name"
    ).replace('"Owners"', '"' + "[" * 40 + '"')
    text += "\n# " + "{" * 100 + "\n"
    multi_line = 'managers = """[[[[[[[[[[\n' + "{" * 40 + '"""'
    text = text.replace('managers = "Purchasing managers"', multi_line)
    policy, found = parse_policy(text)
    assert found == [] and policy is not None
    assert policy.groups["owners"] == "[" * 40


def test_a_number_too_long_to_read_is_a_problem_on_its_line() -> None:
    # tomllib lets int()'s own ValueError through for more than 4,300 digits.
    text = SAMPLE.replace("percent = 3", "percent = 3" + "0" * 5000)
    assert problems(text) == ["Line 22: a whole number of 5,001 digits is too long to read"]
    grouped = SAMPLE.replace("approvals = 2", "approvals = " + "1_000" * 1200)
    assert problems(grouped) == ["Line 15: a whole number of 4,800 digits is too long to read"]


def test_suppliers_are_chased_as_the_policy_says_or_by_default() -> None:
    text = LADDER_BASE + '[suppliers]\nremind_after = "1d"\nescalate_after = "3d"\n'
    policy, found = parse_policy(text)
    assert found == [] and policy is not None and policy.suppliers is not None
    assert (policy.suppliers.remind_after, policy.suppliers.escalate_after) == (
        timedelta(days=1),
        timedelta(days=3),
    )
    assert policy_lines(policy)[-1] == (
        "Suppliers: reminded after 1d, the team told after 3d without an answer"
    )
    without, _ = parse_policy(LADDER_BASE)
    assert without is not None and without.suppliers is None  # DEFAULT_CHASE applies
    assert content_hash(without) != content_hash(policy)


def test_every_problem_of_the_suppliers_section_is_named_by_its_line() -> None:
    text = LADDER_BASE + (
        "[suppliers]\n"  # line 6
        'remind_after = "2x"\n'
        "escalate_after = 3\n"
        'colour = "red"\n'
    )
    assert problems(text) == [
        "Line 7, suppliers.remind_after: '2x' is not a duration: a whole number and s, m, h "
        "or d, as 2h",
        "Line 8, suppliers.escalate_after: must be text in quotes",
        "Line 9, suppliers: unknown key 'colour'",
    ]
    backwards = LADDER_BASE + '[suppliers]\nremind_after = "3d"\nescalate_after = "2d"\n'
    assert problems(backwards) == [
        "Line 8, suppliers.escalate_after: escalate_after must be longer than remind_after: "
        "the supplier is reminded first"
    ]

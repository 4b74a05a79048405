"""The company file: the example reads as written; every problem is named by its line and its
own code, schema and cross-reference problems together in one pass, in line order; the content
hash ignores layout, comments and key order; no text makes the parser raise; each new problem
is said in English and in Urdu."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.words.i18n import ENGLISH, Language, isolated, translator
from bot.words.problems import problem_text
from core.company.company import Branch, Buyer, Company, content_hash
from core.company.company_file import parse_company
from core.problems import Place, Problem, ProblemCode
from core.toml_files import too_big
from tests.helpers.urdu import english_runs

UR = translator(Language.UR)

EXAMPLE = """\
[buyer]
name = "Lahore Electronics (Pvt) Ltd"
address = "12 Main Boulevard, Gulberg III, Lahore"
ntn = "1234567-8"          # optional
strn = "32-77-8761-234-56" # optional
phone = "+92 42 3575 0000" # optional
[branches.liberty]
name = "Liberty Market"
address = "Shop 4, Liberty Market, Gulberg, Lahore"
default = true
[branches.hallroad]
name = "Hall Road"
address = "Shop 12, Hall Road, Lahore"
"""

BUYER = Buyer(
    "Lahore Electronics (Pvt) Ltd",
    "12 Main Boulevard, Gulberg III, Lahore",
    ntn="1234567-8",
    strn="32-77-8761-234-56",
    phone="+92 42 3575 0000",
)
LIBERTY = Branch("liberty", "Liberty Market", "Shop 4, Liberty Market, Gulberg, Lahore")
HALLROAD = Branch("hallroad", "Hall Road", "Shop 12, Hall Road, Lahore")
# A company file with just the keys it must have, for the cases about branches.
PLAIN = '[buyer]\nname = "B"\naddress = "A"\n'


def company(text: str) -> Company:
    found, problems = parse_company(text)
    assert problems == [] and found is not None
    return found


def problems(text: str) -> list[Problem]:
    found, problems = parse_company(text)
    assert found is None and problems
    return problems


def said(text: str) -> list[str]:
    """The problems of a file as the CLI prints them (in English)."""
    return [problem_text(p) for p in problems(text)]


def test_the_example_reads_as_written() -> None:
    assert company(EXAMPLE) == Company(BUYER, (LIBERTY, HALLROAD), "liberty")
    read = company(EXAMPLE)
    assert read.buyer.name == "Lahore Electronics (Pvt) Ltd"
    assert read.buyer.address == "12 Main Boulevard, Gulberg III, Lahore"
    assert (read.buyer.ntn, read.buyer.strn) == ("1234567-8", "32-77-8761-234-56")
    assert read.buyer.phone == "+92 42 3575 0000"
    assert [b.branch_id for b in read.branches] == ["liberty", "hallroad"]  # the file's order
    assert read.default_branch == "liberty" and read.version == ""
    assert read.branch("hallroad") == HALLROAD and read.branch("gulberg") is None


def test_the_optional_numbers_may_be_left_out_and_text_is_trimmed() -> None:
    text = '[buyer]\nname = "  Lahore Electronics  "\naddress = "Lahore "\n'
    text += '[branches.main]\nname = " Main "\naddress = "Shop 1"\n'
    assert company(text) == Company(
        Buyer("Lahore Electronics", "Lahore"), (Branch("main", "Main", "Shop 1"),), "main"
    )


@pytest.mark.parametrize(
    "default",
    [
        "",  # no default key
        "default = true\n",  # the only one, and says so
        "default = false\n",  # the only one all the same: there is no other to order for
    ],
)
def test_a_single_branch_is_the_default(default: str) -> None:
    text = PLAIN + f'[branches.hallroad]\nname = "Hall Road"\naddress = "Shop 12"\n{default}'
    assert company(text).default_branch == "hallroad"


def test_the_default_is_the_branch_that_says_so_wherever_it_is() -> None:
    text = EXAMPLE.replace("default = true\n", "") + "default = true\n"
    assert company(text).default_branch == "hallroad"


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("ntn", "0000000-0"),
        ("ntn", " 1234567-8 "),  # spaces around it are dropped
        ("strn", "03-01-2345-678-90"),
        ("phone", "0300-1234567"),  # a mobile as people write it
        ("phone", "(042) 3575-0000"),
        ("phone", "+923001234567"),
        ("phone", "1234567"),  # 7 digits: a landline without its code
        ("phone", "+1 234 567 890 12345"),  # 15 digits, E.164's most
    ],
)
def test_numbers_written_as_they_should_be_are_accepted(key: str, value: str) -> None:
    text = PLAIN + f'{key} = "{value}"\n[branches.main]\nname = "M"\naddress = "A"\n'
    assert getattr(company(text).buyer, key) == value.strip()


# --- every problem with its line and its own code --------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "line"),
    [
        # An NTN without its dash, one digit short, in Urdu digits, empty.
        ('ntn = "1234567-8"', 'ntn = "12345678"', "Line 4, buyer.ntn: '12345678' is not an NTN: "
         "7 digits, a dash and 1 digit, like 1234567-8"),
        ('ntn = "1234567-8"', 'ntn = "123456-8"', "Line 4, buyer.ntn: '123456-8' is not an NTN: "
         "7 digits, a dash and 1 digit, like 1234567-8"),
        ('ntn = "1234567-8"', 'ntn = "۱۲۳۴۵۶۷-۸"', "Line 4, buyer.ntn: '۱۲۳۴۵۶۷-۸' is not an "
         "NTN: 7 digits, a dash and 1 digit, like 1234567-8"),
        ('ntn = "1234567-8"', 'ntn = ""', "Line 4, buyer.ntn: '' is not an NTN: 7 digits, a "
         "dash and 1 digit, like 1234567-8"),
        # An STRN without dashes, or grouped otherwise.
        ('strn = "32-77-8761-234-56"', 'strn = "3277876123456"', "Line 5, buyer.strn: "
         "'3277876123456' is not an STRN: 13 digits written 2-2-4-3-2 with dashes, like "
         "32-77-8761-234-56"),
        ('strn = "32-77-8761-234-56"', 'strn = "327-7-8761-234-56"', "Line 5, buyer.strn: "
         "'327-7-8761-234-56' is not an STRN: 13 digits written 2-2-4-3-2 with dashes, like "
         "32-77-8761-234-56"),
        # A phone with letters, too few digits, too many.
        ('phone = "+92 42 3575 0000"', 'phone = "042 3575 ext 5"', "Line 6, buyer.phone: "
         "'042 3575 ext 5' is not a phone number: 7 to 15 digits, with only spaces and + - ( ) "
         "among them, like +92 42 3575 0000"),
        ('phone = "+92 42 3575 0000"', 'phone = "35-75"', "Line 6, buyer.phone: '35-75' is not "
         "a phone number: 7 to 15 digits, with only spaces and + - ( ) among them, like +92 42 "
         "3575 0000"),
        ('phone = "+92 42 3575 0000"', 'phone = "+92 42 3575 0000 0000"', "Line 6, buyer.phone: "
         "'+92 42 3575 0000 0000' is not a phone number: 7 to 15 digits, with only spaces and "
         "+ - ( ) among them, like +92 42 3575 0000"),
        # A branch id with capitals, or starting with a digit.
        ("[branches.hallroad]", "[branches.Hall_Road]", "Line 11, branches: 'Hall_Road' is not a "
         "branch id: a lower-case letter, then up to 31 lower-case letters, digits, _ or -, like "
         "hallroad"),
        ("[branches.hallroad]", '[branches."9th street"]', "Line 11, branches: '9th street' is "
         "not a branch id: a lower-case letter, then up to 31 lower-case letters, digits, _ or -, "
         "like hallroad"),
        # A second default, at its own `default` line.
        ('address = "Shop 12, Hall Road, Lahore"', 'address = "Shop 12"\ndefault = true',
         "Line 14, branches.hallroad.default: a second default: branch 'liberty' is the default "
         "already; write default = true in one branch only"),
        # Two branches and neither is the default: at the first branch.
        ("default = true\n", "", "Line 7, branches: no branch is the default: write default = "
         "true in the branch a requester without one orders for"),
        # Values of the wrong kind or length: the policy file's words.
        ('ntn = "1234567-8"', "ntn = 12345678", "Line 4, buyer.ntn: must be text in quotes"),
        ('name = "Lahore Electronics (Pvt) Ltd"', 'name = "   "',
         "Line 2, buyer.name: must not be empty"),
        ('name = "Hall Road"', f'name = "{"x" * 101}"',
         "Line 12, branches.hallroad.name: is too long (at most 100 characters)"),
        ('address = "Shop 12, Hall Road, Lahore"', f'address = "{"x" * 401}"',
         "Line 13, branches.hallroad.address: is too long (at most 400 characters)"),
    ],
)  # fmt: skip
def test_each_problem_is_named_by_its_line(old: str, new: str, line: str) -> None:
    assert old in EXAMPLE
    assert said(EXAMPLE.replace(old, new)) == [line]


@pytest.mark.parametrize(
    ("old", "new", "row", "code"),
    [
        ('ntn = "1234567-8"', 'ntn = "1"', 4, ProblemCode.NOT_AN_NTN),
        ('strn = "32-77-8761-234-56"', 'strn = "1"', 5, ProblemCode.NOT_AN_STRN),
        ('phone = "+92 42 3575 0000"', 'phone = "x"', 6, ProblemCode.NOT_A_PHONE),
        ("[branches.hallroad]", "[branches.HALL]", 11, ProblemCode.NOT_A_BRANCH_ID),
        ('address = "Shop 12, Hall Road, Lahore"', 'address = "Shop 12"\ndefault = true', 14,
         ProblemCode.DEFAULT_BRANCH_TWICE),
        ("default = true\n", "", 7, ProblemCode.NO_DEFAULT_BRANCH),
    ],
)  # fmt: skip
def test_each_value_has_its_own_code_not_the_schemas(
    old: str, new: str, row: int, code: ProblemCode
) -> None:
    assert old in EXAMPLE
    assert [(p.row, p.code, p.place) for p in problems(EXAMPLE.replace(old, new))] == [
        (row, code, Place.LINE)
    ]


def test_a_third_default_names_the_first_too() -> None:
    text = PLAIN + "".join(
        f'[branches.{b}]\nname = "{b}"\naddress = "A"\ndefault = true\n' for b in ("a", "b", "c")
    )
    found = problems(text)
    assert [(p.row, p.column) for p in found] == [
        (11, "branches.b.default"),
        (15, "branches.c.default"),
    ]
    assert [p.values for p in found] == [
        {"branch": "'b'", "first": "'a'"},
        {"branch": "'c'", "first": "'a'"},
    ]


def test_no_default_is_named_at_the_branches_table_when_it_has_a_header() -> None:
    text = PLAIN + '\n[branches]\nmain = { name = "M", address = "A" }\n'
    text += 'north = { name = "N", address = "B" }\n'
    assert [(p.row, p.column, p.code) for p in problems(text)] == [
        (5, "branches", ProblemCode.NO_DEFAULT_BRANCH)
    ]


def test_a_default_of_the_wrong_kind_is_the_schemas_problem_alone() -> None:
    """`default = "yes"` is no default either, but saying so as well would be a second
    sentence about one mistake."""
    found = problems(EXAMPLE.replace("default = true", 'default = "yes"'))
    assert [(p.row, p.column, p.code) for p in found] == [
        (10, "branches.liberty.default", ProblemCode.NOT_TRUE_OR_FALSE)
    ]
    [wrong] = found
    assert problem_text(wrong, tr=ENGLISH) == (
        "Line 10, branches.liberty.default: must be true or false, without quotes"
    )
    urdu = problem_text(wrong, tr=translator(Language.UR))
    assert f"{isolated('true')} یا {isolated('false')}" in urdu and english_runs(urdu) == []


def test_branches_one_to_a_hundred() -> None:
    assert said(PLAIN + "[branches]\n") == ["Line 4, branches: must not be empty"]
    many = "".join(f'[branches.b{n}]\nname = "B"\naddress = "A"\n' for n in range(101))
    assert said(PLAIN + many.replace('"A"\n', '"A"\ndefault = true\n', 1)) == [
        "Line 4, branches: has too many entries (at most 100)"  # at the first branch
    ]
    hundred = company(
        PLAIN + many.rsplit("[branches.b100]", 1)[0].replace('B"', 'B"\ndefault = true', 1)
    )
    assert len(hundred.branches) == 100 and hundred.default_branch == "b0"


BROKEN = """\
[buyer]
name = ""
address = "12 Main Boulevard"
ntn = "1234567"
strn = "32-77-8761-234-56"
phone = "call us"
email = "info@example.pk"

[branches.Liberty]
name = "Liberty Market"
default = true

[branches.hallroad]
name = "Hall Road"
address = "Shop 12, Hall Road, Lahore"
default = true
"""


def test_every_problem_comes_back_in_one_pass_in_line_order() -> None:
    assert said(BROKEN) == [
        "Line 2, buyer.name: must not be empty",
        "Line 4, buyer.ntn: '1234567' is not an NTN: 7 digits, a dash and 1 digit, like 1234567-8",
        "Line 6, buyer.phone: 'call us' is not a phone number: 7 to 15 digits, with only "
        "spaces and + - ( ) among them, like +92 42 3575 0000",
        "Line 7, buyer: unknown key 'email'",
        "Line 9, branches: 'Liberty' is not a branch id: a lower-case letter, then up to 31 "
        "lower-case letters, digits, _ or -, like hallroad",
        "Line 9, branches.Liberty: 'address' is missing",
        "Line 16, branches.hallroad.default: a second default: branch 'Liberty' is the "
        "default already; write default = true in one branch only",
    ]


def test_unknown_and_missing_keys_are_named_where_they_belong() -> None:
    assert said(EXAMPLE + "[suppliers]\nx = 1\n") == ["Line 14: unknown key 'suppliers'"]
    assert said(EXAMPLE.replace('ntn = "1234567-8"', 'NTN = "1234567-8"')) == [
        "Line 4, buyer: unknown key 'NTN'"
    ]
    assert said(EXAMPLE.replace('address = "12 Main Boulevard, Gulberg III, Lahore"\n', "")) == [
        "Line 1, buyer: 'address' is missing"
    ]
    assert said(EXAMPLE.replace('name = "Hall Road"\n', "")) == [
        "Line 11, branches.hallroad: 'name' is missing"
    ]
    # A branch written only through a table inside it: its missing keys are at that table.
    assert said(EXAMPLE.replace("[branches.hallroad]", "[branches.hallroad.x]")) == [
        "Line 11, branches.hallroad: 'name' is missing",
        "Line 11, branches.hallroad: 'address' is missing",
        "Line 11, branches.hallroad: unknown key 'x'",
    ]
    assert said(PLAIN) == ["'branches' is missing"]
    assert said("") == ["'buyer' is missing", "'branches' is missing"]


def test_toml_that_does_not_read_is_one_problem_on_its_line() -> None:
    assert said(EXAMPLE.replace("[branches.hallroad]", "[branches.hallroad")) == [
        "Line 11: not valid TOML: Expected ']' at the end of a table declaration"
    ]


# --- the content hash ------------------------------------------------------------------------

# The example written otherwise: comments, spacing, inline tables, dotted keys, keys reordered.
RELAID = """\
# Who buys
[buyer]
phone="+92 42 3575 0000"
strn = "32-77-8761-234-56"
ntn   = "1234567-8"
address = "  12 Main Boulevard, Gulberg III, Lahore"
name = "Lahore Electronics (Pvt) Ltd"

[branches]
liberty.default = true
liberty.address = "Shop 4, Liberty Market, Gulberg, Lahore"
liberty.name = "Liberty Market"
hallroad = { address = "Shop 12, Hall Road, Lahore", name = "Hall Road" }  # since 2026
"""


def test_the_content_hash_ignores_layout_comments_and_key_order() -> None:
    first, again = company(EXAMPLE), company(RELAID)
    assert first == again and content_hash(first) == content_hash(again)
    moved = company(EXAMPLE.replace("Shop 12, Hall Road", "Shop 40, Hall Road"))
    assert content_hash(moved) != content_hash(first)


def test_the_content_hash_counts_the_branches_order_and_the_default() -> None:
    first = company(EXAMPLE)
    swapped = EXAMPLE.split("[branches.liberty]")
    liberty, hallroad = swapped[1].split("[branches.hallroad]")
    reordered = company(f"{swapped[0]}[branches.hallroad]{hallroad}[branches.liberty]{liberty}")
    assert reordered.default_branch == "liberty"
    assert content_hash(reordered) != content_hash(first)  # how they are listed
    other = EXAMPLE.replace("default = true\n", "") + "default = true\n"
    assert content_hash(company(other)) != content_hash(first)


# --- never an exception ----------------------------------------------------------------------

# Fast enough for the unit suite (each example parses a kilobyte at most), deterministic.
FUZZ = settings(
    max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)


def holds(text: str) -> None:
    """A company, or problems each placed on a line of the file and said in both languages."""
    found, problems = parse_company(text)
    assert (found is None) == bool(problems)
    last = text.count("\n") + 1
    assert [p.row for p in problems] == sorted(p.row for p in problems)
    for problem in problems:
        assert 0 <= problem.row <= last
        assert problem_text(problem, tr=ENGLISH) and problem_text(problem, tr=UR)


def _string(text: str) -> str:
    """A TOML basic string: JSON's escapes are TOML's."""
    return json.dumps(text, ensure_ascii=False)


_SIGNIFICANT = [*"[]{}\"'#=,.\\\n\t -_+()", '"""', "a", "1", "۱", "\u202e", "\x00"]
scalars = st.one_of(
    st.integers().map(str),
    st.booleans().map(lambda b: str(b).lower()),
    st.text(max_size=20).map(_string),
    st.sampled_from(["1234567-8", "32-77-8761-234-56", "+92 42 3575 0000", "", " "]).map(_string),
    st.lists(st.sampled_from(_SIGNIFICANT), max_size=10).map("".join),  # not a value at all
)
keys = st.one_of(
    st.sampled_from(["buyer", "branches", "name", "address", "ntn", "strn", "phone", "default",
                     "liberty", "Hall_Road"]),
    st.text(max_size=6).map(_string),
)  # fmt: skip
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3).map(lambda items: "[" + ", ".join(items) + "]"),
        st.lists(st.tuples(keys, inner), max_size=4).map(
            lambda pairs: "{" + ", ".join(f"{k} = {v}" for k, v in pairs) + "}"
        ),
    ),
    max_leaves=10,
)


@FUZZ
@given(st.text())
def test_property_any_text(text: str) -> None:
    holds(text)


@FUZZ
@given(st.lists(st.sampled_from(_SIGNIFICANT), max_size=200).map("".join))
def test_property_any_text_of_tomls_own_characters(text: str) -> None:
    holds(text)


@FUZZ
@given(st.lists(st.tuples(keys, values), max_size=6), st.text(max_size=20))
def test_property_any_document_of_any_shape(pairs: list[tuple[str, str]], tail: str) -> None:
    holds("\n".join(f"{key} = {value}" for key, value in pairs) + "\n" + tail)


branch = st.fixed_dictionaries(
    {},
    optional={"name": scalars, "address": scalars, "default": scalars, "other": scalars},
)
companies = st.tuples(
    st.fixed_dictionaries(
        {},
        optional={k: scalars for k in ("name", "address", "ntn", "strn", "phone", "email")},
    ),
    st.lists(st.tuples(keys, branch), max_size=4),
)


@FUZZ
@given(companies)
def test_property_files_shaped_like_a_company(
    document: tuple[dict[str, str], list[tuple[str, dict[str, str]]]],
) -> None:
    buyer, branches = document
    text = "[buyer]\n" + "".join(f"{k} = {v}\n" for k, v in buyer.items())
    for branch_id, keys_ in branches:
        text += f"[branches.{branch_id}]\n" + "".join(f"{k} = {v}\n" for k, v in keys_.items())
    holds(text)


# --- the sentences, in English and Urdu ------------------------------------------------------

# Each of the company file's problems, as parse_company reports it, and its English line.
SENTENCES = [
    (Problem(4, "buyer.ntn", ProblemCode.NOT_AN_NTN, {"value": "'1234'"}, Place.LINE),
     "Line 4, buyer.ntn: '1234' is not an NTN: 7 digits, a dash and 1 digit, like 1234567-8",
     ["'1234'", "1234567-8"]),
    (Problem(5, "buyer.strn", ProblemCode.NOT_AN_STRN, {"value": "'3277'"}, Place.LINE),
     "Line 5, buyer.strn: '3277' is not an STRN: 13 digits written 2-2-4-3-2 with dashes, like "
     "32-77-8761-234-56", ["'3277'", "32-77-8761-234-56"]),
    (Problem(6, "buyer.phone", ProblemCode.NOT_A_PHONE, {"value": "'call'"}, Place.LINE),
     "Line 6, buyer.phone: 'call' is not a phone number: 7 to 15 digits, with only spaces and "
     "+ - ( ) among them, like +92 42 3575 0000", ["'call'", "+92 42 3575 0000"]),
    (Problem(11, "branches", ProblemCode.NOT_A_BRANCH_ID, {"value": "'Hall'"}, Place.LINE),
     "Line 11, branches: 'Hall' is not a branch id: a lower-case letter, then up to 31 "
     "lower-case letters, digits, _ or -, like hallroad", ["'Hall'", "hallroad"]),
    (Problem(14, "branches.b.default", ProblemCode.DEFAULT_BRANCH_TWICE,
             {"branch": "'b'", "first": "'a'"}, Place.LINE),
     "Line 14, branches.b.default: a second default: branch 'a' is the default already; write "
     "default = true in one branch only", ["'a'", "default = true"]),
    (Problem(7, "branches", ProblemCode.NO_DEFAULT_BRANCH, {}, Place.LINE),
     "Line 7, branches: no branch is the default: write default = true in the branch a "
     "requester without one orders for", ["default = true"]),
    (too_big(300_000, ProblemCode.COMPANY_TOO_BIG),
     "The file is 300,000 bytes; a company file is at most 256 KB.", ["300,000"]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("problem", "english", "kept"), SENTENCES, ids=[str(s[0] and s[0].code) for s in SENTENCES]
)
def test_each_company_problem_is_said_in_english_and_in_urdu(
    problem: Problem | None, english: str, kept: list[str]
) -> None:
    assert problem is not None
    assert problem_text(problem) == english
    urdu = problem_text(problem, tr=UR)
    assert urdu != english and english_runs(urdu) == []
    for value in kept:  # the values and the file's syntax, each isolated in the Urdu line
        assert isolated(value) in urdu
    if problem.row:
        assert urdu.startswith(
            f"لائن {isolated(str(problem.row))}، {isolated(str(problem.column))}: "
        )


def test_every_company_code_is_said() -> None:
    company_codes = {
        ProblemCode.NOT_AN_NTN,
        ProblemCode.NOT_AN_STRN,
        ProblemCode.NOT_A_PHONE,
        ProblemCode.NOT_A_BRANCH_ID,
        ProblemCode.DEFAULT_BRANCH_TWICE,
        ProblemCode.NO_DEFAULT_BRANCH,
        ProblemCode.COMPANY_TOO_BIG,
    }
    assert {s[0].code for s in SENTENCES if s[0] is not None} == company_codes

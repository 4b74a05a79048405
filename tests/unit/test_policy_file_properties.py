"""The policy file against whatever an admin can send (issue 21): arbitrary text, arbitrary TOML
of any shape (deeply nested, odd unicode, numbers too long to read) and files shaped like a
policy with values of every kind. parse_policy gives a policy or problems that can be said in
both languages, each on a line of the file, and never raises."""

from __future__ import annotations

import json
from datetime import datetime

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.words.i18n import ENGLISH, Language, translator
from bot.words.problems import problem_text
from core.approval.policy_file import parse_policy

URDU = translator(Language.UR)
# Fast enough for the unit suite (each example parses a few kilobytes at most), deterministic.
FUZZ = settings(
    max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)


def holds(text: str) -> None:
    """The property: a policy, or problems each placed on a line and said in both languages."""
    policy, problems = parse_policy(text)
    assert (policy is None) == bool(problems)
    last = text.count("\n") + 1
    for problem in problems:
        assert 0 <= problem.row <= last
        assert problem_text(problem, tr=ENGLISH) and problem_text(problem, tr=URDU)


# --- TOML written from values ----------------------------------------------------------------

_SIGNIFICANT = [*"[]{}\"'#=,.\\\n\t -_:+", "'''", '"""', "a", "1", "é", "\u202e", "\x00"]


def _significant(max_size: int) -> st.SearchStrategy[str]:
    """Text made of what TOML reads specially: brackets, quotes, escapes, comments, breaks."""
    return st.lists(st.sampled_from(_SIGNIFICANT), max_size=max_size).map("".join)


def _string(text: str) -> str:
    """A TOML basic string: JSON's escapes are TOML's (a raw DEL is refused, as it should be)."""
    return json.dumps(text, ensure_ascii=False)


def _number(digits: int) -> str:
    return "1" + "0" * digits


scalars = st.one_of(
    st.integers().map(str),
    st.integers(4000, 6000).map(_number),  # past int()'s 4,300 digits
    st.floats().map(repr),
    st.booleans().map(lambda b: str(b).lower()),
    st.text().map(_string),  # any unicode: controls, bidi marks, astral
    _significant(20).map(_string),
    st.datetimes(timezones=st.none()).map(datetime.isoformat),
    _significant(10),  # not a value at all
)
keys = st.one_of(
    st.sampled_from(["groups", "rules", "name", "when", "stages", "group", "approvals",
                     "drift", "budgets", "mode", "monthly_pkr", "reminders", "managers"]),
    st.text(max_size=8).map(_string),
)  # fmt: skip


def _table(pairs: list[tuple[str, str]]) -> str:
    return "{" + ", ".join(f"{k} = {v}" for k, v in pairs) + "}"


values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4).map(lambda items: "[" + ", ".join(items) + "]"),
        st.lists(st.tuples(keys, inner), max_size=4).map(_table),
    ),
    max_leaves=12,
)


def _deep(depth: int, opener: str, closer: str, closed: bool) -> str:
    return opener * depth + ("1" + closer * depth if closed else "")


deep = st.builds(
    _deep,
    st.integers(1, 2500),
    st.sampled_from(["[", "{a=", "[{b=[", " [\n"]),
    st.sampled_from(["]", "}", "]}]", "\n]"]),
    st.booleans(),
)


@FUZZ
@given(st.text())
def test_property_any_text(text: str) -> None:
    holds(text)


@FUZZ
@given(_significant(200))
def test_property_any_text_of_tomls_own_characters(text: str) -> None:
    holds(text)


@FUZZ
@given(st.lists(st.tuples(keys, st.one_of(values, deep)), max_size=6), st.text(max_size=20))
def test_property_any_document_of_any_shape(pairs: list[tuple[str, str]], tail: str) -> None:
    holds("\n".join(f"{key} = {value}" for key, value in pairs) + "\n" + tail)


@FUZZ
@given(st.integers(1, 3000), st.sampled_from(["groups", "budgets.monthly_pkr", "x"]))
def test_property_dotted_keys_of_any_depth(depth: int, under: str) -> None:
    holds(f"[{under}]\n" + "a." * depth + "b = 1\n" + f"[{under}." + "c." * depth + "d]\n")


# --- files shaped like a policy --------------------------------------------------------------

group_names = st.one_of(st.sampled_from(["managers", "owners"]), st.text(max_size=6))
stages = st.lists(
    st.fixed_dictionaries(
        {"group": st.one_of(group_names.map(_string), values)},
        optional={"approvals": st.one_of(st.integers(-2, 25).map(str), values)},
    ).map(lambda d: _table(list(d.items()))),
    max_size=3,
).map(lambda items: "[" + ", ".join(items) + "]")
whens = st.fixed_dictionaries(
    {},
    optional={
        "total_above_pkr": st.one_of(st.integers(-1, 10**11).map(str), values),
        "total_at_most_pkr": st.one_of(st.integers(-1, 10**11).map(str), values),
        "suppliers": st.lists(st.text(max_size=8).map(_string), max_size=2).map(
            lambda items: "[" + ", ".join(items) + "]"
        ),
        "categories": st.lists(st.text(max_size=8).map(_string), max_size=2).map(
            lambda items: "[" + ", ".join(items) + "]"
        ),
    },
).map(lambda d: _table(list(d.items())))
rules = st.lists(
    st.fixed_dictionaries(
        {"name": st.one_of(st.text(max_size=6).map(_string), values), "stages": stages},
        optional={"when": st.one_of(whens, values), _string("other"): values},
    ).map(lambda d: _table(list(d.items()))),
    max_size=3,
).map(lambda items: "[" + ", ".join(items) + "]")
durations = st.one_of(
    st.sampled_from(['"2h"', '"0s"', '"9999999h"', '"Mon-Sat 09:00-19:00"', '"25:61"']),
    st.text(max_size=12).map(_string),
    values,
)
policies = st.fixed_dictionaries(
    {},
    optional={
        "groups": st.dictionaries(group_names.map(_string), st.text(max_size=8).map(_string),
                                  max_size=3).map(lambda d: _table(list(d.items()))),
        "rules": rules,
        "drift": st.fixed_dictionaries(
            {"percent": st.one_of(st.floats().map(repr), values), "add_stage": values}
        ).map(lambda d: _table(list(d.items()))),
        "budgets": st.fixed_dictionaries(
            {"mode": st.sampled_from(['"soft"', '"hard"', '"x"']), "monthly_pkr": values},
            optional={"over_budget_stage": values},
        ).map(lambda d: _table(list(d.items()))),
        "reminders": st.fixed_dictionaries(
            {"working_hours": durations, "remind_after": durations},
            optional={"escalate_to": group_names.map(_string), "digest_at": durations},
        ).map(lambda d: _table(list(d.items()))),
    },
)  # fmt: skip


@FUZZ
@given(policies)
def test_property_files_shaped_like_a_policy(document: dict[str, str]) -> None:
    holds("\n".join(f"{key} = {value}" for key, value in document.items()) + "\n")

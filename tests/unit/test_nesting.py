"""The nesting bound (core.nesting): brackets, braces and dotted keys counted outside strings and
comments, by TOML's string rules or JSON's, and the line where they first go too deep."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.nesting import MAX_DEPTH, Syntax, too_deep

TOML, JSON = Syntax.TOML, Syntax.JSON


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("a = [[[[]]]]", None),  # four deep: within a limit of 4
        ("a = [[[[[]]]]]", 1),  # five
        ("a = [\n[\n[\n[\n[", 5),  # the line of the fifth
        ("a = {b={c={d={e={f=1}}}}}", 1),  # inline tables count as arrays do
        ("[[t]]\n[[t]]\n[[t]]", None),  # headers close on their line
        ("a = ']]]]]' # ]]]]\nb = [[[[[]]]]]", 2),  # closers in strings and comments close nothing
        ('a = "[[[[[[" # [[[[[', None),  # a basic string
        ("a = '[[[[[['", None),  # a literal string: no escapes in it
        ('a = "\\"[[[[[["', None),  # an escaped quote does not end a basic string
        ("a = 'x\\' [[[[[", 1),  # a backslash ends nothing in a literal string
        ('a = """\n[[[[[\n"""', None),  # multi-line basic
        ('a = """x\\"""[[[[[\n"""', None),  # an escaped quote inside it
        ('a = """x""""\nb = [[[[[', 2),  # two quotes of its own before the end
        ("a = '''\n[[[[[\n'''\nb = [[[[[", 4),  # multi-line literal, then real brackets
        ("a = '''never closed [[[[[\n[[[[[", None),  # a multi-line string runs to the end
        ('a = "never closed [[[[[\nb = [[[[[', 2),  # a basic string ends with its line
        ("# [[[[[[\n#{{{{{{", None),  # comments
        ("a.b.c.d = 1", None),  # a dotted key of four parts
        ("a.b.c.d.e = 1", 1),  # five
        ('[t."a" . b . "c".d.e]', 1),  # quoted parts and spaces count
        ("a = 1.5e3\nb = 1979-05-27T07:32:00.999Z", None),  # one dot is a float's or a time's
        ('"a.b.c.d.e" = 1', None),  # a quoted key holds its dots
    ],
)
def test_toml(text: str, line: int | None) -> None:
    assert too_deep(text, TOML, limit=4) == line


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ('{"a": [[[1]]]}', None),
        ('{"a": [[[[1]]]]}', 1),
        ('{"a": "[[[[[[[["}', None),
        ('{"a": "\\"[[[[[["}', None),  # an escaped quote
        ('{"a": "\\\\", "b": [[[[1]]]]}', 1),  # an escaped backslash ends before the quote
        ('{"a.b.c.d.e.f": 1.5}', None),  # JSON has no dotted keys
        ("# [[[[[", 1),  # nor comments
    ],
)
def test_json(text: str, line: int | None) -> None:
    assert too_deep(text, JSON, limit=4) == line


def test_the_limit_is_roomy_for_a_hand_written_file() -> None:
    assert too_deep("a = " + "[" * MAX_DEPTH + "]" * MAX_DEPTH, TOML) is None
    assert too_deep("a = " + "[" * (MAX_DEPTH + 1), TOML) == 1


def depth(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max((depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((depth(v) for v in value.values()), default=0)
    return 0


# Strings made of what the scan must see through: quotes, escapes, brackets, line breaks.
tricky = st.text(alphabet=list("[]{}\"\\'#\n.a\u202e"), max_size=6)
json_values = st.recursive(
    st.one_of(st.none(), st.integers(), st.floats(allow_nan=False), tricky),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(tricky, inner, max_size=3),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(json_values, st.booleans())
def test_property_a_json_documents_depth_is_found_exactly(value: Any, indent: bool) -> None:
    """Whatever its strings hold, a document nests exactly as deep as its value does."""
    text = json.dumps(value, indent=1 if indent else None, ensure_ascii=False)
    levels = depth(value)
    assert too_deep(text, JSON, limit=levels) is None
    if levels:
        assert too_deep(text, JSON, limit=levels - 1) is not None

"""How deep a document nests, found before a parser reads it.

tomllib and json read nested arrays and tables by recursion, a few Python frames a level: a
few kilobytes of brackets (`[[[[…`) exhaust the interpreter's recursion limit, and the parser
raises RecursionError instead of saying what is wrong with the file. A TOML dotted key nests
tables too (`a.b.c = 1`), and tomllib reads one in time quadratic in its parts: 40 KB of
`a.a.a.…` take it seconds, a 256 KB file minutes. So a document a person sends (the policy
file, the company file, a Mini App decision) is first scanned here: brackets and braces are
counted outside strings and comments, by the document's own string rules, and so are the
parts of each dotted key; the line where either first goes deeper than MAX_DEPTH is the
problem to report.

The scan is a regular expression, not a parser: it sees strings and comments as the parser
would in any document the parser could read up to that line, which is all it needs (the parser
stops at its first syntax error, so what follows one never reaches its recursion).
"""

from __future__ import annotations

import re
from enum import Enum

# A policy file nests 2 or 3 deep ([[rules]] holding stages = [{ … }]) and a decision 3; 16
# leaves room for any file a person writes by hand, and keeps tomllib's and json's recursion
# (at most a few frames a level) far below Python's 1,000 frames, wherever they are called.
MAX_DEPTH = 16


class Syntax(Enum):
    """The string and comment rules a document is scanned by."""

    TOML = "toml"  # "basic", 'literal', """multi-line""" and '''multi-line''' strings; # comments
    JSON = "json"  # "strings" with backslash escapes; no comments


# What the scan skips: each syntax's strings (an unterminated one runs to where its parser
# would give up: the line's end, or for a multi-line string the text's) and comments.
_SKIPPED = {
    Syntax.TOML: re.compile(
        r'"""(?:[^\\]|\\.)*?(?:"""(?:""?)?|\Z)'  # up to two quotes of its own before the end
        r"|'''.*?(?:'''(?:''?)?|\Z)"
        r'|"(?:[^"\\\n]|\\.)*"?'
        r"|'[^'\n]*'?"
        r"|#[^\n]*",
        re.DOTALL,
    ),
    Syntax.JSON: re.compile(r'"(?:[^"\\]|\\.)*"?', re.DOTALL),
}
# A line break, a bracket or brace, or the dots of one dotted key (its quoted parts blanked to
# a space by outside_strings); a float's or a time's one dot reads as a key of two parts.
_STRUCTURE = re.compile(r"[\[\]{}\n]|\.(?:[ \t]*[\w-]*[ \t]*\.)*")


def outside_strings(text: str, syntax: Syntax) -> str:
    """`text` with its strings and comments blanked out, each to a space and its line breaks:
    what is left is the document's structure, on the lines it was written on."""
    return _SKIPPED[syntax].sub(lambda found: " " + "\n" * found[0].count("\n"), text)


def too_deep(text: str, syntax: Syntax, *, limit: int = MAX_DEPTH) -> int | None:
    """The line (from 1) on which `text` first opens more than `limit` arrays and tables
    inside each other, or (TOML) writes a dotted key of more than `limit` parts, outside
    strings and comments; None if it never does."""
    depth, line = 0, 1
    for found in _STRUCTURE.finditer(outside_strings(text, syntax)):
        mark = found[0]
        if mark == "\n":
            line += 1
        elif mark in "[{":
            depth += 1
            if depth > limit:
                return line
        elif mark in "]}":  # one closer too many is the parser's to report
            depth = max(depth - 1, 0)
        elif syntax is Syntax.TOML and mark.count(".") + 1 > limit:
            return line
    return None

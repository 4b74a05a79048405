"""A TOML file a person wrote, read into data with every problem on its line: the nesting
bound before tomllib, tomllib's own errors, a number too long to read, the schema's errors
(pydantic's, as problem codes and values), and the line on which each key is written. The
approval policy file reads through it, and any other file of settings a person writes."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from core.errors import UnreadableFile
from core.nesting import MAX_DEPTH, Syntax, outside_strings, too_deep
from core.problems import Place, Problem, ProblemCode, Value

LINE = Place.LINE  # every problem of a file a person writes is on a line

# Where a value is in a document: its keys and array indexes, as pydantic reports them.
Path = tuple[str | int, ...]

# tomllib's words for where it stopped: a line, or the document's end.
_AT = re.compile(r"\s*\(at line (\d+), column \d+\)$")
_END = re.compile(r"\s*\(at end of document\)$")


class ValueProblem(ValueError):
    """A value that does not read, raised by a schema's own validator (a duration, a time of
    day): `code` and `values` say which problem it is, in the reader's language (core.problems),
    and the message says it in English, for the configuration's errors."""

    def __init__(self, message: str, code: ProblemCode, values: Mapping[str, Value]) -> None:
        super().__init__(message)
        self.code, self.values = code, dict(values)


# A file a person writes in TOML (the approval policy, the company) is a page or two; anything
# far larger is not one.
MAX_TOML_BYTES = 256 * 1024


def too_big(size: int, code: ProblemCode) -> Problem | None:
    """The problem (`code`, naming the kind of file) refusing a TOML file of `size` bytes
    before it is read, or None."""
    return None if size <= MAX_TOML_BYTES else Problem(0, None, code, {"size": size})


def toml_text(data: bytes, code: ProblemCode) -> str:
    """A TOML file's text; UnreadableFile, saying why, if it is too large (`code`, naming the
    kind of file) or not UTF-8."""
    refused = too_big(len(data), code)
    if refused is not None:
        raise UnreadableFile(refused)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        values: dict[str, Value] = {"byte": error.start + 1}
        raise UnreadableFile(Problem(0, None, ProblemCode.NOT_UTF8, values)) from None


M = TypeVar("M", bound=BaseModel)
# What a schema cannot see (names that must match, one default of several), read off the raw
# document with each key's line, so that it is reported beside the schema's problems.
CrossChecks = Callable[[dict[str, Any], Mapping["Path", int]], list[Problem]]


def checked_file(text: str, model: type[M], cross_checks: CrossChecks) -> M | list[Problem]:
    """A whole TOML file an admin writes, read and checked against `model` (pydantic) and by
    `cross_checks`: the model only if there is no problem at all, else every problem found in
    one pass, in line order."""
    read = read_toml(text)
    if isinstance(read, Problem):
        return [read]
    data, found = read
    lines = _tables_placed(found)
    problems = cross_checks(data, lines)
    try:
        parsed = model.model_validate(data)
    except ValidationError as error:
        problems += schema_problems(error, lines)
    return sorted(problems, key=lambda p: p.row) if problems else parsed


def _tables_placed(lines: Mapping[Path, int]) -> dict[Path, int]:
    """The lines, with a table written only through its sub-tables ([branches.liberty] and no
    [branches]) placed on the first of them: a problem about the whole table (too many
    entries, a key missing from it) then has a line to be fixed on, not none."""
    placed = dict(lines)
    for path, line in lines.items():
        for end in range(1, len(path)):
            if path[:end] not in lines:
                placed[path[:end]] = min(placed.get(path[:end], line), line)
    return placed


def table(value: object) -> dict[str, Any]:
    """A TOML table, or {} for anything else (the schema reports what it is instead)."""
    return value if isinstance(value, dict) else {}


def read_toml(text: str) -> tuple[dict[str, Any], dict[Path, int]] | Problem:
    """A TOML document's data and the line of each key in it (key_lines); or the problem that
    stops it being read at all: nested too deep (found before tomllib, whose recursion a few
    KB of brackets exhaust), tomllib's own error, or a whole number too long to read."""
    deep = too_deep(text, Syntax.TOML)
    if deep is not None:
        return Problem(deep, None, ProblemCode.TOO_DEEP, {"limit": MAX_DEPTH}, LINE)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        return _syntax(error)
    except ValueError as error:  # int()'s own, which tomllib lets through: over 4,300 digits
        return _too_long(text, error)
    return data, key_lines(text)


def schema_problems(error: ValidationError, lines: Mapping[Path, int]) -> list[Problem]:
    """Each of a schema's errors (pydantic's) as a problem on its line."""
    return [_schema(e, lines) for e in error.errors()]


def _syntax(error: tomllib.TOMLDecodeError) -> Problem:
    message = str(error)  # tomllib's own words: what it found, and where
    found = _AT.search(message)
    if found:
        detail = {"detail": message[: found.start()]}
        return Problem(int(found[1]), None, ProblemCode.NOT_TOML, detail, LINE)
    end = _END.search(message)
    line = 0 if end is None else 1  # "at end of document": the message says where
    return Problem(line, None, ProblemCode.NOT_TOML, {"detail": message}, LINE)


# A decimal whole number as TOML writes it, not a float's fraction or exponent.
_WHOLE = re.compile(r"(?<![\w.+-])[+-]?\d(?:_?\d)*")


def _too_long(text: str, error: ValueError) -> Problem:
    """The whole number too long for int() to read, placed on its line: the longest written
    outside strings and comments (tomllib's error says neither which nor where)."""
    code = outside_strings(text, Syntax.TOML)
    longest = max(_WHOLE.finditer(code), key=lambda n: len(n[0].replace("_", "")), default=None)
    if longest is None:  # not a number's after all: the error's own words, about the file
        return Problem(0, None, ProblemCode.NOT_TOML, {"detail": str(error)}, LINE)
    digits = len(longest[0].replace("_", "").lstrip("+-"))
    line = code.count("\n", 0, longest.start()) + 1
    return Problem(line, None, ProblemCode.NUMBER_TOO_LONG, {"digits": digits}, LINE)


def _schema(error: Mapping[str, Any], lines: Mapping[Path, int]) -> Problem:
    loc: Path = tuple(error["loc"])
    loc = tuple(p for p in loc if not (isinstance(p, str) and _UNION_MEMBER.match(p)))
    kind = error["type"]
    if kind in ("extra_forbidden", "missing"):
        parent, key = loc[:-1], {"key": repr(loc[-1])}
        code = ProblemCode.UNKNOWN_KEY if kind == "extra_forbidden" else ProblemCode.MISSING_KEY
        at = line_of(lines, loc if kind == "extra_forbidden" else parent)
        return Problem(at, shown(parent) or None, code, key, LINE)
    code, values = _message(error)
    return Problem(line_of(lines, loc), shown(loc) or None, code, values, LINE)


_UNION_MEMBER = re.compile(r"^\[key\]$")  # pydantic's mark of a dict key's own error

# pydantic's error types that need no value, and the problem each is.
_KINDS = {
    "int_type": ProblemCode.NOT_WHOLE_NUMBER,
    "int_from_float": ProblemCode.NOT_WHOLE_NUMBER,
    "float_type": ProblemCode.NOT_A_NUMBER,
    "string_type": ProblemCode.NOT_TEXT,
    "list_type": ProblemCode.NOT_A_LIST,
    "dict_type": ProblemCode.NOT_A_TABLE,
    "bool_type": ProblemCode.NOT_TRUE_OR_FALSE,
    "model_type": ProblemCode.NOT_A_TABLE,
    "model_attributes_type": ProblemCode.NOT_A_TABLE,
    "too_short": ProblemCode.NOT_EMPTY,
    "string_too_short": ProblemCode.NOT_EMPTY,
    "string_pattern_mismatch": ProblemCode.NOT_A_GROUP_NAME,
}


# pydantic's error types with a bound (the key of the bound in the error's context).
_BOUNDS = {
    "greater_than_equal": (ProblemCode.AT_LEAST, "ge"),
    "greater_than": (ProblemCode.MORE_THAN, "gt"),
    "less_than_equal": (ProblemCode.AT_MOST, "le"),
}
# pydantic's error types with a length limit.
_LIMITS = {"too_long": ProblemCode.TOO_MANY_ENTRIES, "string_too_long": ProblemCode.TEXT_TOO_LONG}


def _message(error: Mapping[str, Any]) -> tuple[ProblemCode, dict[str, Value]]:
    """A schema error as a problem code and its values."""
    kind, ctx = error["type"], error.get("ctx", {})
    if kind in _KINDS:
        return _KINDS[kind], {}
    if kind in _BOUNDS:
        code, bound = _BOUNDS[kind]
        return code, {"bound": _number(ctx[bound])}
    if kind in _LIMITS:
        return _LIMITS[kind], {"limit": int(ctx["max_length"])}
    if kind == "literal_error":
        return ProblemCode.ONE_OF, {"choices": str(ctx["expected"])}
    if kind == "value_error" and isinstance(ctx.get("error"), ValueProblem):
        return ctx["error"].code, dict(ctx["error"].values)
    return ProblemCode.UNREADABLE_VALUE, {"detail": str(error["msg"]).lower()}


def _number(value: float) -> str:
    """A bound as a person writes it: 0, 1,000, 2.5."""
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,}"


def shown(path: Path) -> str:
    """A path as a person reads it: rules[2].stages[1].approvals (arrays counted from 1)."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part + 1}]"
        else:
            text += f".{part}" if text else str(part)
    return text


def line_of(lines: Mapping[Path, int], path: Path) -> int:
    """The line of the deepest part of `path` the file wrote; 0 if none (the whole file)."""
    for end in range(len(path), 0, -1):
        if path[:end] in lines:
            return lines[path[:end]]
    return 0


_BARE = re.compile(r"[A-Za-z0-9_-]+")


def key_lines(text: str) -> dict[Path, int]:
    """The line (from 1) on which each table, key and array element of a TOML document that
    tomllib accepted starts, by its path: ("rules", 1, "stages", 0, "group") for the group of
    the first stage of the second [[rules]] table."""
    return _Scanner(text).scan()


class _Scanner:
    """A reader of just enough TOML to place keys: tables, arrays of tables, dotted keys,
    inline tables, arrays, and the strings and comments that may hide brackets."""

    def __init__(self, text: str) -> None:
        self.text, self.pos, self.line = text, 0, 1
        self.lines: dict[Path, int] = {}
        self.tables: dict[Path, int] = {}  # array of tables -> elements so far

    def scan(self) -> dict[Path, int]:
        base: Path = ()
        while self._skip(newlines=True):
            if self._peek() == "[":
                base = self._header()
            else:
                self._pair(base)
        return self.lines

    def _peek(self, ahead: int = 0) -> str:
        at = self.pos + ahead
        return self.text[at] if at < len(self.text) else ""

    def _skip(self, *, newlines: bool) -> bool:
        """Past spaces, comments and (if allowed) line ends; False at the end of the text."""
        while self.pos < len(self.text):
            c = self.text[self.pos]
            if c in " \t\r":
                self.pos += 1
            elif c == "\n" and newlines:
                self.pos += 1
                self.line += 1
            elif c == "#":
                while self.pos < len(self.text) and self.text[self.pos] != "\n":
                    self.pos += 1
            else:
                return True
        return False

    def _header(self) -> Path:
        many = self._peek(1) == "["
        self.pos += 2 if many else 1
        path = self._key()
        self._skip(newlines=False)
        self.pos += 2 if many else 1
        if many:
            index = self.tables.get(path, 0)
            self.tables[path] = index + 1
            self.lines.setdefault(path, self.line)
            path = (*path, index)
        self.lines.setdefault(path, self.line)
        return path

    def _key(self) -> Path:
        """A dotted key."""
        parts: list[str | int] = []
        while True:
            self._skip(newlines=False)
            c = self._peek()
            if c in "\"'":
                start = self.pos
                self._string()
                parts.append(tomllib.loads(f"k = {self.text[start : self.pos]}")["k"])
            else:
                found = _BARE.match(self.text, self.pos)
                if found is None:
                    break
                parts.append(found[0])
                self.pos = found.end()
            self._skip(newlines=False)
            if self._peek() != ".":
                break
            self.pos += 1
        return tuple(parts)

    def _pair(self, base: Path) -> None:
        """key = value, recording the key (and each prefix of a dotted key) and the value's
        inner keys and elements."""
        line = self.line
        key = self._key()
        for end in range(1, len(key) + 1):
            self.lines.setdefault((*base, *key[:end]), line)
        self._skip(newlines=False)
        self.pos += 1  # "="
        self._value((*base, *key))

    def _value(self, path: Path) -> None:
        self._skip(newlines=True)
        c = self._peek()
        if c == "{":
            self.pos += 1
            while self._skip(newlines=True) and self._peek() != "}":
                if self._peek() == ",":
                    self.pos += 1
                    continue
                self._pair(path)
            self.pos += 1
        elif c == "[":
            self.pos += 1
            index = 0
            while self._skip(newlines=True) and self._peek() != "]":
                if self._peek() == ",":
                    self.pos += 1
                    continue
                self.lines.setdefault((*path, index), self.line)
                self._value((*path, index))
                index += 1
            self.pos += 1
        elif c in "\"'":
            self._string()
        else:  # a number, date, boolean: up to the next delimiter
            while self.pos < len(self.text) and self.text[self.pos] not in ",]}#\n":
                self.pos += 1

    def _string(self) -> None:
        quote = self._peek()
        triple = self.text.startswith(quote * 3, self.pos)
        end = quote * 3 if triple else quote
        self.pos += len(end)
        while self.pos < len(self.text):
            c = self.text[self.pos]
            if c == "\\" and quote == '"':
                self.pos += 2
                continue
            if c == "\n":
                self.line += 1
            if self.text.startswith(end, self.pos):
                self.pos += len(end)
                # A multi-line string may end with up to two more quotes of its own.
                while triple and self._peek() == quote:
                    self.pos += 1
                return
            self.pos += 1

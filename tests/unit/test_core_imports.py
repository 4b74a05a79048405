"""Guard: core stays pure — no I/O libraries, no shell packages, no clock or randomness."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parents[2] / "core"

# Top-level modules core must not import: each is I/O, the shell, or hidden input.
FORBIDDEN_MODULES = frozenset(
    {
        "telegram",  # the bot framework belongs to bot/
        "sqlalchemy",  # the database belongs to store/
        "aiosqlite",
        "asyncpg",
        "alembic",
        "smtplib",  # mail belongs to bot/senders
        "aiosmtplib",
        "aiosmtpd",
        "email",
        "os",  # the environment is read by bot/config only
        "socket",  # no network
        "httpx",
        "bot",  # core depends on nothing outside itself
        "store",
        "random",  # randomness enters as an argument
        "time",  # time enters as an argument
        "uuid",  # ids enter as arguments
        "secrets",
        "importlib",  # a dynamic import would walk around every rule above
    }
)
# Reading the clock: `<datetime or date>.<one of these>`.
CLOCK_READS = frozenset({"now", "utcnow", "today"})


def _terminal_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _clock_names(tree: ast.AST) -> set[str]:
    """Names bound to datetime.datetime / datetime.date, including aliases."""
    names = {"datetime", "date"}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "datetime" and node.level == 0:
            names |= {a.asname for a in node.names if a.name in names and a.asname}
        if isinstance(node, ast.Import):
            names |= {a.asname for a in node.names if a.name == "datetime" and a.asname}
    return names


def _import_violations(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import):
        return [
            f"line {node.lineno}: import {a.name}"
            for a in node.names
            if a.name.split(".")[0] in FORBIDDEN_MODULES
        ]
    if isinstance(node, ast.ImportFrom):
        if node.level >= 2:  # core is a top-level package: `..` leaves it
            return [f"line {node.lineno}: relative import leaves core"]
        module = node.module or ""
        if node.level == 0 and module.split(".")[0] in FORBIDDEN_MODULES:
            return [f"line {node.lineno}: from {module} import"]
    return []


def find_violations(source: str) -> list[str]:
    """Every forbidden import or clock read in `source`, as 'line N: what'."""
    tree = ast.parse(source)
    clock_names = _clock_names(tree)
    found: list[str] = []
    for node in ast.walk(tree):
        found += _import_violations(node)
        if isinstance(node, ast.Call) and _terminal_name(node.func) == "__import__":
            found.append(f"line {node.lineno}: __import__()")
        if (
            isinstance(node, ast.Attribute)
            and node.attr in CLOCK_READS
            and _terminal_name(node.value) in clock_names
        ):
            found.append(f"line {node.lineno}: reads the clock ({node.attr})")
    return sorted(found)


CORE_FILES = sorted(CORE.rglob("*.py"))


def test_core_files_are_found() -> None:
    """The guard scans the real modules (it would pass vacuously on an empty list)."""
    names = {path.name for path in CORE_FILES}
    expected = {"states.py", "drafts.py", "policies.py", "retries.py", "effects.py", "errors.py"}
    assert expected <= names


@pytest.mark.parametrize("path", CORE_FILES, ids=[str(p.relative_to(CORE)) for p in CORE_FILES])
def test_core_module_is_pure(path: Path) -> None:
    """No core module imports I/O or shell packages, or reads the clock."""
    assert find_violations(path.read_text(encoding="utf-8")) == []


def test_checker_reports_sqlalchemy_import_and_datetime_now() -> None:
    """The checker is not blind: both kinds of violation in one module are reported."""
    source = (
        "from datetime import datetime\n"
        "import sqlalchemy\n"
        "\n"
        "def stamp():\n"
        "    return datetime.now()\n"
    )
    assert find_violations(source) == [
        "line 2: import sqlalchemy",
        "line 5: reads the clock (now)",
    ]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        # a plain import
        pytest.param("import telegram", "line 1: import telegram", id="import"),
        # a submodule import
        pytest.param("import os.path", "line 1: import os.path", id="submodule"),
        # an aliased import
        pytest.param("import asyncpg as pg", "line 1: import asyncpg", id="alias"),
        # a from-import of a name
        pytest.param("from os import environ", "line 1: from os import", id="from_import"),
        # a from-import of a submodule
        pytest.param(
            "from email.message import EmailMessage",
            "line 1: from email.message import",
            id="from_submodule",
        ),
        # hidden inside a function
        pytest.param("def f():\n    import smtplib", "line 2: import smtplib", id="in_function"),
        # hidden inside a method
        pytest.param(
            "class C:\n    def m(self):\n        from store.engine import x",
            "line 3: from store.engine import",
            id="in_method",
        ),
        # the shell package
        pytest.param("from bot import config", "line 1: from bot import", id="bot"),
        # a relative import climbing out of core
        pytest.param(
            "from ..bot import config", "line 1: relative import leaves core", id="relative_escape"
        ),
        # randomness
        pytest.param("import random", "line 1: import random", id="random"),
        # the wall clock through time
        pytest.param("from time import time", "line 1: from time import", id="time"),
        # ids
        pytest.param("import uuid", "line 1: import uuid", id="uuid"),
        # tokens
        pytest.param("from secrets import token_hex", "line 1: from secrets import", id="secrets"),
        # a dynamic import
        pytest.param("m = __import__('socket')", "line 1: __import__()", id="dunder_import"),
        # datetime.utcnow
        pytest.param(
            "from datetime import datetime\nx = datetime.utcnow()",
            "line 2: reads the clock (utcnow)",
            id="utcnow",
        ),
        # date.today
        pytest.param(
            "from datetime import date\nx = date.today()",
            "line 2: reads the clock (today)",
            id="date_today",
        ),
        # through the module
        pytest.param(
            "import datetime\nx = datetime.datetime.now()",
            "line 2: reads the clock (now)",
            id="module_path",
        ),
        # through a module alias
        pytest.param(
            "import datetime as dt\nx = dt.datetime.now()",
            "line 2: reads the clock (now)",
            id="module_alias",
        ),
        # through a class alias
        pytest.param(
            "from datetime import datetime as DT\nx = DT.now()",
            "line 2: reads the clock (now)",
            id="class_alias",
        ),
        # a reference kept for later is as bad as a call
        pytest.param(
            "from datetime import datetime\nclock = datetime.now",
            "line 2: reads the clock (now)",
            id="reference",
        ),
    ],
)
def test_checker_catches(source: str, expected: str) -> None:
    """Each forbidden form, wherever it hides, is reported on its line."""
    assert find_violations(source) == [expected]


@pytest.mark.parametrize(
    "source",
    [
        # time values as arguments are the point
        pytest.param("from datetime import datetime, timedelta\nx = datetime(2026, 1, 1)", id="dt"),
        # core importing core
        pytest.param("from core.errors import IllegalTransition", id="core_import"),
        # a sibling relative import stays inside core
        pytest.param("from . import states", id="sibling_relative"),
        # pure standard library
        pytest.param("import hashlib\nimport json\nimport hmac", id="stdlib"),
        # a parameter called now is how time enters
        pytest.param("def f(now):\n    return now.isoformat()", id="now_param"),
        # `.now` on something that is not a clock
        pytest.param("def f(job):\n    return job.now", id="other_now"),
        # names that merely start like forbidden ones
        pytest.param("import emails_helper\nimport timeit_like", id="prefix_names"),
    ],
)
def test_checker_allows(source: str) -> None:
    """Pure code is not flagged, so the guard does not cry wolf."""
    assert find_violations(source) == []

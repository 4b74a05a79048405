"""Guard: core never reads the clock (time enters as an argument, `now`), nor imports by name
at run time. What core may import is import-linter's to check (`make check`; the contracts in
pyproject.toml, tested in test_layers.py); a clock read is a call, which no import shows."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parents[2] / "core"

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


def find_violations(source: str) -> list[str]:
    """Every clock read or dynamic import in `source`, as 'line N: what'."""
    tree = ast.parse(source)
    clock_names = _clock_names(tree)
    found: list[str] = []
    for node in ast.walk(tree):
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
    """The guard scans the real modules, in every package (it would pass vacuously on none)."""
    names = {str(path.relative_to(CORE)) for path in CORE_FILES}
    expected = {"jobs/states.py", "drafting/drafts.py", "approval/policies.py", "errors.py"}
    assert expected <= names


@pytest.mark.parametrize("path", CORE_FILES, ids=[str(p.relative_to(CORE)) for p in CORE_FILES])
def test_core_module_reads_no_clock(path: Path) -> None:
    """No core module reads the clock or imports by name."""
    assert find_violations(path.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        pytest.param("m = __import__('socket')", "line 1: __import__()", id="dunder_import"),
        pytest.param(
            "from datetime import datetime\nx = datetime.now()",
            "line 2: reads the clock (now)",
            id="now",
        ),
        pytest.param(
            "from datetime import datetime\nx = datetime.utcnow()",
            "line 2: reads the clock (utcnow)",
            id="utcnow",
        ),
        pytest.param(
            "from datetime import date\nx = date.today()",
            "line 2: reads the clock (today)",
            id="date_today",
        ),
        pytest.param(
            "import datetime\nx = datetime.datetime.now()",
            "line 2: reads the clock (now)",
            id="module_path",
        ),
        pytest.param(
            "import datetime as dt\nx = dt.datetime.now()",
            "line 2: reads the clock (now)",
            id="module_alias",
        ),
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
        pytest.param(
            "def f():\n    from datetime import date\n    return date.today()",
            "line 3: reads the clock (today)",
            id="in_function",
        ),
    ],
)
def test_checker_catches(source: str, expected: str) -> None:
    """Each form of reading the clock, wherever it hides, is reported on its line."""
    assert find_violations(source) == [expected]


@pytest.mark.parametrize(
    "source",
    [
        # time values as arguments are the point
        pytest.param("from datetime import datetime, timedelta\nx = datetime(2026, 1, 1)", id="dt"),
        # a parameter called now is how time enters
        pytest.param("def f(now):\n    return now.isoformat()", id="now_param"),
        # `.now` on something that is not a clock
        pytest.param("def f(job):\n    return job.now", id="other_now"),
    ],
)
def test_checker_allows(source: str) -> None:
    """Pure code is not flagged, so the guard does not cry wolf."""
    assert find_violations(source) == []

"""The layers' contracts (import-linter, [tool.importlinter] in pyproject.toml, run by
`make check`) are not blind: on a copy of the code with one import of each kind they forbid,
`lint-imports` fails and names every one of them, file and line."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# (module file, an import it must not make, the contract that forbids it)
BREACHES = [
    ("core/jobs/states.py", "import os", "The core does no I/O"),
    ("core/drafting/money.py", "import sqlalchemy", "The core does no I/O"),
    ("core/jobs/jobs.py", "from core.purchasing import edits", "The core's concepts"),
    ("core/approval/budgets.py", "from core.records import audit", "The core's concepts"),
    ("core/errors.py", "from store import schema", "The shell above the store"),
    ("store/schema.py", "from bot import config", "The shell above the store"),
    ("bot/words/texts.py", "from bot.telegram import cards", "The shell's roles"),
    ("bot/telegram/app.py", "from bot.dev import smtp", "The emulators and the demo"),
]


def _lint(tree: Path) -> subprocess.CompletedProcess[str]:
    lint = Path(sys.executable).with_name("lint-imports")
    return subprocess.run(
        [str(lint), "--no-cache", "--config", str(tree / "pyproject.toml")],
        cwd=tree,
        env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.slow  # runs lint-imports, a process
def test_every_contract_fails_on_the_import_it_forbids(tmp_path: Path) -> None:
    for package in ("core", "store", "bot"):
        shutil.copytree(
            ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    lines: dict[str, int] = {}
    for path, statement, _contract in BREACHES:
        module = tmp_path / path
        text = module.read_text(encoding="utf-8")
        lines[path] = text.count("\n") + 1
        module.write_text(f"{text}{statement}\n", encoding="utf-8")

    result = _lint(tmp_path)

    assert result.returncode == 1, result.stdout + result.stderr
    report = result.stdout
    for path, statement, contract in BREACHES:
        assert f"{contract}" in report and "BROKEN" in report
        importer = path.removesuffix(".py").replace("/", ".")
        imported = statement.split()[1]
        assert f"{importer} -> {imported}" in report, (importer, imported, report)
        assert f"(l.{lines[path]})" in report
    kept = [line for line in report.splitlines() if line.endswith(" KEPT")]
    assert kept == [], kept  # each contract caught its own breach

"""The bench's one table: Markdown, one table per section, with the machine it ran on."""

from __future__ import annotations

import os
import platform
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from bench.common import Result

_MET = {True: "yes", False: "**no**", None: "–"}


@dataclass(frozen=True)
class Machine:
    """Where and when the figures were measured."""

    cores: int
    cpu: str
    python: str
    date: str
    commit: str

    @classmethod
    def here(cls, root: Path) -> Machine:
        """This machine, now, at the commit checked out in `root`."""
        return cls(
            cores=os.cpu_count() or 0,
            cpu=_cpu_model(),
            python=platform.python_version(),
            date=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            commit=_commit(root),
        )

    def markdown(self) -> str:
        """One line for the top of the report."""
        return (
            f"Machine: {self.cores} cores, {self.cpu}; Python {self.python}; "
            f"{self.date}; commit {self.commit}."
        )


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass  # not Linux: fall back on what platform knows
    return platform.processor() or platform.machine() or "unknown CPU"


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(  # noqa: S603 - fixed arguments, no shell
        ["git", *args],  # noqa: S607 - git from PATH, as a developer runs it
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip() if done.returncode == 0 else ""


def _commit(root: Path) -> str:
    """The short hash, with "+dirty" when the tree has changes not committed."""
    short = _git(root, "rev-parse", "--short", "HEAD")
    if not short:
        return "unknown"
    return f"{short}+dirty" if _git(root, "status", "--porcelain") else short


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def section_table(rows: Sequence[Result]) -> str:
    """One section's rows as a Markdown table: its figures' columns, then target, met, notes."""
    columns: list[str] = []
    for row in rows:
        columns += [c for c in row.figures if c not in columns]
    header = ["", *columns, "target", "met", "notes"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        cells = [row.name, *(row.figures.get(c, "") for c in columns)]
        cells += [row.target, _MET[row.met], row.notes]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines)


def render(results: Sequence[Result]) -> str:
    """Every section, in the order its first row came, each under its own heading."""
    sections: dict[str, list[Result]] = {}
    for result in results:
        sections.setdefault(result.section, []).append(result)
    parts = [f"## {name}\n\n{section_table(rows)}" for name, rows in sections.items()]
    return "\n\n".join(parts) + "\n"


def document(results: Sequence[Result], machine: Machine, command: str) -> str:
    """docs/benchmarks.md: what it is, where it ran, and the table."""
    return (
        "# Benchmarks\n\n"
        f"Written by `{command}` (bench/); do not edit by hand. Targets are those of issue 11;\n"
        "ratios are meant to hold across machines, absolute rates only as context.\n\n"
        f"{machine.markdown()}\n\n{render(results)}"
    )

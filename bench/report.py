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
# What each section measures, said under its heading, so the report stands on its own.
MEASURES = {
    "Lifecycle throughput": (
        "Purchase orders taken through their whole lifecycle as production runs it: a validated "
        "draft opened as a job, approved through the use case a tap calls, and e-mailed by the "
        "real outbox runner and SMTP sender to an SMTP server in another process, each phase over "
        "all N orders before the next. Lifecycles per second, each phase's rate, and the commits, "
        "SQL statements and CPU time one lifecycle costs."
    ),
    "Commit floor": (
        "The database's own pace through manzoori's driver stack: one-row UPDATE transactions, "
        "one after the other, divided by the commits a lifecycle makes; manzoori's lifecycles per "
        "second as a share of that floor."
    ),
    "DBOS peer": (
        "The same purchase-order flow written with DBOS Transact, a durable-workflow library, "
        "on the same kind of database and the same SMTP server: its lifecycles per second and CPU "
        "time, and manzoori's rate as a multiple of it. The peer's send step renders the PDF "
        "with manzoori's code in its own process, one at a time; manzoori renders in its two "
        "reniced worker processes (bot.documents.rendering), as it runs in production, and "
        "counts their CPU."
    ),
    "200 ms SMTP relay": (
        "The lifecycle against an SMTP server that answers each message's DATA after 200 ms, as "
        "a distant relay does: sends per second from one outbox runner."
    ),
    "Tap to answer": (
        "Approvers tap Approve on their cards all at once, through the real bot over HTTP "
        "against the Bot API emulator: per tap, the time from the update being handed out in "
        "getUpdates to the bot's answerCallbackQuery; once idle, once while a requester's large "
        "sheet is being submitted."
    ),
    "Taps from outside": (
        "The bot as its own process (`manzoori run`), as deployed, and the Bot API emulator in "
        "another: approvers tap Approve on their cards all at once; per tap, from the update "
        "leaving the emulator (its getUpdates answer, or its webhook POST) to the answer "
        "reaching it. The floor, a bare python-telegram-bot application that only answers, runs "
        "the same way in the same run; each subject's second burst is measured."
    ),
    "Approval to e-mail": (
        "Approvers tap Approve on their cards one a second, through the real bot against the Bot "
        "API emulator with its runners in their own loops, as `manzoori run` runs them: per "
        "approval, the time from the tap to the SMTP server (another process) accepting the "
        "PO's e-mail, its PDF made."
    ),
    "Mini App on a slow phone": (
        "A 60-line PO's page opened from its card in Debian's Chromium at phone size, its "
        "network emulated at 400 kbit/s each way with 400 ms latency, against the real bot's "
        "front door: seconds until every line is shown and until Approve can be tapped, and "
        "the bytes received; on a fresh phone, then again from its cache and kept copy. "
        "The catalogue's row: a requester opens the catalogue of 5,000 SKUs on the same link "
        "and types a SKU; seconds from the tap to its one result shown, the slowest "
        "keystroke's search and drawing with the CPU slowed four times (a cheap phone), and "
        "the catalogue's bytes on the wire (gzip)."
    ),
    "Sheet intake": (
        "A requester sends a large CSV and XLSX sheet through the bot: seconds from the upload "
        "to the commit that writes the POs and their cards, and to the reply; the peak of this "
        "process's Python allocations during an intake."
    ),
    "Card fan-out": (
        "One PO, many approvers: the notice runner delivers a card to each through the real bot "
        "while the emulator answers 429 past Telegram's limits (30 messages a second overall, "
        "one a second per chat). Messages per second against the limit the bot's rate limiter "
        "is set to, and the 429s it drew."
    ),
    "PO document": (
        "The purchase order's PDF (bot.documents.pdf) that the supplier's e-mail attaches and an "
        "approver opens: its pages and size, and the median time to render it in this process "
        "after a first render, for 10 lines in English, 10 lines with Urdu text (set in the "
        "Nastaliq font, embedded too) and 200 lines."
    ),
    "Library floor": (
        "What the libraries manzoori is built on cost on this machine with none of manzoori in "
        "the way: python-telegram-bot answering taps, a PO e-mail built with the standard "
        "library and sent with aiosmtplib, one SELECT through SQLAlchemy; and what one "
        "lifecycle's e-mail and statements add up to, beside the targets they bound."
    ),
}


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
    parts = [
        "\n\n".join(p for p in (f"## {name}", MEASURES.get(name, ""), section_table(rows)) if p)
        for name, rows in sections.items()
    ]
    return "\n\n".join(parts) + "\n"


def document(results: Sequence[Result], machine: Machine, command: str) -> str:
    """docs/benchmarks.md: what it is, where it ran, and the table."""
    return (
        "# Benchmarks\n\n"
        f"Written by `{command}` (bench/); do not edit by hand. Each section says what it\n"
        "measures, and each row the target it is held to; ratios are meant to hold across\n"
        "machines, absolute rates only as context.\n\n"
        f"{machine.markdown()}\n\n{render(results)}"
    )

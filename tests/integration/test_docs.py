"""The docs keep their word: every shell block marked runnable runs as shown, every other shell
block names what checks it, and every relative link leads to a file (and heading) that exists.

The convention (docs/development.md, "Docs"): a fenced block whose info string is `sh runnable`
runs, line by line under `bash -e`, in a fresh directory holding a copy of samples/, with a
migrated, empty SQLite database and fresh keys in the environment, and `manzoori` and
`uv run manzoori` both at hand; it must exit 0. Any other `sh` block says what checks it:
`sh checked-by=PATH[,PATH…]`, each PATH a file of this repository (the test or the CI script that
runs that command).
"""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from store.engine import make_engine
from store.migrate import upgrade
from tests.helpers.cli import SUBPROCESS_TIMEOUT, base_env

ROOT = Path(__file__).resolve().parents[2]
DOCS = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))
SHELLS = frozenset({"sh", "bash", "shell", "console"})
FENCE = re.compile(r"^(`{3,}|~{3,})\s*(.*)$")
# [text](target) and ![alt](target); the target up to a space (a title) or the closing bracket.
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
# A code span: a run of backticks, anything, then a run of as many (CommonMark).
INLINE_CODE = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.DOTALL)
MAKE_TARGET = re.compile(r"^([A-Za-z][\w-]*):(?!=)", re.MULTILINE)  # `name:`, not `NAME :=`


@dataclass(frozen=True)
class Block:
    """A fenced code block of a doc: where it starts, its info string's words, its text."""

    doc: Path
    line: int  # of the opening fence, from 1
    end: int  # of the closing fence
    info: tuple[str, ...]
    code: str

    def __str__(self) -> str:
        return f"{self.doc.relative_to(ROOT)}:{self.line}"

    @property
    def shell(self) -> bool:
        """A block of shell commands."""
        return bool(self.info) and self.info[0] in SHELLS

    @property
    def runnable(self) -> bool:
        """Marked to be run by this test."""
        return self.shell and "runnable" in self.info[1:]

    @property
    def checked_by(self) -> list[str]:
        """The files named as what checks a block that is not run here."""
        words = [w.removeprefix("checked-by=") for w in self.info if w.startswith("checked-by=")]
        return [path for word in words for path in word.split(",") if path]


def blocks(doc: Path) -> list[Block]:
    """Every fenced block of a Markdown file, in order."""
    found: list[Block] = []
    fence, start, info, lines = "", 0, (), []
    for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
        opening = FENCE.match(line.strip()) if not fence else None
        if opening:
            fence, start, info, lines = opening[1], number, tuple(opening[2].split()), []
        elif fence and line.strip().startswith(fence) and not line.strip().strip(fence[0]):
            found.append(Block(doc, start, number, info, "\n".join(lines) + "\n"))
            fence = ""
        elif fence:
            lines.append(line)
    assert not fence, f"{doc.relative_to(ROOT)}:{start}: a code block is never closed"
    return found


def prose(doc: Path) -> str:
    """The Markdown outside code: fenced blocks and inline code blanked out."""
    text = doc.read_text(encoding="utf-8").splitlines()
    for block in blocks(doc):
        text[block.line - 1 : block.end] = [""] * (block.end - block.line + 1)
    return INLINE_CODE.sub("", "\n".join(text))


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    kept = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return kept.replace(" ", "-")


def anchors(doc: Path) -> set[str]:
    """The anchors of a Markdown file's headings."""
    return {slug(line.lstrip("#")) for line in prose(doc).splitlines() if line.startswith("#")}


ALL_BLOCKS = [block for doc in DOCS for block in blocks(doc)]
RUNNABLE = [block for block in ALL_BLOCKS if block.runnable]


def test_the_docs_have_runnable_blocks() -> None:
    assert len(RUNNABLE) >= 5, [str(b) for b in RUNNABLE]  # a changed marker would run nothing


@pytest.mark.parametrize("block", [b for b in ALL_BLOCKS if b.shell], ids=str)
def test_a_shell_block_is_run_here_or_names_what_checks_it(block: Block) -> None:
    if block.runnable:
        return
    assert block.checked_by, f"{block}: mark it `sh runnable`, or `sh checked-by=PATH`"
    for path in block.checked_by:
        assert (ROOT / path).is_file(), f"{block}: checked-by {path}, which does not exist"


def test_every_make_target_a_shell_block_shows_is_one_the_makefile_defines() -> None:
    defined = set(MAKE_TARGET.findall((ROOT / "Makefile").read_text(encoding="utf-8")))
    shown = {}
    for block in (b for b in ALL_BLOCKS if b.shell):
        for line in block.code.splitlines():
            words = shlex.split(line, comments=True)
            while words and "=" in words[0]:  # VARIABLE=value before the command
                words.pop(0)
            if words[:1] == ["make"]:
                for target in (w for w in words[1:] if "=" not in w):
                    shown[target] = str(block)
    assert shown, "no make command found: the parsing is broken"
    assert {t: where for t, where in shown.items() if t not in defined} == {}


@pytest.mark.parametrize("doc", DOCS, ids=lambda doc: str(doc.relative_to(ROOT)))
def test_every_relative_link_leads_to_a_file_and_heading_that_exist(doc: Path) -> None:
    broken = []
    for target in LINK.findall(prose(doc)):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto: …
            continue
        path, _, anchor = target.partition("#")
        file = (doc.parent / path).resolve() if path else doc
        if not file.exists():
            broken.append(f"{target}: no such file")
        elif anchor and (file.suffix != ".md" or anchor not in anchors(file)):
            broken.append(f"{target}: no heading #{anchor} in {file.relative_to(ROOT)}")
    assert not broken, f"{doc.relative_to(ROOT)}: {broken}"


@pytest.fixture(scope="module")
def migrated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty SQLite database migrated to head, which each block gets a copy of."""
    path = tmp_path_factory.mktemp("docs-db") / "manzoori.db"

    async def migrate() -> None:
        engine = make_engine(f"sqlite+aiosqlite:///{path}")
        await upgrade(engine)
        await engine.dispose()

    asyncio.run(migrate())
    return path


def _shell_env(db_url: str) -> dict[str, str]:
    """base_env's settings, with this environment's `manzoori` and `uv` first on PATH and
    `uv run` pointed at this checkout from wherever the block runs."""
    env = base_env(db_url)
    uv = os.environ.get("UV") or shutil.which("uv")
    folders = [str(Path(sys.executable).parent), *([str(Path(uv).parent)] if uv else [])]
    env["PATH"] = os.pathsep.join([*folders, env.get("PATH", "")])
    env.update(UV_PROJECT=str(ROOT), UV_NO_SYNC="1")  # the environment this test runs in
    return env


def _run(block: Block, folder: Path, template: Path) -> subprocess.CompletedProcess[str]:
    """The block under `bash -e -o pipefail` in `folder`, on its own copy of the database."""
    folder.mkdir()
    shutil.copytree(ROOT / "samples", folder / "samples")
    shutil.copyfile(template, folder / "manzoori.db")
    env = _shell_env(f"sqlite+aiosqlite:///{folder / 'manzoori.db'}")
    return subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", block.code],
        cwd=folder, env=env, capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT,
        check=False,
    )  # fmt: skip


@pytest.fixture(scope="module")
def runs(
    migrated: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, subprocess.CompletedProcess[str]]]:
    """Every runnable block run once, side by side (each command's start-up dominates)."""
    root = tmp_path_factory.mktemp("docs-blocks")
    folders = [root / f"block-{n}" for n in range(len(RUNNABLE))]
    with ThreadPoolExecutor(len(RUNNABLE)) as pool:
        done = list(pool.map(lambda b, f: _run(b, f, migrated), RUNNABLE, folders))
    yield {str(block): result for block, result in zip(RUNNABLE, done, strict=True)}


@pytest.mark.slow  # runs the blocks' commands
@pytest.mark.parametrize("block", RUNNABLE, ids=str)
def test_a_runnable_block_runs_as_shown(
    block: Block, runs: dict[str, subprocess.CompletedProcess[str]]
) -> None:
    result = runs[str(block)]
    assert result.returncode == 0, (
        f"{block} exited {result.returncode}:\n{block.code}\n"
        f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    )

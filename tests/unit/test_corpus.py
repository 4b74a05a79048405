"""The hostile-input corpus: every file in tests/corpus/files/ through the real isolated parser
and read_items, answered with exactly the reply tests/corpus/expected.toml gives: every one is
refused, with the lead naming the file and saying nothing was created, then the reason."""

from __future__ import annotations

import io
import time
import tomllib
import zipfile
from pathlib import Path
from typing import Any

import pytest

from bot.files import limits
from bot.files.parsing import parse_isolated
from bot.files.sheets import read_sheet
from bot.words import texts
from bot.words.problems import problem_text
from core.drafting.sheets import TOO_MANY_ROWS, read_items
from core.errors import UnreadableSheet
from core.purchasing.submissions import Submission
from tests.corpus import build

CORPUS = Path(__file__).parent.parent / "corpus"
EXPECTED: dict[str, Any] = tomllib.loads((CORPUS / "expected.toml").read_text("utf-8"))
CASES: dict[str, dict[str, Any]] = {
    **{name: EXPECTED[group] for name, group in EXPECTED["cases"].items()},
    **EXPECTED["files"],
}


def test_every_file_has_a_case_and_every_case_a_file() -> None:
    assert sorted(path.name for path in (CORPUS / "files").iterdir()) == sorted(CASES)


def members(data: bytes) -> list[tuple[str, bytes]]:
    """A package's members in order, without XlsxWriter's creation time."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        infos = [info for info in archive.infolist() if info.filename != "docProps/core.xml"]
        return [(info.orig_filename, archive.read(info)) for info in infos]


@pytest.mark.filterwarnings("ignore:Duplicate name")  # duplicate_member.xlsx, on purpose
def test_the_files_are_what_the_build_script_writes() -> None:
    for name, data in build.workbooks().items():
        assert members((CORPUS / "files" / name).read_bytes()) == members(data), name
    for name, data in build.texts().items():
        assert (CORPUS / "files" / name).read_bytes() == data, name


def reply(name: str, data: bytes) -> str:
    """What the requester is told of the file: its refusal by the worker, or its rows'."""
    try:
        table = parse_isolated(read_sheet, data)
    except UnreadableSheet as refused:
        return texts.refusal(texts.Refusing.SHEET, name, refused)
    return texts.submission(Submission(problems=tuple(read_items(table)[1])), name)


# A case with its own time bound races the clock: its parse worker runs niced, so beside
# another test on both cores it waits for a core. Those run with the timed tests, one at a time.
@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=pytest.mark.timed) if "seconds" in CASES[name] else name
        for name in sorted(CASES)
    ],
)
def test_each_hostile_file_gets_its_exact_reply(name: str) -> None:
    case = CASES[name]
    data = (CORPUS / "files" / name).read_bytes()
    started = time.monotonic()
    said = reply(name, data).splitlines()
    took = time.monotonic() - started
    reasons = [case["refusal"]] if "refusal" in case else case["problems"]
    assert said == [f"{name}: not accepted; nothing was created. Please fix:", *reasons]
    assert took < case.get("seconds", 5.0)


def test_the_messages_are_the_modules_constants() -> None:
    assert EXPECTED["unusual"]["refusal"] == limits.UNUSUAL_PARTS
    assert CASES["too_many_rows.csv"]["problems"] == [problem_text(TOO_MANY_ROWS)]


def test_a_too_long_csv_is_cut_at_the_limit_not_read_to_its_end() -> None:
    table = read_sheet((CORPUS / "files" / "too_many_rows.csv").read_bytes())
    assert table.more_rows and len(table.rows) == 1 + 10_000

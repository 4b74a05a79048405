"""One shape for every refusal of a file (issue 21): whichever check refused it, the person
reads one lead naming the file and saying that nothing came of it, then the reasons.

Every check that can refuse a restock sheet, a terms file or a policy file is here with
something it refuses, as that check reports it; a test fails if bot.files.sheets or
bot.files.parsing gains a refusal that is not here. The bot and the CLI say all of them through
bot.words.texts.refusal (tests/e2e/test_sheets_bot.py, tests/integration/test_cli_*.py).
"""

from __future__ import annotations

import ast
import functools
import io
import zipfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType

import pytest

from bot.files import limits, parsing
from bot.files.parsing import PARSE_FAILED, PARSE_TIMEOUT
from bot.files.sheets import read_csv_text, read_sheet
from bot.words.i18n import Language, isolated, translator
from bot.words.problems import problem_lines
from bot.words.texts import Refusing, refusal
from core.approval import approval_policy, budgets
from core.company.company_file import parse_company
from core.drafting.intake import check_sheet
from core.drafting.sheets import MAX_SHEET_BYTES, too_big
from core.drafting.terms import Terms, parse_terms
from core.errors import UnreadableFile, UnreadableSheet
from core.problems import Problem
from core.purchasing import submissions
from core.toml_files import toml_text
from core.versions import FileKind
from tests.helpers.urdu import english_runs
from tests.helpers.xlsx import xlsx_bytes

ROOT = Path(__file__).parent.parent
CORPUS = ROOT / "corpus" / "files"
UR = translator(Language.UR)
# A name with a line break in it: the lead shows it on one line (core.texts.flatten).
NAME = "restock\n(2).xlsx"
SHOWN = "restock (2).xlsx"
LEADS = {
    Refusing.SHEET: f"{SHOWN}: not accepted; nothing was created. Please fix:",
    Refusing.IMPORT: f"{SHOWN}: not imported; nothing changed. Please fix:",
    Refusing.POLICY: f"{SHOWN}: not a valid approval policy. Please fix:",
    Refusing.COMPANY: f"{SHOWN}: not a valid company file. Please fix:",
}
URDU_LEADS = {
    Refusing.SHEET: f"{isolated(SHOWN)}: قبول نہیں ہوئی؛ کچھ نہیں بنایا گیا۔ براہِ کرم درست کریں:",
    Refusing.IMPORT: f"{isolated(SHOWN)}: درآمد نہیں ہوئی؛ کچھ تبدیل نہیں ہوا۔ براہِ کرم درست کریں:",
    Refusing.POLICY: f"{isolated(SHOWN)}: درست منظوری پالیسی نہیں۔ براہِ کرم درست کریں:",
    Refusing.COMPANY: f"{isolated(SHOWN)}: درست کمپنی فائل نہیں۔ براہِ کرم درست کریں:",
}
Reasons = UnreadableSheet | list[Problem]


@functools.cache
def terms() -> Terms:
    found, problems = parse_terms(
        read_csv_text((ROOT / "data" / "terms" / "good.csv").read_bytes())
    )
    assert found is not None, problems
    return found


def unread(data: bytes, reader: Callable[[bytes], object] = read_sheet) -> UnreadableSheet:
    """The sentence a reader refuses `data` with."""
    with pytest.raises(UnreadableSheet) as caught:
        reader(data)
    return caught.value


def corpus(name: str) -> UnreadableSheet:
    return unread((CORPUS / name).read_bytes())


def checked(data: bytes, *, priced: bool = True) -> list[Problem]:
    """The problems of a readable sheet, checked against the terms (or with none imported)."""
    problems = check_sheet(read_sheet(data), terms() if priced else None)[1]
    assert problems
    return problems


@functools.cache
def zip_bomb() -> UnreadableSheet:
    """A workbook of under 1 MB that would unpack to 101 MB."""
    buffer = io.BytesIO(xlsx_bytes([["sku"], ["A-1"]]))
    with (
        zipfile.ZipFile(buffer, "a", zipfile.ZIP_DEFLATED) as archive,
        archive.open("xl/media/zeros.bin", "w") as entry,
    ):
        for _ in range(101):
            entry.write(bytes(1024 * 1024))
    return unread(buffer.getvalue())


def over_budget() -> list[Problem]:
    """Hard mode's refusal of a sheet that takes a category over its month."""
    month = budgets.month_of(datetime(2026, 12, 1, tzinfo=UTC), UTC)
    found = budgets.CategoryMonth("cables", month, 100_000, 90_000, 20_000)
    return budgets.refusal([found])


def unreadable(kind: FileKind, data: bytes) -> list[Problem]:
    with pytest.raises(UnreadableFile) as caught:
        toml_text(data, kind.too_big)
    return [caught.value.problem]


GOOD_ROWS = b"sku,quantity\nCBL-USBC-1M,2\n"
# Each check that can refuse a file, and what it refuses; the id names the check.
CASES = [
    # Restock sheets, in the order the bot checks them.
    pytest.param(Refusing.SHEET, lambda: [too_big(MAX_SHEET_BYTES + 1)], id="over-5-MB"),
    pytest.param(Refusing.SHEET, lambda: unread(b""), id="empty-file"),
    pytest.param(Refusing.SHEET, lambda: unread(b"\x89PNG\r\n\x1a\n\x00"), id="not-a-sheet"),
    pytest.param(Refusing.SHEET, lambda: unread(bytes.fromhex("D0CF11E0A1B11AE1")), id="xls"),
    pytest.param(Refusing.SHEET, lambda: unread(b"\xff\xfes\x00k\x00u\x00"), id="utf-16"),
    pytest.param(Refusing.SHEET, lambda: unread(b'sku\n"A-2"x\n'), id="malformed-csv"),
    pytest.param(Refusing.SHEET, lambda: corpus("unclosed_quote.csv"), id="unclosed-quote"),
    pytest.param(Refusing.SHEET, lambda: corpus("mixed_encoding.csv"), id="mixed-encoding"),
    pytest.param(Refusing.SHEET, lambda: unread(b"sku\n" + b"x" * 10_001), id="long-csv-cell"),
    pytest.param(Refusing.SHEET, lambda: unread(xlsx_bytes([["sku"]])[:300]), id="damaged"),
    pytest.param(Refusing.SHEET, zip_bomb, id="zip-bomb"),
    pytest.param(Refusing.SHEET, lambda: corpus("backslash_member.xlsx"), id="unusual-parts"),
    pytest.param(Refusing.SHEET, lambda: corpus("long_shared_string.xlsx"), id="long-shared"),
    pytest.param(Refusing.SHEET, lambda: corpus("long_inline_string.xlsx"), id="long-inline"),
    pytest.param(Refusing.SHEET, lambda: corpus("amplification_5k.xlsx"), id="repeated-text"),
    pytest.param(Refusing.SHEET, lambda: corpus("far_cell.xlsx"), id="far-cell"),
    pytest.param(Refusing.SHEET, lambda: corpus("negative_date.xlsx"), id="no-such-date"),
    # What parse_isolated raises when the worker dies, lies or hangs (tests/unit/test_parsing).
    pytest.param(Refusing.SHEET, lambda: UnreadableSheet(PARSE_FAILED), id="worker-failed"),
    pytest.param(Refusing.SHEET, lambda: UnreadableSheet(PARSE_TIMEOUT), id="worker-timeout"),
    # A table read, then refused for what its rows say.
    pytest.param(Refusing.SHEET, lambda: checked(b" \n"), id="empty-sheet"),
    pytest.param(Refusing.SHEET, lambda: checked(b"sku,quantity\nA,abc\n"), id="row-problems"),
    pytest.param(
        Refusing.SHEET,
        lambda: checked((CORPUS / "too_many_rows.csv").read_bytes()),
        id="too-many-rows",
    ),
    pytest.param(Refusing.SHEET, lambda: checked(GOOD_ROWS, priced=False), id="no-terms"),
    pytest.param(Refusing.SHEET, lambda: [submissions.TERMS_CHANGED], id="terms-changed"),
    pytest.param(Refusing.SHEET, over_budget, id="hard-budget"),
    # The supplier terms (`manzoori suppliers import`).
    pytest.param(Refusing.IMPORT, lambda: [too_big(MAX_SHEET_BYTES + 1)], id="terms-over-5-MB"),
    pytest.param(Refusing.IMPORT, lambda: unread(b"PK\x03\x04", read_csv_text), id="terms-not-csv"),
    pytest.param(
        Refusing.IMPORT, lambda: parse_terms(read_sheet(GOOD_ROWS))[1], id="terms-problems"
    ),
    # The approval policy, imported (the bot, `policy import`) or checked (`policy check`).
    pytest.param(
        Refusing.IMPORT, lambda: unreadable(FileKind.POLICY, bytes(300 * 1024)), id="policy-too-big"
    ),
    pytest.param(
        Refusing.POLICY, lambda: unreadable(FileKind.POLICY, b"\xff"), id="policy-not-text"
    ),
    pytest.param(
        Refusing.POLICY, lambda: list(approval_policy.check_policy("x = 1")[1]), id="policy"
    ),
    # The buyer and its branches, imported (the bot, `company import`) or checked.
    pytest.param(
        Refusing.IMPORT,
        lambda: unreadable(FileKind.COMPANY, bytes(300 * 1024)),
        id="company-too-big",
    ),
    pytest.param(
        Refusing.COMPANY, lambda: unreadable(FileKind.COMPANY, b"\xff"), id="company-not-text"
    ),
    pytest.param(Refusing.COMPANY, lambda: parse_company("x = 1")[1], id="company"),
]


@pytest.mark.parametrize(("kind", "reasons"), CASES)
def test_every_refusal_is_the_lead_naming_the_file_then_why(
    kind: Refusing, reasons: Callable[[], Reasons]
) -> None:
    why = reasons()
    lead, *said = refusal(kind, NAME, why).splitlines()
    assert lead == LEADS[kind]
    assert said == ([str(why)] if isinstance(why, UnreadableSheet) else problem_lines(why))
    assert said and all(line.strip() for line in said)
    for line in said:  # the lead says it, once
        assert "nothing was created" not in line and "nothing changed" not in line, line
    urdu_lead, *urdu = refusal(kind, NAME, why, tr=UR).splitlines()
    assert urdu_lead == URDU_LEADS[kind]
    assert len(urdu) == len(said)
    assert [english_runs(line) for line in urdu] == [[]] * len(urdu)


def sentences_defined(module: ModuleType) -> set[str]:
    """The sentences a module marks for translation (`NAME = N_(...)`): in bot.files.sheets
    and bot.files.parsing, every one is a refusal."""
    tree = ast.parse(Path(str(module.__file__)).read_text("utf-8"))
    return {
        getattr(module, target.id)
        for node in tree.body
        if isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Name)
        and node.value.func.id == "N_"
        for target in node.targets
        if isinstance(target, ast.Name)
    }


def test_every_refusal_the_readers_and_the_worker_have_is_a_case() -> None:
    defined = sentences_defined(limits) | sentences_defined(parsing)
    assert len(defined) == 18  # the scan still finds them: 16 of the readers, 2 of the worker
    covered = {
        why.text
        for param in CASES
        if isinstance(why := param.values[1](), UnreadableSheet)  # type: ignore[operator]
    }
    assert defined - covered == set()

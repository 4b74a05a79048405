"""`manzoori company check | import | show` as an admin runs them, on SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.cli import Cli, base_env, ok

pytestmark = pytest.mark.slow  # every test spawns `manzoori` subprocesses

SAMPLE = Path(__file__).parents[2] / "samples" / "company.toml"


@pytest.fixture
def cli(db_url: str, tmp_path: Path) -> Cli:
    return Cli(tmp_path, base_env(db_url))


def test_check_says_what_a_valid_file_holds_and_stores_nothing(cli: Cli) -> None:
    checked, shown = cli.all(("company", "check", str(SAMPLE)), ("company", "show"))
    assert ok(checked).splitlines() == [
        "company.toml is a valid company file:",
        "Buyer: Lahore Electronics (Pvt) Ltd, 12 Main Boulevard, Gulberg III, Lahore",
        "NTN 1234567-8 · STRN 32-77-8761-234-56 · Phone +92 42 3575 0000",
        "Branch liberty: Liberty Market, Shop 4, Liberty Market, Gulberg, Lahore (the default)",
        "Branch hallroad: Hall Road, Shop 12, Hall Road, Lahore",
    ]
    assert shown.returncode == 1 and shown.stderr == (
        "No company file is imported yet: manzoori company import FILE\n"
    )


def test_every_problem_is_named_with_its_line_and_nothing_is_imported(
    cli: Cli, tmp_path: Path
) -> None:
    bad = tmp_path / "company.toml"
    text = SAMPLE.read_text().replace('strn = "32-77-8761-234-56"', 'strn = "3277"')
    bad.write_text(text.replace("[branches.hallroad]", "[branches.Hall_Road]"), encoding="utf-8")
    done = cli("company", "import", str(bad))
    assert done.returncode == 1 and done.stdout == ""
    lines = done.stderr.splitlines()
    assert lines[0] == "company.toml: not imported; nothing changed. Please fix:"
    assert [line.split(":")[0] for line in lines[1:]] == ["Line 8, buyer.strn", "Line 16, branches"]
    assert cli("company", "show").returncode == 1


def test_files_that_are_not_company_files(cli: Cli, tmp_path: Path) -> None:
    binary = tmp_path / "photo.toml"
    binary.write_bytes(b"\xff\xd8\xff\xe0 not text")
    done = cli("company", "check", str(binary))
    assert done.returncode == 1 and done.stderr.splitlines() == [
        "photo.toml: not a valid company file. Please fix:",
        "The file is not UTF-8 text (byte 1).",
    ]
    huge = tmp_path / "huge.toml"
    huge.write_text("# x\n" * 70_000)
    done = cli("company", "import", str(huge))
    assert done.returncode == 1 and done.stderr.splitlines()[0] == (
        "huge.toml: not imported; nothing changed. Please fix:"
    )
    assert "280,000 bytes" in done.stderr


def test_import_then_show_then_the_same_again(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "company.toml"
    path.write_text(SAMPLE.read_text(), encoding="utf-8")
    first = ok(cli("company", "import", str(path)))
    assert first.startswith("company.toml imported as company version ")
    version = first.split("company version ")[1].split(",")[0]
    shown = ok(cli("company", "show")).splitlines()
    assert shown[0] == f"Version: {version}"
    assert shown[1].startswith("Imported ") and " by cli:" in shown[1]
    assert "Branch hallroad: Hall Road, Shop 12, Hall Road, Lahore" in shown
    assert shown[shown.index("The file as imported:") + 2 :] == SAMPLE.read_text().splitlines()
    again = ok(cli("company", "import", str(path)))
    assert again.strip() == (
        f"company.toml says what the company version in force, {version}, says; nothing imported"
    )

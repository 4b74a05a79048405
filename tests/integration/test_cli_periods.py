"""`manzoori audit export --from --to` with any text at all, in process (typer's runner, so
that hundreds of tries take seconds): an export, or a message and exit 1 or 2, never a
traceback (issue 21)."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from bot.cli.app import app
from tests.helpers.cli import base_env

# Days as an admin types them: anything, text shaped like a day, and real days.
TYPED_DAY = st.one_of(
    st.text(alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00")),
    st.from_regex(r"[0-9۰-۹]{1,5}-[0-9]{1,2}-[0-9]{1,2}", fullmatch=True),
    st.dates().map(date.isoformat),
)


@pytest.fixture
def runner(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    """The CLI in process, on the test database, in a folder without a .env."""
    monkeypatch.chdir(tmp_path)
    for name, value in base_env(db_url).items():
        monkeypatch.setenv(name, value)
    return CliRunner()


# The environment and folder are the same for every example: the fixture's once is enough.
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(TYPED_DAY, TYPED_DAY)
@example("0001-01-01", "9999-12-31")  # the traceback
@example("2026-11-01", "2026-11-30")  # an export
def test_any_from_and_to_give_an_export_or_a_message(runner: CliRunner, first: str, last: str):
    result = runner.invoke(app, ["audit", "export", "--from", first, "--to", last])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    if result.exit_code == 0:
        assert result.stdout.startswith('"at","po_number"')
    else:
        assert result.exit_code in (1, 2) and result.stderr.strip(), result.output

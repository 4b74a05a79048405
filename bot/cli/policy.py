"""`manzoori policy …`: an approval policy file checked, and the policy in force shown."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer

from bot import texts
from bot.cli.common import fail, with_store
from bot.config import Settings
from core import approval_policy
from core.policies import Policy
from core.texts import flatten
from store.sql import SqlStore

policy_app = typer.Typer(no_args_is_help=True, help="The approval policy: who must approve what.")

# A policy is a page or two of TOML; anything far larger is not one.
MAX_POLICY_BYTES = 256 * 1024

PolicyFile = Annotated[
    Path, typer.Argument(exists=True, dir_okay=False, readable=True, help="The TOML file.")
]


def _read(path: Path) -> str:
    """The file's text, or exit saying why it is not a policy file."""
    data = path.read_bytes()
    if len(data) > MAX_POLICY_BYTES:
        raise fail(f"{path.name} is {len(data):,} bytes; a policy file is at most 256 KB")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise fail(f"{path.name} is not UTF-8 text (byte {error.start + 1})") from None


@policy_app.command("check")
def policy_check(path: PolicyFile) -> None:
    """Validate a policy file and print what it says; store nothing (exit 1 if invalid)."""
    policy, problems = approval_policy.check_policy(_read(path))
    if policy is None:
        typer.echo(texts.policy_problems(problems, path.name), err=True)
        raise typer.Exit(1)
    typer.echo(f"{flatten(path.name)} is a valid approval policy:")
    typer.echo("\n".join(policy.describe()[1:]))


@policy_app.command("show")
def policy_show() -> None:
    """The policy in force: what it says, who imported it when, and its file as imported."""

    async def work(settings: Settings, store: SqlStore) -> str:
        default = Policy.default(settings.rules().approval.dual_above_paisa)
        async with store.reading() as tx:
            policy = await approval_policy.policy_in_force(tx, default)
            record = await tx.policy_record(policy.version) if policy.version else None
        lines = policy.describe()
        if record is None:
            return "\n".join(lines)
        at = record["imported_at"]
        assert isinstance(at, datetime)
        when = texts.local_time(at, settings.tz)
        lines.insert(1, f"Imported {when} by {flatten(str(record['imported_by']))}")
        return "\n".join([*lines, "", "The file as imported:", "", str(record["source"])])

    typer.echo(with_store(work).rstrip("\n"))

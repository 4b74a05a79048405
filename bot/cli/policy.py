"""`manzoori policy …`: an approval policy file checked, put in force, and shown."""

from __future__ import annotations

import typer

from bot.cli.common import AdminFile, import_admin_file, read_admin_file, with_store
from bot.config import Settings
from bot.words import texts
from bot.words.policy_texts import policy_lines
from core.approval import approval_policy
from core.approval.policies import Policy
from core.approval.standing import policy_now
from core.texts import flatten
from core.versions import FileKind
from store.sql import SqlStore

policy_app = typer.Typer(no_args_is_help=True, help="The approval policy: who must approve what.")


@policy_app.command("check")
def policy_check(path: AdminFile) -> None:
    """Validate a policy file and print what it says, with what an import would warn of as
    the groups are now; store nothing (exit 1 if invalid)."""
    policy, problems = approval_policy.check_policy(
        read_admin_file(path, FileKind.POLICY, imported=False)
    )
    if policy is None:
        typer.echo(texts.file_problems(FileKind.POLICY, problems, path.name), err=True)
        raise typer.Exit(1)
    typer.echo(f"{flatten(path.name)} is a valid approval policy:")
    typer.echo("\n".join(policy_lines(policy)[1:]))

    async def work(settings: Settings, store: SqlStore) -> approval_policy.PolicyImport:
        return await approval_policy.staffing(store, policy)

    _warn(with_store(work))  # against the groups as they are now


def _warn(staffed: approval_policy.PolicyImport) -> None:
    """Each warning of an import, or of a check: groups nobody can approve for, and stages
    asking for more approvals than their group has members."""
    warnings = texts.unreachable_warnings(staffed.unreachable) + texts.thin_warnings(staffed.thin)
    for warning in warnings:
        typer.echo(f"warning: {warning}", err=True)


@policy_app.command("import")
def policy_import(path: AdminFile) -> None:
    """Put a policy file in force as a new version: new requests and re-drafts follow it."""
    result = import_admin_file(path, FileKind.POLICY, approval_policy.import_policy)
    _warn(result)
    if result.problems:
        raise typer.Exit(1)


@policy_app.command("show")
def policy_show() -> None:
    """The policy in force: what it says, who imported it when, and its file as imported."""

    async def work(settings: Settings, store: SqlStore) -> str:
        default = Policy.default(settings.rules().approval.dual_above_paisa)
        async with store.reading() as tx:
            policy = await policy_now(tx, default)
            record = (
                await tx.file_record(FileKind.POLICY, policy.version) if policy.version else None
            )
        lines = texts.described(policy_lines(policy), record, settings.tz)
        if record is None:
            return "\n".join(lines)
        return "\n".join([*lines, "", "The file as imported:", "", str(record["source"])])

    typer.echo(with_store(work).rstrip("\n"))

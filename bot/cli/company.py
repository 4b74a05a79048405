"""`manzoori company …`: the buyer and its branches, from a TOML file checked, put in force,
and shown."""

from __future__ import annotations

import typer

from bot.cli.common import AdminFile, import_admin_file, read_admin_file, with_store
from bot.config import Settings
from bot.words import texts
from bot.words.company_texts import company_lines
from core.company import imports
from core.company.company_file import parse_company
from core.texts import flatten
from core.versions import FileKind
from store.sql import SqlStore

company_app = typer.Typer(
    no_args_is_help=True, help="The buyer and its branches: who buys, and where to deliver."
)


@company_app.command("check")
def company_check(path: AdminFile) -> None:
    """Validate a company file and print what it says; store nothing (exit 1 if invalid)."""
    text = read_admin_file(path, FileKind.COMPANY, imported=False)
    company, problems = parse_company(text)
    if company is None:
        typer.echo(texts.file_problems(FileKind.COMPANY, problems, path.name), err=True)
        raise typer.Exit(1)
    typer.echo(f"{flatten(path.name)} is a valid company file:")
    typer.echo("\n".join(company_lines(company)[1:]))


@company_app.command("import")
def company_import(path: AdminFile) -> None:
    """Put a company file in force as a new version: POs drafted from now on cite it."""
    if import_admin_file(path, FileKind.COMPANY, imports.import_company).problems:
        raise typer.Exit(1)


@company_app.command("show")
def company_show() -> None:
    """The company in force: the buyer, its branches, who imported it when, and its file as
    imported (exit 1 if none was ever imported)."""

    async def work(settings: Settings, store: SqlStore) -> str | None:
        async with store.reading() as tx:
            company = await tx.current_company()
            if company is None:
                return None
            record = await tx.file_record(FileKind.COMPANY, company.version)
        lines = texts.described(company_lines(company), record, settings.tz)
        assert record is not None  # the version in force is stored
        return "\n".join([*lines, "", "The file as imported:", "", str(record["source"])])

    shown = with_store(work)
    if shown is None:
        typer.echo("No company file is imported yet: manzoori company import FILE", err=True)
        raise typer.Exit(1)
    typer.echo(shown.rstrip("\n"))

"""`manzoori suppliers …` and `manzoori sheets …`: terms in, sheets checked or submitted."""

from __future__ import annotations

import hashlib
from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer

from bot.cli.common import actor, fail, telegram_id, with_store
from bot.clock import numbering, utcnow
from bot.config import Settings
from bot.files.parsing import parse_isolated
from bot.files.sheets import read_csv_text, read_sheet
from bot.words import texts
from bot.words.problems import problem_text
from core.drafting.intake import NO_TERMS
from core.drafting.sheets import too_big
from core.drafting.tables import Table
from core.errors import UnreadableSheet
from core.problems import Problem
from core.purchasing import new_terms, submissions
from store.sql import SqlStore

suppliers_app = typer.Typer(no_args_is_help=True, help="Approved supplier terms.")
sheets_app = typer.Typer(no_args_is_help=True, help="Restock sheets.")

ExistingFile = Annotated[
    Path, typer.Argument(exists=True, dir_okay=False, readable=True, help="The file to read.")
]


def _load(path: Path, *, terms: bool = False) -> tuple[bytes, Table]:
    """The file's bytes and rows, or exit with its refusal, printed where the command prints
    the refusal of its rows (a sheet's on stdout, the terms' on stderr)."""
    data = path.read_bytes()
    read = _read(data, terms=terms)
    if isinstance(read, Table):
        return data, read
    kind = texts.Refusing.IMPORT if terms else texts.Refusing.SHEET
    typer.echo(texts.refusal(kind, path.name, read), err=terms)
    raise typer.Exit(1)


def _read(data: bytes, *, terms: bool) -> Table | UnreadableSheet | list[Problem]:
    """The file's rows, or why it is refused: its size, or the sentence refusing its bytes."""
    too_large = too_big(len(data))
    if too_large:
        return [too_large]
    try:
        return parse_isolated(read_csv_text if terms else read_sheet, data)
    except UnreadableSheet as refused:
        return refused


@suppliers_app.command("import")
def suppliers_import(path: ExistingFile) -> None:
    """Load a terms CSV as the new version; waiting POs it changes are re-drafted."""
    _, table = _load(path, terms=True)

    async def work(settings: Settings, store: SqlStore) -> tuple[str, bool]:
        now = utcnow()
        result = await new_terms.import_terms(store, table, now, actor())
        text = texts.terms_import(result, path.name)
        if result.problems:
            return text, False
        if not result.created:
            return text, True
        await new_terms.apply_terms(store, now, settings.rules())
        # A running `manzoori run` may re-draft some of them first: report them all.
        changed = await new_terms.superseded_by(store, result.version)
        return f"{text}\n{texts.superseded(changed)}", True

    text, ok = with_store(work)
    typer.echo(text, err=not ok)
    if not ok:
        raise typer.Exit(1)


@suppliers_app.command("list")
def suppliers_list() -> None:
    """Show the terms in force and their suppliers (addresses masked)."""

    async def work(settings: Settings, store: SqlStore) -> str | None:
        async with store.reading() as tx:
            terms = await tx.current_terms()
            if terms is None:
                return None
            row = await tx.terms_record(terms.version)
            assert row is not None  # the version in force is stored
        at, by = row["imported_at"], row["imported_by"]
        assert isinstance(at, datetime)
        return texts.terms_listing(terms, at, str(by), settings.tz)

    text = with_store(work)
    if text is None:
        raise fail(problem_text(NO_TERMS))
    typer.echo(text)


def _sheet(path: Path) -> submissions.Sheet:
    data, table = _load(path)
    return submissions.Sheet(path.name, hashlib.sha256(data).hexdigest(), table)


@sheets_app.command("check")
def sheets_check(path: ExistingFile) -> None:
    """Validate and price a sheet against the terms in force; store nothing (exit 1 if invalid)."""
    sheet = _sheet(path)

    async def work(settings: Settings, store: SqlStore) -> submissions.Submission:
        return await submissions.preview_sheet(store, sheet, settings.rules(), now=utcnow())

    result = with_store(work)
    typer.echo(texts.submission(result, sheet.name, preview=True))
    if result.problems:
        raise typer.Exit(1)


@sheets_app.command("submit")
def sheets_submit(
    path: ExistingFile,
    requester: Annotated[
        int,
        typer.Option(parser=telegram_id, metavar="ID", help="The requester's Telegram user id."),
    ],
) -> None:
    """Submit a sheet for a registered requester: one PO per supplier, sent for approval."""
    sheet = _sheet(path)

    async def work(settings: Settings, store: SqlStore) -> submissions.Submission:
        now = utcnow()
        names = numbering(now, settings.tz)
        return await submissions.submit_sheet(store, requester, sheet, now, settings.rules(), names)

    result = with_store(work)
    typer.echo(texts.submission(result, sheet.name))
    if result.problems:
        raise typer.Exit(1)

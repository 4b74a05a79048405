"""What every `manzoori` command shares: settings, the store, error messages, the actor."""

from __future__ import annotations

import asyncio
import getpass
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import Annotated, TypeVar

import typer
from sqlalchemy.exc import DBAPIError

from bot import bootstrap
from bot.clock import utcnow
from bot.config import Settings, load_settings
from bot.words import texts
from bot.words.arguments import BIGINT_MAX, parse_po_number, parse_user_id
from core.errors import ConfigError, ManzooriError, UnreadableFile
from core.jobs.jobs import Stamp
from core.texts import echo
from core.toml_files import toml_text
from core.versions import FileKind
from store.sql import SqlStore

T = TypeVar("T")
JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


def telegram_id(text: str) -> int:
    """A Telegram user id argument, read as the bot reads one (bot.words.arguments); click's usage
    error otherwise."""
    user_id = parse_user_id(text)
    if user_id is None:
        why = f"{echo(text)} is not a Telegram user id: digits 0-9, from 1 to {BIGINT_MAX}"
        raise typer.BadParameter(why)
    return user_id


TelegramId = Annotated[
    int, typer.Argument(parser=telegram_id, metavar="ID", help="A Telegram user id.")
]


def po_number(text: str) -> str:
    """A PO number argument, in any case, read as the bot reads one (bot.words.arguments); click's
    usage error for text that cannot be one."""
    po = parse_po_number(text)
    if po is None:
        raise typer.BadParameter(f"{echo(text)} is not a PO number, such as PO-2026-0001")
    return po


PoNumber = Annotated[str, typer.Argument(parser=po_number, metavar="PO", help="A PO number.")]


def actor() -> str:
    """Who runs this command, for the audit trail."""
    return f"cli:{getpass.getuser()}"


def stamp() -> Stamp:
    """Who runs this command, and now: what the audit trail records of a move it makes."""
    return Stamp(actor(), utcnow())


def fail(message: str) -> typer.Exit:
    """Print an error and return the exit to raise."""
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(1)


def need_note(note: str, option: str = "--note") -> None:
    """The audit trail needs a reason a person can read later (given as `option`)."""
    if not note.strip():
        raise fail(f"{option} must say what was checked or why")


def with_store(work: Callable[[Settings, SqlStore], Awaitable[T]]) -> T:
    """Load settings, open the store, run `work`, and turn known errors into messages."""
    try:
        settings = load_settings()
    except ConfigError as error:
        raise fail(f"configuration:\n{error}") from None

    async def main() -> T:
        store = bootstrap.build_store(settings)
        try:
            return await work(settings, store)
        finally:
            await store.close()

    try:
        return asyncio.run(main())
    except ManzooriError as error:
        raise fail(str(error)) from None
    except DBAPIError as error:
        first = str(error.orig).strip().splitlines()[0] if error.orig else type(error).__name__
        missing = "no such table" in first or "does not exist" in first
        hint = "\n(has `manzoori db upgrade` been run on DATABASE_URL?)" if missing else ""
        raise fail(f"database: {first}{hint}") from None


AdminFile = Annotated[
    Path, typer.Argument(exists=True, dir_okay=False, readable=True, help="The TOML file.")
]


def read_admin_file(path: Path, kind: FileKind, *, imported: bool) -> str:
    """An admin's TOML file's text, or exit with its refusal (too large, not text), as the
    problems in its text are refused."""
    try:
        return toml_text(path.read_bytes(), kind.too_big)
    except UnreadableFile as refused:
        said = texts.file_problems(kind, [refused.problem], path.name, imported=imported)
        typer.echo(said, err=True)
        raise typer.Exit(1) from None


Done = TypeVar("Done", bound=texts.Imported)


def import_admin_file(
    path: Path, kind: FileKind, imports: Callable[[SqlStore, str, datetime, str], Awaitable[Done]]
) -> Done:
    """`… import FILE`: the file read (or refused, exit 1), imported under this command's
    actor, and what came of it said; the caller exits 1 on its problems, after its warnings."""
    text = read_admin_file(path, kind, imported=True)

    async def work(settings: Settings, store: SqlStore) -> Done:
        return await imports(store, text, utcnow(), actor())

    result = with_store(work)
    typer.echo(texts.file_import(kind, result, path.name), err=bool(result.problems))
    return result

"""`manzoori audit export --from DAY --to DAY`: every audit event of those days, as CSV or JSON
(core.records.audit), to stdout or a file; days are MANZOORI_TIMEZONE's (Pakistan time)."""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, TextIO

import typer

from bot.cli.common import fail, with_store
from bot.clock import utcnow
from bot.config import Settings
from core.errors import BadPeriod
from core.records.audit import ExportFormat, Period, Writer, export_row, parse_day
from store.sql import SqlStore

audit_app = typer.Typer(no_args_is_help=True, help="The audit trail.")

Day = Annotated[str, typer.Option(metavar="YYYY-MM-DD", show_default=False)]


@contextmanager
def _sink(output: Path | None) -> Iterator[TextIO]:
    """Stdout as UTF-8, or a file that appears whole: written beside it, then renamed over
    it, so a failed export leaves no half file behind. Line ends are written as given (CSV's
    CRLF)."""
    if output is None:
        out = io.TextIOWrapper(sys.stdout.buffer, encoding="utf-8", newline="")
        try:
            yield out
        finally:
            out.flush()
            out.detach()  # stdout itself stays open
        return
    partial = output.with_name(f".{output.name}.part")
    try:
        opened = partial.open("w", encoding="utf-8", newline="")
    except OSError as error:
        raise fail(f"cannot write {output}: {error.strerror or error}") from None
    try:
        with opened as out:
            yield out
        os.replace(partial, output)
    finally:
        partial.unlink(missing_ok=True)


@audit_app.command("export")
def audit_export(
    first: Annotated[str, typer.Option("--from", help="The first day (YYYY-MM-DD), included.")],
    last: Annotated[str, typer.Option("--to", help="The last day (YYYY-MM-DD), included.")],
    kind: Annotated[
        ExportFormat, typer.Option("--format", help="CSV (RFC 4180) or a JSON array.")
    ] = ExportFormat.CSV,
    output: Annotated[
        Path | None,
        typer.Option(dir_okay=False, writable=True, help="Write here instead of to stdout."),
    ] = None,
) -> None:
    """Write every audit event of the days from --from to --to (in MANZOORI_TIMEZONE): who,
    for whom, the stage and policy version, the draft version and hash, the send's result."""
    try:
        days = parse_day(first), parse_day(last)
    except BadPeriod as error:
        raise fail(str(error)) from None

    async def work(settings: Settings, store: SqlStore) -> int:
        # BadPeriod from here is said by with_store, before anything is written.
        period = Period.of_days(*days, settings.tz, today=utcnow().astimezone(settings.tz).date())
        writer, count = Writer(kind), 0
        with _sink(output) as out:
            out.write(writer.head())
            async with store.reading() as tx:
                async for logged in tx.audit_between(period.start, period.end):
                    out.write(writer.line(export_row(logged)))
                    count += 1
            out.write(writer.tail())
        return count

    count = with_store(work)
    where = f" to {output}" if output else ""
    typer.echo(f"{count:,} audit events, {days[0]} to {days[1]}{where}", err=True)

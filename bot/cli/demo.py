"""`manzoori demo`: the whole story on this machine. The only command that uses bot.dev (the Bot
API emulator and the SMTP sink), imported when it runs: PTB would slow every other command."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bot.cli.common import fail


def demo(
    folder: Annotated[
        Path, typer.Option(help="Where to leave the SQLite file (and its throwaway keys).")
    ] = Path("manzoori-demo"),
    serve: Annotated[
        bool, typer.Option(help="Keep the bot and its Mini App up afterwards, until Ctrl-C.")
    ] = False,
) -> None:
    """Run the whole story locally: the real bot against a local Bot API and SMTP sink."""
    from bot.dev.demo import run_demo  # here: PTB slows every other command

    try:  # before anything starts: a folder that cannot be made is the admin's to fix
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise fail(f"cannot use {folder} as the demo's folder: {error.strerror or error}") from None
    raise typer.Exit(run_demo(folder, serve))

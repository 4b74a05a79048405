"""`manzoori mailbox check`: connect to the buyer's IMAP mailbox (IMAP_* settings), list its
folders and say whether the Sent and inbox folders are there, and how many messages each holds
(docs/mailbox.md)."""

from __future__ import annotations

import asyncio

import typer

from bot.cli.common import fail
from bot.config import Settings, load_settings
from bot.mailbox import MailboxError
from core.errors import ConfigError

mailbox_app = typer.Typer(no_args_is_help=True, help="The buyer's IMAP mailbox.")


@mailbox_app.command("check")
def check() -> None:
    """Connect, list the folders, and say what was found; exit 1 if the mailbox is not set
    up or cannot be reached."""
    try:
        settings = load_settings()
    except ConfigError as error:
        raise fail(f"configuration:\n{error}") from None
    config = settings.mailbox()
    if config is None:
        raise fail("IMAP_HOST is not set: the mailbox is not read (docs/mailbox.md)")
    try:
        lines, missing = asyncio.run(_look(settings))
    except MailboxError as error:
        where = f"{config.host}:{config.port} ({config.tls.value})"
        raise fail(f"the mailbox at {where} as {config.username!r}: {error}") from None
    for line in lines:
        typer.echo(line)
    if missing:
        raise typer.Exit(1)


async def _look(settings: Settings) -> tuple[list[str], bool]:
    """What the mailbox holds, in lines, and whether a folder we need is missing."""
    from bot.mailbox.imap import Mailbox  # imap-tools only for this command

    config = settings.mailbox()
    assert config is not None
    async with Mailbox(config).session() as session:
        folders = await session.folders()
        lines = [
            f"connected to {config.host}:{config.port} ({config.tls.value}) as {config.username}",
            f"folders: {', '.join(sorted(folders))}",
        ]
        missing = False
        for role, folder in (("Sent", config.sent_folder), ("inbox", config.inbox_folder)):
            if folder in folders:
                count = await session.count(folder)
                lines.append(f"{role} folder {folder!r}: {count} messages")
            else:
                setting = f"IMAP_{role.upper()}_FOLDER"
                lines.append(f"{role} folder {folder!r}: not found (see {setting})")
                missing = True
    journal = settings.mail_journal_bcc
    lines.append(
        f"journal: every supplier e-mail is also sent to {journal}"
        if journal
        else "journal: none (MAIL_JOURNAL_BCC unset; the relay's own Sent copies are used)"
    )
    return lines, missing

"""What every Telegram handler shares: the Deps kept in the application's bot_data, replies
that fit Telegram's limit, and the roles a sender holds."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from telegram import Update, User
from telegram.ext import ContextTypes

from bot.config import Settings
from bot.parsing import SheetParser
from bot.telegram.cards import MESSAGE_LIMIT
from bot.telegram.fairness import Guards
from core.policies import Role
from core.ports import ShellStore, ShellTx


@dataclass(frozen=True)
class Deps:
    """The settings, the store, the sheet parser and this process's fair-share guards, for
    every handler."""

    settings: Settings
    store: ShellStore
    # One per application: its semaphore is the cap on parses in flight across all users.
    parser: SheetParser = field(default_factory=SheetParser)
    guards: Guards = field(default_factory=Guards)


def deps_of(context: ContextTypes.DEFAULT_TYPE) -> Deps:
    """The shared Deps of the running application."""
    deps = context.application.bot_data["deps"]
    assert isinstance(deps, Deps)
    return deps


def chunks(text: str, limit: int = MESSAGE_LIMIT) -> list[str]:
    """The text in pieces of at most `limit` characters, cut between lines where possible."""
    pieces: list[str] = []
    current = ""
    for line in text.splitlines():
        for start in range(0, max(len(line), 1), limit):  # a line longer than a message is cut
            part = line[start : start + limit]
            candidate = f"{current}\n{part}" if current else part
            if current and len(candidate) > limit:
                pieces.append(current)
                candidate = part
            current = candidate
    return [*pieces, current] if current else pieces


async def reply(update: Update, text: str) -> None:
    """Reply to the update's message, in as many messages as the text needs."""
    if update.effective_message is not None:
        for piece in chunks(text):
            await update.effective_message.reply_text(piece)


async def record_claim(
    tx: ShellTx, update: Update, user: User, now: datetime, *, met: bool = True
) -> bool:
    """Record the update as handled, so that Telegram delivering it again is dropped, and
    (with `met`) what its sender is called; False if it was handled before."""
    fresh = await tx.claim_update(update.update_id, now)
    if fresh and met:
        started = bool(update.message and (update.message.text or "").startswith("/start"))
        await tx.met(user.id, user.first_name, now, started=started)
    return fresh


async def roles_of(deps: Deps, user_id: int) -> frozenset[Role]:
    """The user's roles, with admin for MANZOORI_ADMIN_IDS."""
    async with deps.store.reading() as tx:
        held = await tx.roles(user_id)
    if user_id in deps.settings.manzoori_admin_ids:
        held |= {Role.ADMIN}
    return held


async def holding(
    update: Update, context: ContextTypes.DEFAULT_TYPE, role: Role, refusal: str
) -> tuple[Deps, User] | None:
    """The deps and the sender if they hold `role`; otherwise the refusal is sent and None."""
    deps, user = deps_of(context), update.effective_user
    assert user is not None
    if role in await roles_of(deps, user.id):
        return deps, user
    await reply(update, refusal)
    return None

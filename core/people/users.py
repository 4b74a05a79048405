"""The people the bot has met, as the store remembers them, what they are called, and who
is an admin."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.approval.policies import Role

if TYPE_CHECKING:  # the store's transaction, named in a signature only
    from core.ports import ReadTx


@dataclass(frozen=True)
class TelegramUser:
    """Someone the bot has met; `reachable`: started the bot and has not blocked it."""

    user_id: int
    first_name: str
    reachable: bool


def called(known: TelegramUser | None, user_id: int) -> str:
    """What to call someone: their name as Telegram gave it, or "user <id>" for someone the
    bot has not met."""
    return known.first_name if known else f"user {user_id}"


async def name_of(tx: ReadTx, user_id: int) -> str:
    """Someone's name as Telegram gave it, or "user <id>" (called)."""
    return called(await tx.telegram_user(user_id), user_id)


def is_admin(user_id: int, roles: Iterable[Role], configured: frozenset[int]) -> bool:
    """MANZOORI_ADMIN_IDS, plus anyone who holds the admin role."""
    return user_id in configured or Role.ADMIN in set(roles)

"""The people the bot has met, as the store remembers them, what they are called, and who
is an admin."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.approval.policies import Role
from core.errors import NotAnAdmin

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


async def require_admin(tx: ReadTx, user_id: int, configured: frozenset[int]) -> None:
    """NotAnAdmin unless `user_id` is an admin (is_admin)."""
    if not is_admin(user_id, await tx.roles(user_id), configured):
        raise NotAnAdmin(f"user {user_id} is not an admin")


@dataclass(frozen=True)
class Acting:
    """Who asks for a change to someone (from Telegram, where the use case checks it): their
    id, and MANZOORI_ADMIN_IDS to tell whether they are an admin."""

    user_id: int
    configured_admins: frozenset[int]

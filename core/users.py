"""The people the bot has met, as the store remembers them."""

from __future__ import annotations

from dataclasses import dataclass


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

"""What every Telegram handler shares, kept in the application's bot_data."""

from __future__ import annotations

from dataclasses import dataclass

from telegram.ext import ContextTypes

from bot.config import Settings
from store.sql import SqlStore


@dataclass(frozen=True)
class Deps:
    """The settings and the store, for every handler."""

    settings: Settings
    store: SqlStore


def deps_of(context: ContextTypes.DEFAULT_TYPE) -> Deps:
    """The shared Deps of the running application."""
    deps = context.application.bot_data["deps"]
    assert isinstance(deps, Deps)
    return deps

"""`manzoori` as an admin runs it, a real subprocess, and in-process setup of its database."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from cryptography.fernet import Fernet

from bot.config import Settings
from core.approval.policies import Rules
from store.engine import make_engine
from store.sql import SqlStore
from tests.helpers.store import DATA_KEY

T = TypeVar("T")
# The defaults of Settings (one day to decide, dual approval above PKR 500,000), so the CLI's
# runner judges the approvals made here by the same rules.
RULES = Rules()
DOMAIN = "shop.example"
MAIL_FROM = f"orders@{DOMAIN}"
# Generous for one CLI command; the runner itself is bounded by --max-seconds.
SUBPROCESS_TIMEOUT = 60


def base_env(db_url: str) -> dict[str, str]:
    """This process's environment minus every setting, plus a database, keys and MAIL_FROM."""
    env = {k: v for k, v in os.environ.items() if k.lower() not in Settings.model_fields}
    env.update(
        DATABASE_URL=db_url,
        MANZOORI_DATA_KEY=DATA_KEY.decode(),
        MANZOORI_SECRET_KEY=Fernet.generate_key().decode(),
        MAIL_FROM=MAIL_FROM,
    )
    return env


@dataclass(frozen=True)
class Cli:
    """`manzoori` in a directory without a .env, with a given environment."""

    cwd: Path
    env: dict[str, str]

    def __call__(self, *args: str, **env: object) -> subprocess.CompletedProcess[str]:
        """Run `manzoori ARGS`; keyword arguments set (or, with None, remove) variables."""
        full = dict(self.env)
        for name, value in env.items():
            if value is None:
                full.pop(name, None)
            else:
                full[name] = str(value)
        return subprocess.run(
            [sys.executable, "-m", "bot.cli", *args],
            cwd=self.cwd,
            env=full,
            capture_output=True,
            text=True,
            timeout=SUBPROCESS_TIMEOUT,
            check=False,
        )

    def all(self, *commands: tuple[str, ...]) -> list[subprocess.CompletedProcess[str]]:
        """Run independent commands side by side (start-up dominates), results in order."""
        with ThreadPoolExecutor(len(commands)) as pool:
            return list(pool.map(lambda args: self(*args), commands))


def ok(result: subprocess.CompletedProcess[str]) -> str:
    """The stdout of a command that must have succeeded."""
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stderr}"
    return result.stdout


def plain(text: str) -> str:
    """Output with the box drawing of click/rich errors removed and whitespace collapsed."""
    return " ".join(text.replace("│", " ").split())


def with_store(db_url: str, work: Callable[[SqlStore], Awaitable[T]]) -> T:
    """Run `work` on a store over the test database, then dispose of the engine."""

    async def main() -> T:
        store = SqlStore(make_engine(db_url), DATA_KEY)
        try:
            return await work(store)
        finally:
            await store.close()

    return asyncio.run(main())

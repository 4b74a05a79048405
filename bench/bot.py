"""The bot benchmarks: tap to answer, approval to e-mail, sheet intake and card fan-out, each
through the real bot (bot.bootstrap.running) over HTTP against the Bot API emulator, on a fresh
SQLite file and, when the run has one, on PostgreSQL."""

from __future__ import annotations

from bench.bot_fanout import run_fanout
from bench.bot_intake import run_intake
from bench.bot_mail import run_mail
from bench.bot_taps import run_taps
from bench.common import Context, Result
from bench.databases import databases


async def run(ctx: Context) -> list[Result]:
    """Every row of the four sections, section by section; each run starts and stops its own
    emulator and bot on a freshly migrated database."""
    results: list[Result] = []
    for db in databases(ctx.sqlite_dir, ctx.postgres_url, "bot-taps"):
        results += await run_taps(db, ctx.quick)
    for db in databases(ctx.sqlite_dir, ctx.postgres_url, "bot-mail"):
        results += await run_mail(db, ctx.quick)
    for db in databases(ctx.sqlite_dir, ctx.postgres_url, "bot-intake"):
        results += await run_intake(db, ctx.quick)
    for db in databases(ctx.sqlite_dir, ctx.postgres_url, "bot-fanout"):
        results += await run_fanout(db, ctx.quick)
    return results

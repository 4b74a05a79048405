"""Card fan-out: one PO, many approvers; the notice runner delivers a card to each through the
real bot while the emulator's flood control answers 429 past Telegram's limits (30 messages
in any second overall, one a second per private chat). Messages per second against the limit
the bot's rate limiter is configured for, and the 429s the emulator sent."""

from __future__ import annotations

import time
import uuid

from telegram.ext import AIORateLimiter

from bench.bot_harness import (
    REQUESTER,
    approver_ids,
    bot_on,
    deliver_all,
    import_terms,
    people,
    skus,
)
from bench.common import Result
from bench.databases import Database
from bot.bootstrap import Running
from bot.clock import utcnow
from core.approval.opening import open_job
from core.approval.policies import Role
from core.drafting.drafts import Draft, DraftLine
from core.drafting.intake import po_number
from core.jobs.jobs import NewJob

SECTION = "Card fan-out"
SHARE = 0.9  # the target: at least 90% of the configured rate, and no 429 at all
# Telegram's own overall limit, as the emulator enforces it: messages in any one second.
TELEGRAM_PER_SECOND = 30


def configured_rate(run: Running) -> tuple[float, float]:
    """The overall limit of the bot's AIORateLimiter (bot.telegram.app): messages per period,
    and the period in seconds. Read from the limiter itself (PTB keeps it in a private
    attribute), so the figure follows the configuration rather than a copy of it."""
    assert run.app is not None
    limiter = run.app.bot.rate_limiter
    assert isinstance(limiter, AIORateLimiter)
    base = limiter._base_limiter
    assert base is not None, "the bot's rate limiter has no overall limit"
    return base.max_rate, base.time_period


async def _one_po(run: Running, terms_version: str) -> None:
    """One PO waiting for approval: ask_approvers owes every approver its card."""
    now = utcnow()
    async with run.store.begin() as tx:
        serial = await tx.next_po_serial(now.astimezone(run.settings.tz).year)
    draft = Draft(
        po_number=po_number(now.astimezone(run.settings.tz).year, serial),
        supplier_id="SUP-BENCH-01",
        supplier_name="Bench Bazaar",
        recipient_email="orders@bench.example",
        terms_version=terms_version,
        lines=(DraftLine(skus(1)[0], "Item", 1, 1_000),),
    )
    new = NewJob(id=str(uuid.uuid4()), requester_id=REQUESTER, input_ref="bench:fan-out")
    await open_job(run.store, new, draft, now, run.settings.rules())


async def run_fanout(db: Database, quick: bool) -> list[Result]:
    """One row on `db`."""
    count = 30 if quick else 300
    async with bot_on(db) as (emulator, run):
        version = await import_terms(run.store, 1)
        await people(emulator, run.store, Role.REQUESTER, [REQUESTER])
        approvers = await people(emulator, run.store, Role.APPROVER, approver_ids(count))
        rate, period = configured_rate(run)
        # Telegram's limits as the emulator applies them: one message a second per private
        # chat, and 30 in any second across chats, whatever the bot's limiter is set to.
        emulator.enable_flood_control(
            per_chat=1, per_chat_window=1.0, overall=TELEGRAM_PER_SECOND, overall_window=1.0
        )
        await _one_po(run, version)
        before = len(emulator.calls)
        started = time.monotonic()
        await deliver_all(run)
        wall = time.monotonic() - started
        sends = [c for c in emulator.calls[before:] if c.method == "sendMessage"]
        emulator.disable_flood_control()
    delivered = [c for c in sends if c.ok]
    floods = sum(c.status == 429 for c in sends)
    holding = sum(bool(a.messages()) for a in approvers)
    span = max((c.finished or c.started) for c in delivered) - min(c.started for c in delivered)
    per_s = len(delivered) / span if span > 0 else float("inf")
    limit = rate / period
    return [
        Result(
            SECTION,
            f"{count} cards, {db.label}",
            {
                "msgs/s": f"{per_s:.1f}",
                "limit/s": f"{limit:g}",
                "% of limit": f"{100 * per_s / limit:.0f}",
                "429s": str(floods),
            },
            target=f"≥ {SHARE:.0%} of the limit, zero 429s",
            met=per_s >= SHARE * limit and floods == 0 and holding == count,
            notes=(
                f"{len(delivered)} sendMessage OK from the first request to the last answer; "
                f"{holding}/{count} approvers hold their card; notice passes took {wall:.1f} s"
            ),
        )
    ]

"""Approval to e-mail: approvers tap Approve on their cards one a second, through the real bot
over HTTP against the Bot API emulator, its runners in their own loops as under `manzoori run`
(MANZOORI_POLL_SECONDS at its default); per approval, the time from the tap to the SMTP
server, in a process of its own, accepting the PO's e-mail (the PDF made, the message sent)."""

from __future__ import annotations

import asyncio
import functools
import time
from typing import Any

from bench.bot_harness import (
    PATIENCE,
    approver_ids,
    bot_on,
    import_terms,
    median,
    people,
    percentile,
)
from bench.bot_taps import APPROVED, card_of, hand_cards, open_jobs
from bench.common import Result
from bench.databases import Database
from bench.smtp_server import SinkProcess
from bot.telegram.cards import APPROVE_TEXT
from core.approval.policies import Role

SECTION = "Approval to e-mail"
TARGET_MS = 250.0  # p99, the issue's
GAP = 1.0  # seconds between one approval and the next


async def run_mail(db: Database, quick: bool) -> list[Result]:
    """The section's row on `db`."""
    count = 4 if quick else 30
    async with SinkProcess() as sink:
        host, port = sink.address
        mail: dict[str, Any] = {"smtp_host": host, "smtp_port": port, "smtp_tls": "none"}
        async with bot_on(db, loops=True, mail_from="orders@shop.example", **mail) as (
            emulator,
            run,
        ):
            version = await import_terms(run.store, 1)
            jobs = await open_jobs(run.store, run.settings, version, count)
            approvers = await people(emulator, run.store, Role.APPROVER, approver_ids(count))
            await hand_cards(run.store, [(j, a.id) for j, a in zip(jobs, approvers, strict=True)])
            cards = [
                await emulator.wait_for(functools.partial(card_of, a, j), PATIENCE)
                for j, a in zip(jobs, approvers, strict=True)
            ]
            tapped: dict[str, float] = {}
            answered = 0
            for job, approver, card in zip(jobs, approvers, cards, strict=True):
                tapped[job.po_number] = time.monotonic()
                query = approver.tap(card, APPROVE_TEXT)
                answer = await emulator.wait_for(functools.partial(emulator.callback_answer, query))
                answered += answer.text == APPROVED
                await asyncio.sleep(max(0.0, tapped[job.po_number] + GAP - time.monotonic()))
            times = await _all_sent(sink, count)
    sent = {po: at for subject, at in times for po in tapped if po in subject}
    latencies = [(sent[po] - at) * 1000 for po, at in tapped.items() if po in sent]
    p99 = percentile(latencies, 99)
    return [
        Result(
            SECTION,
            f"one approval a second, {db.label}",
            {
                "approvals": str(count),
                "p50 ms": f"{median(latencies):.1f}",
                "p99 ms": f"{p99:.1f}",
                "max ms": f"{max(latencies):.1f}",
            },
            target=f"p99 ≤ {TARGET_MS:g} ms",
            met=p99 <= TARGET_MS and answered == len(latencies) == count,
            notes=(
                "tap → the SMTP server accepted the PO's e-mail; runners in their loops, "
                f"MANZOORI_POLL_SECONDS {run.settings.manzoori_poll_seconds:g}"
                + ("" if answered == count else f"; only {answered} answered as approved")
            ),
        )
    ]


async def _all_sent(sink: SinkProcess, count: int) -> list[tuple[str, float]]:
    """The server's (Subject, accepted at) once it holds `count` messages."""
    deadline = time.monotonic() + PATIENCE
    while len(times := await sink.times()) < count:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{len(times)} of {count} e-mails arrived")
        await asyncio.sleep(0.05)  # the server is another process: asked again
    return times

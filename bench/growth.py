"""As the data grows: the same live requests on two databases, one holding nothing else and one
holding a year of a busy shop beside them (bench.grown: 100,000 POs, 2,000 people, a year of
audit trail), each served by its own bot over the Bot API emulator. The same actions are taken
on both, turn about, so that drift in the machine falls on both alike: a tap on a card,
/pending, /status, the Mini App's PO, `jobs list`, a /metrics scrape, and the runners' passes
with nothing due. A row's ratio is the grown database's p99 over the empty one's."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
from sqlalchemy.engine import make_url

from bench import grown
from bench.bot_harness import (
    PATIENCE,
    REQUESTER,
    approver_ids,
    bot_on,
    deliver_all,
    import_terms,
    median,
    people,
    percentile,
    settled,
    skus,
)
from bench.bot_taps import APPROVED, card_of, hand_cards, open_jobs
from bench.common import Context, Result
from bench.databases import Database, postgres_database, reachable, sqlite_database
from bench.smtp_server import SinkProcess
from bot.bootstrap import Running
from bot.clock import utcnow
from bot.dev.botapi import EmulatedUser, Emulator
from bot.dev.demo import free_port
from bot.telegram.cards import APPROVE_TEXT
from bot.words import reports
from core.approval.policies import Role
from core.jobs.jobs import Job
from core.jobs.states import State

SECTION = "As the data grows"
RATIO_TARGET = 1.2  # the issue's: grown p99 ≤ 1.2 × empty p99
TARGETED = ("tap", "/pending", "Mini App PO")  # the rows the issue sets the target on


@dataclass
class Side:
    """One database with its bot and live requests, and what was measured on it (ms)."""

    emulator: Emulator
    run: Running
    port: int
    approvers: list[EmulatedUser]
    requester: EmulatedUser
    jobs: list[Job]
    samples: dict[str, list[float]] = field(default_factory=dict)

    def note(self, name: str, ms: float) -> None:
        self.samples.setdefault(name, []).append(ms)


async def _live(emulator: Emulator, run: Running, jobs: int, terms: int) -> Side:
    """The live requests: `jobs` POs waiting, one approver's card each."""
    store = run.store
    version = await import_terms(store, terms)
    requester = (await people(emulator, store, Role.REQUESTER, [REQUESTER]))[0]
    opened = await open_jobs(store, run.settings, version, jobs)
    approvers = await people(emulator, store, Role.APPROVER, approver_ids(jobs))
    await hand_cards(store, [(job, a.id) for job, a in zip(opened, approvers, strict=True)])
    await deliver_all(run)
    return Side(emulator, run, run.settings.web_port, approvers, requester, opened)


async def _tap(side: Side, n: int) -> None:
    """Approver n taps Approve on their card: handed out → answered."""
    approver, job = side.approvers[n], side.jobs[n]
    card = card_of(approver, job)
    assert card is not None, "a card was not delivered"
    query_id = approver.tap(card, APPROVE_TEXT)
    emulator = side.emulator
    await emulator.wait_for(lambda: emulator.callback_answer(query_id), PATIENCE, interval=0.001)
    query = emulator.callback_query(query_id)
    answer, out = query.answer, emulator.handed_out(query.update_id)
    assert answer is not None and out is not None and answer.text == APPROVED, answer
    side.note("tap", (answer.at - out) * 1000)
    await settled(side.run)


async def _command(side: Side, name: str, user: EmulatedUser, command: str) -> None:
    """A command: handed out → the bot's answer in that chat begun."""
    emulator, before = side.emulator, len(side.emulator.calls)
    message = user.send_text(command)

    def answered() -> float | None:
        for call in emulator.calls[before:]:
            if call.method == "sendMessage" and call.params.get("chat_id") in (
                user.id,
                str(user.id),
            ):
                return call.started
        return None

    at = await emulator.wait_for(answered, PATIENCE, interval=0.001)
    assert message.update_id is not None
    out = emulator.handed_out(message.update_id)
    assert out is not None
    side.note(name, (at - out) * 1000)
    await settled(side.run)


async def _http(
    side: Side, name: str, client: httpx.AsyncClient, path: str, user: EmulatedUser
) -> None:
    """One GET of the front door, as the Mini App (signed by `user`'s initData) or Prometheus
    makes it."""
    headers = {"Authorization": f"tma {user.web_app_data()}"}
    started = time.perf_counter()
    answer = await client.get(f"http://127.0.0.1:{side.port}{path}", headers=headers)
    side.note(name, (time.perf_counter() - started) * 1000)
    assert answer.status_code == 200, (path, answer.status_code)


async def _timed(side: Side, name: str, work: Callable[[], Awaitable[Any]]) -> None:
    started = time.perf_counter()
    await work()
    side.note(name, (time.perf_counter() - started) * 1000)


async def _jobs_list(run: Running) -> None:
    """`manzoori jobs list --state AWAITING_APPROVAL`, less the printing."""
    async with run.store.reading() as tx:
        found = await tx.list_jobs({State.AWAITING_APPROVAL}, 1000)
    reports.table([reports.job_summary(job) for job in found])


async def _round(side: Side, n: int, client: httpx.AsyncClient) -> None:
    """One of everything on `side`, the n-th tap among them."""
    approver, still_waiting = side.approvers[-1], side.jobs[-1]  # never tapped
    run = side.run
    assert run.notices is not None
    await _timed(side, "notice pass, nothing due", run.notices.run_once)
    await _timed(side, "outbox pass, nothing due", run.outbox.run_once)
    await _command(side, "/pending", approver, "/pending")
    await _command(side, "/status", side.requester, "/status")
    await _http(side, "Mini App PO", client, f"/api/po/{still_waiting.po_number}", approver)
    await _http(side, "/metrics scrape", client, "/metrics", approver)
    await _timed(side, "jobs list", lambda: _jobs_list(run))
    await _tap(side, n)
    while await run.outbox.run_once():  # the approved PO's e-mail, and
        pass
    await deliver_all(run)  # the cards' edits: the next passes find nothing due


async def _measure(empty: Side, big: Side, rounds: int) -> None:
    async with httpx.AsyncClient(timeout=PATIENCE) as client:
        for n in range(rounds):
            first, second = (empty, big) if n % 2 == 0 else (big, empty)
            await _round(first, n, client)
            await _round(second, n, client)


def _row(name: str, empty: list[float], big: list[float], label: str, extra: str) -> Result:
    e99, b99 = percentile(empty, 99), percentile(big, 99)
    ratio = b99 / e99 if e99 > 0 else float("inf")
    targeted = name in TARGETED
    return Result(
        SECTION,
        f"{name}, {label}",
        {
            "samples": str(len(big)),
            "empty p50 ms": f"{median(empty):.1f}",
            "empty p99 ms": f"{e99:.1f}",
            "grown p50 ms": f"{median(big):.1f}",
            "grown p99 ms": f"{b99:.1f}",
            "ratio": f"{ratio:.2f}",
        },
        target=f"p99 ≤ {RATIO_TARGET:g} × empty" if targeted else "",
        met=ratio <= RATIO_TARGET if targeted else None,
        notes=extra,
    )


async def run_growth(empty_db: Database, grown_db: Database, quick: bool) -> list[Result]:
    """Every row on one kind of database."""
    count, rounds, terms = (500, 4, 100) if quick else (100_000, 100, 1_000)
    sides: list[Side] = []
    async with contextlib.AsyncExitStack() as stack:
        sink = await stack.enter_async_context(SinkProcess())
        host, smtp_port = sink.address
        for db in (empty_db, grown_db):
            port = free_port()
            settings: dict[str, Any] = {
                "web_port": port,
                "manzoori_public_url": f"http://127.0.0.1:{port}",
                "mail_from": "orders@shop.example",
                "smtp_host": host,
                "smtp_port": smtp_port,
                "smtp_tls": "none",
            }
            emulator, run = await stack.enter_async_context(bot_on(db, web=True, **settings))
            sides.append(await _live(emulator, run, rounds + 1, terms))
        empty, big = sides
        t = await grown.template(big.run.store.engine, big.jobs[0].po_number)
        live = {REQUESTER, *(a.id for a in big.approvers)}
        made = await grown.grow(
            big.run.store.engine, t, count=count, requester=REQUESTER, live_people=live,
            skus=skus(terms), now=utcnow(),
        )  # fmt: skip
        await _measure(empty, big, rounds)
    built = (
        f"{count:,} POs, {grown.PEOPLE:,} people, {made.rows['audit_events']:,} audit events "
        f"written in {made.seconds:.0f} s"
    )
    return [
        _row(name, empty.samples[name], big.samples[name], empty_db.label, built)
        for name in empty.samples
    ]


async def run(ctx: Context) -> list[Result]:
    """The section on SQLite and, when the run has it, PostgreSQL (a second database beside
    the bench's, `<name>_grown`)."""
    results = await run_growth(
        sqlite_database(ctx.sqlite_dir, "growth-empty"),
        sqlite_database(ctx.sqlite_dir, "growth-grown"),
        ctx.quick,
    )
    if ctx.postgres_url is not None:
        url = make_url(ctx.postgres_url)
        second = url.set(database=f"{url.database}_grown").render_as_string(hide_password=False)
        if await reachable(second):
            empty, big = postgres_database(ctx.postgres_url), postgres_database(second)
            results += await run_growth(empty, big, ctx.quick)
    return results

"""The outbox runner: performs approved sends, each business action once in effect."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from asyncio import Semaphore
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta, tzinfo
from enum import StrEnum
from typing import Any

from bot import logs
from bot.clock import Runtime
from bot.documents import rendering
from bot.outbox.links import SupplierLinks
from core.approval.policies import Rules
from core.errors import AmbiguousSendError, LeaseLost, SendError
from core.jobs import closing
from core.jobs.effects import EffectKind
from core.jobs.jobs import Effect, SendOrder
from core.outbox import dispatch
from core.outbox.dispatch import Attempted
from core.people import delegating
from core.ports import Sender, SendSession, ShellStore
from core.purchasing import new_terms
from core.purchasing.po_document import document_of

log = logging.getLogger(__name__)

# SMTP connections one runner keeps open, each carrying one send at a time: against a relay
# that takes 200 ms per message, ten in flight send about 45 a second.
CONNECTIONS = 10
# Rows one claim leases per connection (a claim takes CONNECTIONS x this many). A claimed row
# waits through at most this many sends of its connection, its own included, before its
# marker is even written; each send ends within the SMTP timeout, so config checks
# MANZOORI_LEASE_SECONDS > SMTP_TIMEOUT_SECONDS x this: every claimed row is sent inside its
# lease.
SENDS_PER_CONNECTION = 3
# Seconds a runner beside a bot waits for a pause in its taps before a claim, and at most in
# all before the renders of one claim (OutboxRunner.pause): longer than a burst of a hundred
# taps takes to answer, short beside anyone watching for the e-mail.
PAUSE_SECONDS = 2.0
# Claims one busy pass makes before it ends, so that expiry, new terms and recovery still run
# every few hundred sends while the outbox stays full.
PASS_CLAIMS = 10


class FaultPoint(StrEnum):
    """Where a crash test may have the runner SIGKILL itself (MANZOORI_FAULT_POINT).

    A pass marks rows only for connections that are free that moment, so that a crash leaves
    at most one marked row per connection, the one it was sending; a point is where the first
    send of the pass gets to, the others being wherever they are at that moment (not marked,
    marked, mid-DATA, accepted or recorded).
    """

    AFTER_CLAIM = "after_claim"  # the batch leased, no marker yet
    AFTER_MARKER = "after_marker"  # the first markers committed, the sender not called
    AFTER_ACCEPT = "after_accept"  # the server took the first mail, nothing of it recorded
    AFTER_RECORD = "after_record"  # the first result recorded, other sends still in flight


async def documents_ahead(
    store: ShellStore,
    effects: list[Effect],
    zone: tzinfo,
    now: Callable[[], datetime],
    links: SupplierLinks | None = None,
    before_render: Callable[[], Awaitable[None]] | None = None,
) -> dict[str, asyncio.Task[None]]:
    """Start making the PO documents these rows' e-mails carry and have none yet: a task per
    such row, by its key. Each is made once per row, before its first attempt, in the
    renderer's workers (bot.documents.rendering, several at once) after `before_render`,
    dated and signed in `zone`, with the supplier's link of a send-po row's e-mail when
    `links` makes them; every attempt after sends the bytes kept then
    (core.outbox.dispatch.keep_document)."""
    owed = await dispatch.documents_owed(store, effects)
    return {
        effect.key: asyncio.create_task(
            _make_document(store, effect, zone, now, links, before_render)
        )
        for effect in owed
    }


async def _make_document(
    store: ShellStore,
    effect: Effect,
    zone: tzinfo,
    now: Callable[[], datetime],
    links: SupplierLinks | None,
    before_render: Callable[[], Awaitable[None]] | None,
) -> None:
    if before_render is not None:
        await before_render()
    at = now()
    sends = effect.kind == EffectKind.SEND_PO
    link = links.url(effect) if links is not None and sends else ""
    async with store.reading() as tx:
        job = await tx.job(effect.job_id)
        document = await document_of(
            tx, job, effect.draft_version, approved=True, zone=zone, now=at, link=link
        )
    pdf = await rendering.render(document)
    kept = await dispatch.keep_document(store, effect.key, pdf, at)
    log.info("%s: PO document made, %d bytes, sha256 %s", effect.key, len(pdf), kept.sha256)


async def _made(tasks: dict[str, asyncio.Task[None]]) -> None:
    """Wait for these documents; if one fails, stop the others and raise its error."""
    try:
        await asyncio.gather(*tasks.values())
    finally:
        await _dropped(tasks)


async def _dropped(tasks: dict[str, asyncio.Task[None]]) -> None:
    """Stop the documents not made yet; a failure among them is left to the next attempt."""
    for task in tasks.values():
        task.cancel()
    await asyncio.gather(*tasks.values(), return_exceptions=True)


class OutboxRunner:
    """Claims due outbox rows under a lease and performs them through the sender, several at
    a time."""

    def __init__(
        self,
        store: ShellStore,
        sender: Sender,
        rules: Rules,
        *,
        lease: timedelta,
        connections: int = CONNECTIONS,
        fault_point: FaultPoint | None = None,
        runtime: Runtime | None = None,
        links: SupplierLinks | None = None,
        pause: Callable[[float], Awaitable[None]] | None = None,
        render_wait: float = PAUSE_SECONDS,
    ) -> None:
        if connections < 1:
            raise ValueError("a runner needs at least one connection")
        self.store, self.sender, self.rules, self.lease = store, sender, rules, lease
        self.connections = connections
        self.links = links  # the supplier's link in each PO's PDF; None: no link anywhere
        self.fault_point = fault_point
        self.runtime = runtime or Runtime.of_process()
        self.owner = self.runtime.owner
        # Beside a bot, a wait for a pause in its taps (fairness.taps_paused), given the most
        # seconds to wait: rendering a PO's PDF takes the CPU a burst of taps needs for its
        # answers, and an e-mail that leaves a second later goes unnoticed where a spinner
        # does not. Waited for before each claim for up to PAUSE_SECONDS, and before each
        # render for at most `render_wait` seconds in all per claim, which must fit in what the
        # lease leaves beside the sends (bootstrap.build_runner).
        self.pause, self.render_wait = pause, render_wait
        self._pause_until = 0.0  # the event loop's time the renders of this claim wait until

    @property
    def batch(self) -> int:
        """Rows one claim leases."""
        return self.connections * SENDS_PER_CONNECTION

    def _fault(self, point: FaultPoint) -> None:
        """Crash tests: die here, as a power cut or OOM kill would, with no cleanup."""
        if self.fault_point == point:
            log.warning("fault point %s reached: killing runner %s", point, self.owner)
            os.kill(os.getpid(), signal.SIGKILL)

    async def run_once(self) -> int:
        """One pass: expire, end delegations whose time is up, re-draft on new terms, recover
        lost attempts, claim and send."""
        now = self.runtime.now()
        await closing.expire_due(self.store, now)
        await delegating.end_due_delegations(self.store, now, self.rules.approval.default_policy)
        for item in await new_terms.apply_terms(self.store, now, self.rules):
            log.info("%s re-drafted on new terms: now %s", item.po_number, item.job.state.value)
        await dispatch.recover_stalled(self.store, now, self.sender.provider_idempotent)
        claimed = await self._claim()
        if not claimed:
            return 0
        self._fault(FaultPoint.AFTER_CLAIM)
        return await self._perform(claimed)

    async def _perform(self, claimed: list[Effect]) -> int:
        """Mark and send the claimed rows, and more while claims come back full, over up to
        `connections` connections at once; each result is recorded as soon as its send ends,
        by a task of its own. Returns the rows claimed."""
        queue: asyncio.Queue[SendOrder | None] = asyncio.Queue()
        free = asyncio.Semaphore(self.connections)  # connections with no order to send
        records: list[asyncio.Task[None]] = []
        count = min(self.connections, len(claimed))
        workers = [asyncio.create_task(self._work(queue, free, records)) for _ in range(count)]
        documents: dict[str, asyncio.Task[None]] = {}  # being made, by row
        try:
            total = await self._feed(claimed, queue, free, workers, documents)
        finally:
            await _dropped(documents)  # after a broken sender: their rows stay owed
            for _ in workers:
                queue.put_nowait(None)  # each worker stops once the orders before it are sent
            # Not a TaskGroup: one failure must not cancel the other sends mid-DATA, nor the
            # records of what was sent.
            outcomes = await asyncio.gather(*workers, return_exceptions=True)
            outcomes += await asyncio.gather(*records, return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome
        return total

    async def _feed(
        self,
        claimed: list[Effect],
        queue: asyncio.Queue[SendOrder | None],
        free: Semaphore,
        workers: list[asyncio.Task[None]],
        documents: dict[str, asyncio.Task[None]],
    ) -> int:
        """Commit the markers of as many rows as connections are free, in one transaction,
        and hand them out; then wait for the next free connection. A marker is written only
        when its send can start at once: a crash leaves at most one marked row per
        connection for a person to reconcile, the one it was sending."""
        total, claims, marked = len(claimed), 1, False
        # Each claim's documents are started at once and rendered beside the sends before
        # them; a row waits only for its own before its marker is written.
        documents |= await self._documents_ahead(claimed)
        while True:
            while claimed:
                await free.acquire()
                if any(worker.done() for worker in workers):
                    return total  # a broken sender: mark nothing more (see _work)
                taken = 1
                while taken < len(claimed) and not free.locked():
                    await free.acquire()  # free as well: no wait
                    taken += 1
                mine = [e.key for e in claimed[:taken] if e.key in documents]
                await _made({key: documents.pop(key) for key in mine})
                keys = [effect.key for effect in claimed[:taken]]
                claimed = claimed[taken:]
                now = self.runtime.now()
                orders = await dispatch.start_attempts(
                    self.store, keys, self.owner, now, self.lease, self.rules
                )
                if orders and not marked:
                    self._fault(FaultPoint.AFTER_MARKER)
                    marked = True
                for order in orders:
                    queue.put_nowait(order)
                for _ in range(taken - len(orders)):
                    free.release()  # rows that were not to be sent: their connections stay free
            if total < claims * self.batch or claims == PASS_CLAIMS:
                return total
            # A full claim: more is likely due, and claimed now it keeps every connection busy.
            claimed = await self._claim()
            total, claims = total + len(claimed), claims + 1
            documents |= await self._documents_ahead(claimed)

    async def _claim(self) -> list[Effect]:
        """Lease the next batch of due rows, once the bot's taps pause (self.pause)."""
        if self.pause is not None:
            await self.pause(PAUSE_SECONDS)
            self._pause_until = asyncio.get_running_loop().time() + self.render_wait
        now = self.runtime.now()
        return await dispatch.claim(self.store, now, self.owner, self.lease, self.batch)

    async def _before_render(self) -> None:
        """Wait for a pause in the bot's taps, within what is left of this claim's wait."""
        left = self._pause_until - asyncio.get_running_loop().time()
        if self.pause is not None and left > 0:
            await self.pause(left)

    async def _documents_ahead(self, effects: list[Effect]) -> dict[str, asyncio.Task[None]]:
        """The PO documents of these rows' e-mails, started if not made yet (documents_ahead)."""
        zone, now = self.rules.approval.zone, self.runtime.now
        return await documents_ahead(
            self.store, effects, zone, now, self.links, self._before_render
        )

    async def _work(
        self,
        queue: asyncio.Queue[SendOrder | None],
        free: Semaphore,
        records: list[asyncio.Task[None]],
    ) -> None:
        """One connection: send the next order, leave its result to a record task, repeat."""
        try:
            async with self.sender.session() as session:
                while (order := await queue.get()) is not None:
                    logs.about(po_number=order.job.po_number, job_id=order.job.id)
                    result, error = await self._send(session, order)
                    free.release()
                    if error is None:
                        self._fault(FaultPoint.AFTER_ACCEPT)
                    records.append(asyncio.create_task(self._record(order, result, error)))
        except BaseException:
            # Only a broken sender gets here (send failures come back classified). The feeder
            # must not wait for connections this worker would have freed: it stops marking,
            # and what it marked is left to recovery, as after a crash.
            for _ in range(self.connections):
                free.release()
            raise

    async def _record(
        self, order: SendOrder, result: dict[str, Any] | None, error: SendError | None
    ) -> None:
        """Make one send's result durable: the job's next state, or a retry, or reconcile."""
        key = order.effect.key
        try:
            attempted = Attempted(self.owner, result, error)
            now, rand = self.runtime.now(), self.runtime.rand()
            state = await dispatch.finish_attempt(
                self.store, order, attempted, now, self.rules, rand
            )
        except LeaseLost:
            # Recovery or a person moved the row on while this attempt ran: say loudly what
            # this attempt saw, so the reconciliation can be checked against it.
            log.error("late result for %s dropped: %s", key, result or error)
            return
        log.info("%s -> %s", key, state.value)
        self._fault(FaultPoint.AFTER_RECORD)

    async def _send(
        self, session: SendSession, order: SendOrder
    ) -> tuple[dict[str, Any] | None, SendError | None]:
        """Call the sender; every failure comes back classified, never raised."""
        try:
            return await session.send(order), None
        except SendError as exc:
            return None, exc
        except Exception as exc:  # after the marker, an unforeseen failure may have sent
            log.exception("sender crashed on %s", order.effect.key)
            return None, AmbiguousSendError(f"unexpected {type(exc).__name__} while sending")

    async def open_work(self) -> int:
        """Rows that are due, leased or mid-attempt: what `run_until_idle` waits for."""
        async with self.store.reading() as tx:
            return await tx.open_work(self.runtime.now())

    async def run_until_idle(self, poll: float, max_seconds: float | None = None) -> None:
        """Run passes until nothing is due or in flight (used by tests, the demo and cron)."""
        loop = asyncio.get_running_loop()
        deadline = None if max_seconds is None else loop.time() + max_seconds
        while True:
            claimed = await self.run_once()
            if claimed == 0 and await self.open_work() == 0:
                return
            if deadline is not None and loop.time() > deadline:
                raise TimeoutError("outbox still busy when the time ran out")
            if claimed == 0:
                await asyncio.sleep(poll)

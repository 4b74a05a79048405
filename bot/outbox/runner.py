"""The outbox runner: performs approved sends, each business action once in effect."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from collections.abc import Iterator
from datetime import timedelta
from enum import StrEnum
from typing import Any

from bot.clock import Runtime
from core import dispatch, purchasing, service
from core.dispatch import Attempted
from core.errors import AmbiguousSendError, LeaseLost, SendError
from core.jobs import SendOrder
from core.policies import Rules
from core.ports import Sender, SendSession, ShellStore

log = logging.getLogger(__name__)

# SMTP connections one runner keeps open, each carrying one send at a time: against a relay
# that takes 200 ms per message, ten in flight send about 45 a second.
CONNECTIONS = 10
# Sends each connection makes in one pass: a pass claims CONNECTIONS x this many rows. More
# means fewer transactions and connections per send, but every send of a pass must end inside
# the lease taken at its marker, and a runner that dies strands the whole batch (config checks
# MANZOORI_LEASE_SECONDS > SMTP_TIMEOUT_SECONDS x this).
SENDS_PER_CONNECTION = 3


class FaultPoint(StrEnum):
    """Where a crash test may have the runner SIGKILL itself (MANZOORI_FAULT_POINT).

    A pass marks its whole batch in one transaction, then sends on several connections at
    once; a point is where the first send of the pass gets to, the others being wherever they
    are at that moment (not started, mid-DATA, or accepted and recorded).
    """

    AFTER_CLAIM = "after_claim"  # the batch leased, no marker yet
    AFTER_MARKER = "after_marker"  # the batch's markers committed, the sender not called
    AFTER_ACCEPT = "after_accept"  # the server took the first mail, nothing of it recorded
    AFTER_RECORD = "after_record"  # the first result recorded, other sends still in flight


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
    ) -> None:
        if connections < 1:
            raise ValueError("a runner needs at least one connection")
        self.store, self.sender, self.rules, self.lease = store, sender, rules, lease
        self.connections = connections
        self.fault_point = fault_point
        self.runtime = runtime or Runtime.of_process()
        self.owner = self.runtime.owner

    @property
    def batch(self) -> int:
        """Rows one pass claims."""
        return self.connections * SENDS_PER_CONNECTION

    def _fault(self, point: FaultPoint) -> None:
        """Crash tests: die here, as a power cut or OOM kill would, with no cleanup."""
        if self.fault_point == point:
            log.warning("fault point %s reached: killing runner %s", point, self.owner)
            os.kill(os.getpid(), signal.SIGKILL)

    async def run_once(self) -> int:
        """One pass: expire, re-draft on new terms, recover lost attempts, claim and send."""
        now = self.runtime.now()
        await service.expire_due(self.store, now)
        for item in await purchasing.apply_terms(self.store, now, self.rules):
            log.info("%s re-drafted on new terms: now %s", item.po_number, item.job.state.value)
        await dispatch.recover_stalled(self.store, now, self.sender.provider_idempotent)
        claimed = await dispatch.claim(self.store, now, self.owner, self.lease, self.batch)
        if not claimed:
            return 0
        self._fault(FaultPoint.AFTER_CLAIM)
        keys = [effect.key for effect in claimed]
        orders = await dispatch.start_attempts(
            self.store, keys, self.owner, self.runtime.now(), self.lease, self.rules
        )
        if orders:
            self._fault(FaultPoint.AFTER_MARKER)
            await self._send_all(orders)
        return len(claimed)

    async def _send_all(self, orders: list[SendOrder]) -> None:
        """Send the orders over up to `connections` connections at once, each taking the next
        order when its last one is recorded."""
        pending = iter(orders)
        workers = min(self.connections, len(orders))
        # Not a TaskGroup: one worker's failure must not cancel the others mid-DATA.
        outcomes = await asyncio.gather(
            *(self._work(pending) for _ in range(workers)), return_exceptions=True
        )
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome

    async def _work(self, pending: Iterator[SendOrder]) -> None:
        """One connection's share of the pass: the next order, until none is left."""
        async with self.sender.session() as session:
            for order in pending:
                await self._attempt(session, order)

    async def _attempt(self, session: SendSession, order: SendOrder) -> None:
        """Send one marked order and record its result, alone: durable before the next."""
        result, error = await self._send(session, order)
        if error is None:
            self._fault(FaultPoint.AFTER_ACCEPT)
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

"""The outbox runner: performs approved sends, each business action once in effect."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from datetime import timedelta
from enum import StrEnum
from typing import Any

from bot.clock import Runtime
from core import dispatch, purchasing, service
from core.dispatch import Attempted
from core.errors import AmbiguousSendError, LeaseLost, SendError
from core.jobs import Effect, SendOrder
from core.policies import Rules
from core.ports import Sender, ShellStore

log = logging.getLogger(__name__)

# Rows one pass claims: small, so a runner that dies strands few rows until their lease ends.
BATCH = 10


class FaultPoint(StrEnum):
    """Where a crash test may have the runner SIGKILL itself (MANZOORI_FAULT_POINT)."""

    AFTER_CLAIM = "after_claim"  # rows leased, no marker yet
    AFTER_MARKER = "after_marker"  # the attempt marker committed, the sender not called
    AFTER_ACCEPT = "after_accept"  # the server took the mail, nothing recorded
    AFTER_RECORD = "after_record"  # the result recorded


class OutboxRunner:
    """Claims due outbox rows under a lease and performs them through the sender."""

    def __init__(
        self,
        store: ShellStore,
        sender: Sender,
        rules: Rules,
        *,
        lease: timedelta,
        fault_point: FaultPoint | None = None,
        runtime: Runtime | None = None,
    ) -> None:
        self.store, self.sender, self.rules, self.lease = store, sender, rules, lease
        self.fault_point = fault_point
        self.runtime = runtime or Runtime.of_process()
        self.owner = self.runtime.owner

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
        claimed = await dispatch.claim(self.store, now, self.owner, self.lease, BATCH)
        if claimed:
            self._fault(FaultPoint.AFTER_CLAIM)
        for effect in claimed:
            await self._attempt(effect)
        return len(claimed)

    async def _attempt(self, effect: Effect) -> None:
        """Marker, send, result: three steps, each durable before the next."""
        try:
            order = await dispatch.start_attempt(
                self.store, effect.key, self.owner, self.runtime.now(), self.lease, self.rules
            )
        except LeaseLost:
            log.info("lease on %s lost before the attempt; another runner has it", effect.key)
            return
        if order is None:
            return
        self._fault(FaultPoint.AFTER_MARKER)
        result, error = await self._send(order)
        if error is None:
            self._fault(FaultPoint.AFTER_ACCEPT)
        try:
            attempted = Attempted(self.owner, result, error)
            now, rand = self.runtime.now(), self.runtime.rand()
            state = await dispatch.finish_attempt(
                self.store, order, attempted, now, self.rules, rand
            )
        except LeaseLost:
            # Recovery or a person moved the row on while this attempt ran: say loudly what
            # this attempt saw, so the reconciliation can be checked against it.
            log.error("late result for %s dropped: %s", effect.key, result or error)
            return
        log.info("%s -> %s", effect.key, state.value)
        self._fault(FaultPoint.AFTER_RECORD)

    async def _send(self, order: SendOrder) -> tuple[dict[str, Any] | None, SendError | None]:
        """Call the sender; every failure comes back classified, never raised."""
        try:
            return await self.sender.send(order), None
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

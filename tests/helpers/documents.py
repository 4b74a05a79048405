"""The PO document an outbox row's e-mail carries, made as the runner makes it before a first
attempt: for tests that drive core.outbox.dispatch step by step instead of a runner."""

from __future__ import annotations

import asyncio
from datetime import datetime

from bot.outbox.runner import documents_ahead
from core.approval.policies import PAKISTAN
from core.jobs.jobs import Effect
from core.ports import Store


async def with_document(store: Store, effect: Effect, at: datetime) -> None:
    """Make and keep the row's PDF, as OutboxRunner does before marking its first attempt."""
    made = await documents_ahead(store, [effect], PAKISTAN, lambda: at)  # type: ignore[arg-type]
    await asyncio.gather(*made.values())

"""bot.telegram.context.OneThread: CPU work runs off the event loop, in one thread, one piece
after the other, while the loop goes on."""

from __future__ import annotations

import asyncio
import itertools
import threading
import time

from bot.telegram.context import OneThread


async def test_work_runs_in_one_thread_off_the_loop_one_piece_at_a_time() -> None:
    offload = OneThread()
    spans: list[tuple[str, float, float]] = []

    def work(name: str) -> str:
        start = time.monotonic()
        time.sleep(0.05)  # holds its thread, not the GIL, as a sleeping C call would
        spans.append((threading.current_thread().name, start, time.monotonic()))
        return name

    ticks = 0

    async def loop_goes_on() -> None:
        nonlocal ticks
        while len(spans) < 3:
            ticks += 1
            await asyncio.sleep(0.005)

    results = await asyncio.gather(
        *(offload(lambda n=n: work(n)) for n in ("a", "b", "c")), loop_goes_on()
    )
    assert results[:3] == ["a", "b", "c"]
    names = {name for name, _, _ in spans}
    assert len(names) == 1 and names != {threading.current_thread().name}
    ordered = sorted(spans, key=lambda span: span[1])
    assert all(done <= start for (_, _, done), (_, start, _) in itertools.pairwise(ordered))
    assert ticks >= 5  # the loop ran meanwhile

"""store.turns on its own: writers of one process take SQLite's write lock in turns, urgent
ones (taps) first, each kind in arrival order, and a cancelled writer never keeps the turn.

The writers here wait on events the test sets; the loop runs until nothing more can move, so
the order is the queue's alone."""

from __future__ import annotations

import asyncio

import pytest

from store.turns import WriteTurns, urgent


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


class Writers:
    """Writers that record when they got their turn and hold it until the test says so."""

    def __init__(self, turns: WriteTurns) -> None:
        self.turns = turns
        self.order: list[str] = []
        self.gates: dict[str, asyncio.Event] = {}

    async def write(self, name: str) -> None:
        async with self.turns.turn():
            self.order.append(name)
            await self.gates.setdefault(name, asyncio.Event()).wait()

    async def urgent_write(self, name: str) -> None:
        with urgent():
            await self.write(name)

    def done(self, name: str) -> None:
        self.gates.setdefault(name, asyncio.Event()).set()


async def test_urgent_writers_go_before_the_others_and_each_kind_in_order() -> None:
    writers = Writers(WriteTurns())
    tasks = [asyncio.create_task(writers.write("sheet-1"))]
    await settle()
    tasks += [asyncio.create_task(writers.write(name)) for name in ("sheet-2", "runner")]
    await settle()
    tasks += [asyncio.create_task(writers.urgent_write(name)) for name in ("tap-1", "tap-2")]
    await settle()
    assert writers.order == ["sheet-1"] and writers.turns.waiting() == 4
    for name in ("sheet-1", "tap-1", "tap-2", "sheet-2", "runner"):
        writers.done(name)
        await settle()
    await asyncio.gather(*tasks)
    assert writers.order == ["sheet-1", "tap-1", "tap-2", "sheet-2", "runner"]
    assert writers.turns.waiting() == 0


async def test_a_writer_cancelled_while_waiting_or_when_handed_the_turn_passes_it_on() -> None:
    writers = Writers(WriteTurns())
    first = asyncio.create_task(writers.write("first"))
    await settle()
    gone = asyncio.create_task(writers.write("gone"))
    handed = asyncio.create_task(writers.write("handed"))
    last = asyncio.create_task(writers.write("last"))
    await settle()
    gone.cancel()  # gave up while waiting
    await settle()
    writers.done("first")
    await asyncio.sleep(0)  # "first" ends its turn and hands it to "handed", which has not run
    handed.cancel()  # cancelled after it was handed the turn, before it could take it
    await settle()
    with pytest.raises(asyncio.CancelledError):
        await gone
    with pytest.raises(asyncio.CancelledError):
        await handed
    assert writers.order == ["first", "last"]  # the turn reached the next one still waiting
    writers.done("last")
    await asyncio.gather(first, last)
    async with writers.turns.turn():  # and it is free again
        assert writers.turns.waiting() == 0


async def test_a_writer_that_fails_frees_the_turn() -> None:
    turns = WriteTurns()
    with pytest.raises(RuntimeError):
        async with turns.turn():
            raise RuntimeError("the transaction failed")
    async with asyncio.timeout(1):
        async with turns.turn():
            pass


def test_a_loop_that_stopped_holding_the_turn_does_not_block_another_loop() -> None:
    turns = WriteTurns()

    async def hold_forever() -> None:
        async with turns.turn():
            await asyncio.Event().wait()

    stopped = asyncio.new_event_loop()
    holder = stopped.create_task(hold_forever())
    stopped.run_until_complete(asyncio.sleep(0))  # the holder took the turn, then the loop stops

    async def write_in_another_loop() -> None:
        async with asyncio.timeout(1), turns.turn():  # with one queue for all, this waits
            pass

    try:
        asyncio.run(write_in_another_loop())
    finally:
        holder.cancel()
        stopped.run_until_complete(asyncio.gather(holder, return_exceptions=True))
        stopped.close()


async def test_work_a_tap_starts_in_the_background_waits_its_turn_again() -> None:
    writers = Writers(WriteTurns())
    first = asyncio.create_task(writers.write("sheet"))
    await settle()

    async def delivery() -> None:
        with urgent(False):  # started by a tap, but nobody watches it
            await writers.write("delivery")

    with urgent():
        background = asyncio.create_task(delivery())
    await settle()
    tap = asyncio.create_task(writers.urgent_write("tap"))
    await settle()
    for name in ("sheet", "tap", "delivery"):
        writers.done(name)
        await settle()
    await asyncio.gather(first, background, tap)
    assert writers.order == ["sheet", "tap", "delivery"]

"""Requests made together are handled together (bot.telegram.gathering): one call for a burst,
each asker its own result, an error everyone's, and a round for whoever asks meanwhile."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from bot.telegram.gathering import Gathering
from store.group_commit import _URGENT


class Doubler:
    """Doubles each request; records the batches it was called with."""

    def __init__(self, fail: bool = False) -> None:
        self.batches: list[list[int]] = []
        self.fail = fail
        self.release = asyncio.Event()
        self.release.set()

    async def __call__(self, requests: Sequence[int]) -> list[int]:
        self.batches.append(list(requests))
        assert _URGENT.get()  # people wait for these: their writes go first
        await self.release.wait()
        if self.fail:
            raise RuntimeError("the batch failed")
        return [2 * r for r in requests]


async def test_a_burst_is_one_call_and_each_asker_gets_its_own_result():
    doubler = Doubler()
    gathering = Gathering(doubler)
    results = await asyncio.gather(*(gathering.ask(n) for n in range(20)))
    assert results == [2 * n for n in range(20)]
    assert doubler.batches == [list(range(20))]


async def test_requests_that_start_over_a_few_loop_turns_are_still_one_batch():
    doubler = Doubler()
    gathering = Gathering(doubler)

    async def later(n: int, turns: int) -> int:
        for _ in range(turns):
            await asyncio.sleep(0)
        return await gathering.ask(n)

    results = await asyncio.gather(*(later(n, n % 3) for n in range(9)))
    assert results == [2 * n for n in range(9)]
    assert len(doubler.batches) == 1


async def test_a_batch_is_at_most_the_limit():
    doubler = Doubler()
    gathering = Gathering(doubler, limit=4)
    results = await asyncio.gather(*(gathering.ask(n) for n in range(10)))
    assert results == [2 * n for n in range(10)]
    assert doubler.batches == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


async def test_whoever_asks_during_a_round_is_in_the_next():
    doubler = Doubler()
    doubler.release.clear()
    gathering = Gathering(doubler)
    first = asyncio.ensure_future(gathering.ask(1))
    while not doubler.batches:
        await asyncio.sleep(0)
    second = asyncio.ensure_future(gathering.ask(2))
    await asyncio.sleep(0.01)
    assert not second.done()
    doubler.release.set()
    assert (await first, await second) == (2, 4)
    assert doubler.batches == [[1], [2]]


async def test_an_error_is_every_askers_of_that_batch_and_the_next_round_runs():
    doubler = Doubler(fail=True)
    gathering = Gathering(doubler)
    results = await asyncio.gather(*(gathering.ask(n) for n in range(3)), return_exceptions=True)
    assert [str(r) for r in results] == ["the batch failed"] * 3
    doubler.fail = False
    assert await gathering.ask(5) == 10


async def test_an_asker_cancelled_leaves_the_others_their_results():
    doubler = Doubler()
    doubler.release.clear()
    gathering = Gathering(doubler)
    asked = [asyncio.ensure_future(gathering.ask(n)) for n in range(3)]
    while not doubler.batches:
        await asyncio.sleep(0)
    asked[0].cancel()
    doubler.release.set()
    with pytest.raises(asyncio.CancelledError):
        await asked[0]
    assert [await a for a in asked[1:]] == [2, 4]

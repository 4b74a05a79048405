"""bot.telegram.fairness on its own: lanes per sender, pools per kind, bounded memory.

Handlers here are coroutines that wait on events the test sets, and the test lets the loop
run until nothing more can move (asyncio.sleep(0) a few times: no wall-clock waits), so what
started and what waits is decided by the processor alone.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from telegram import CallbackQuery, Chat, Document, Message, Update, User

from bot.telegram.fairness import Budget, FairProcessor, InFlight, Lru, Recently, Shares

WHEN = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)


def message(update_id: int, user_id: int) -> Update:
    """A text message from `user_id`."""
    user = User(user_id, f"user{user_id}", False)
    sent = Message(update_id, WHEN, Chat(user_id, Chat.PRIVATE), from_user=user, text="hi")
    return Update(update_id, message=sent)


def upload(update_id: int, user_id: int) -> Update:
    """A file (a restock sheet) from `user_id`."""
    user = User(user_id, f"user{user_id}", False)
    document = Document(f"file{update_id}", f"unique{update_id}", file_name="sheet.csv")
    sent = Message(update_id, WHEN, Chat(user_id, Chat.PRIVATE), from_user=user, document=document)
    return Update(update_id, message=sent)


def tap(update_id: int, user_id: int) -> Update:
    """A button tap from `user_id`."""
    user = User(user_id, f"user{user_id}", False)
    return Update(update_id, callback_query=CallbackQuery(str(update_id), user, "chat"))


class Handlers:
    """Handler coroutines that record their start and finish when the test says so."""

    def __init__(self) -> None:
        self.started: list[int] = []
        self.gates: dict[int, asyncio.Event] = {}

    async def handle(self, update_id: int) -> None:
        self.started.append(update_id)
        await self.gates.setdefault(update_id, asyncio.Event()).wait()

    def finish(self, update_id: int) -> None:
        self.gates.setdefault(update_id, asyncio.Event()).set()


async def settle() -> None:
    """Let every runnable task run until it blocks again."""
    for _ in range(20):
        await asyncio.sleep(0)


class Told:
    """A fairness.Dropped that records what it was asked to tell: (update id, first)."""

    def __init__(self) -> None:
        self.told: list[tuple[int, bool]] = []

    async def __call__(self, update: Update, *, first: bool) -> None:
        self.told.append((update.update_id, first))


def fair(**shares: float) -> FairProcessor:
    """A FairProcessor with these shares, telling a Told of what it drops."""
    return FairProcessor(Told(), Shares(**shares))  # type: ignore[arg-type]


def told(processor: FairProcessor) -> list[tuple[int, bool]]:
    """What `processor` (made by fair) was asked to tell."""
    recorder = processor._dropped
    assert isinstance(recorder, Told)
    return recorder.told


def submit(processor: FairProcessor, handlers: Handlers, update: Update) -> asyncio.Task[None]:
    """Hand the update to the processor as PTB's Application does: one task per update."""
    return asyncio.create_task(processor.process_update(update, handlers.handle(update.update_id)))


async def test_one_sender_has_two_updates_in_flight_and_the_rest_wait_in_order() -> None:
    processor, handlers = fair(per_user=2, taps=8, messages=8), Handlers()
    tasks = [submit(processor, handlers, message(n, 7)) for n in range(1, 6)]
    await settle()
    assert handlers.started == [1, 2]
    handlers.finish(2)
    await settle()
    assert handlers.started == [1, 2, 3]  # the oldest waiting one goes next
    for n in (1, 3, 4, 5):
        handlers.finish(n)
    await asyncio.gather(*tasks)
    assert handlers.started == [1, 2, 3, 4, 5]
    assert processor.lanes == 0  # an idle sender leaves nothing behind


async def test_a_sender_waiting_for_their_lane_holds_no_slot_of_the_pool() -> None:
    processor, handlers = fair(per_user=2, taps=8, messages=3), Handlers()
    busy = [submit(processor, handlers, message(n, 7)) for n in range(1, 21)]  # twenty from one
    other = submit(processor, handlers, message(100, 8))  # someone else, after all of them
    await settle()
    assert handlers.started == [1, 2, 100]
    for n in range(1, 21):
        handlers.finish(n)
    handlers.finish(100)
    await asyncio.gather(*busy, other)


async def test_taps_have_their_own_pool_that_messages_cannot_fill() -> None:
    processor, handlers = fair(per_user=2, taps=2, messages=2), Handlers()
    uploads = [submit(processor, handlers, message(n, n)) for n in range(1, 6)]  # five people
    taps = [submit(processor, handlers, tap(n, n)) for n in range(11, 14)]
    await settle()
    assert handlers.started == [1, 2, 11, 12]  # two uploads, and two taps beside them
    handlers.finish(11)
    await settle()
    assert handlers.started[-1] == 13  # the next tap takes the tap's slot, not an upload
    for n in (1, 2, 3, 4, 5, 12, 13):
        handlers.finish(n)
    await asyncio.gather(*uploads, *taps)
    assert sorted(handlers.started) == [1, 2, 3, 4, 5, 11, 12, 13]


async def test_files_have_their_own_pool_that_leaves_messages_free() -> None:
    processor, handlers = fair(taps=2, messages=2, files=2), Handlers()
    sheets = [submit(processor, handlers, upload(n, n)) for n in range(1, 6)]  # five people
    status = [submit(processor, handlers, message(n, n)) for n in range(11, 13)]
    await settle()
    assert handlers.started == [1, 2, 11, 12]  # two sheets at once; messages beside them
    handlers.finish(1)
    await settle()
    assert handlers.started[-1] == 3  # the next sheet takes the freed file slot
    for n in (2, 3, 4, 5, 11, 12):
        handlers.finish(n)
    await asyncio.gather(*sheets, *status)
    assert sorted(handlers.started) == [1, 2, 3, 4, 5, 11, 12]


async def test_updates_beyond_a_senders_backlog_are_dropped_and_the_sender_told_once() -> None:
    processor = fair(per_user=1, per_user_backlog=3, taps=8, messages=8)
    handlers = Handlers()
    tasks = [submit(processor, handlers, message(n, 7)) for n in range(1, 6)]
    await settle()
    assert [task.done() for task in tasks] == [False, False, False, True, True]
    assert told(processor) == [(4, True)]  # the first dropped is answered, not the next
    for n in range(1, 6):
        handlers.finish(n)
    await asyncio.gather(*tasks)
    assert handlers.started == [1, 2, 3]
    assert processor.lanes == 0
    again = [submit(processor, handlers, message(n, 7)) for n in range(6, 11)]  # a new burst
    await settle()
    assert told(processor) == [(4, True), (9, True)]  # is told of again
    for n in range(6, 11):
        handlers.finish(n)
    await asyncio.gather(*again)


async def test_every_tap_beyond_a_senders_tap_backlog_is_answered_at_once() -> None:
    processor = fair(per_user=1, tap_backlog=2, taps=8, messages=8)
    handlers = Handlers()
    tasks = [submit(processor, handlers, message(1, 7))]
    tasks += [submit(processor, handlers, tap(n, 7)) for n in range(2, 6)]
    await settle()
    # A tap is never dropped silently, nor left waiting when its sender has many waiting.
    assert told(processor) == [(3, False), (4, False), (5, False)]
    for n in range(1, 6):
        handlers.finish(n)
    await asyncio.gather(*tasks)
    assert handlers.started == [1, 2]


async def test_a_tap_waiting_behind_its_senders_updates_past_its_patience_is_answered() -> None:
    processor = fair(per_user=1, taps=8, messages=8, tap_patience=0.01)
    handlers = Handlers()
    slow = submit(processor, handlers, message(1, 7))  # holds the sender's one place
    other = submit(processor, handlers, tap(3, 8))  # someone else's tap is not held up
    waiting = submit(processor, handlers, tap(2, 7))
    await waiting
    assert told(processor) == [(2, False)] and handlers.started == [1, 3]
    handlers.finish(1)
    handlers.finish(3)
    await asyncio.gather(slow, other)
    assert handlers.started == [1, 3] and processor.lanes == 0


async def test_a_failure_to_tell_does_not_stop_the_next_update() -> None:
    async def broken(update: Update, *, first: bool) -> None:
        raise RuntimeError("the store is down")

    processor, handlers = FairProcessor(broken, Shares(per_user=1, per_user_backlog=1)), Handlers()
    first, dropped = (
        submit(processor, handlers, message(1, 7)),
        submit(processor, handlers, tap(2, 7)),
    )
    await dropped  # told nothing, logged, and done
    handlers.finish(1)
    await first
    handlers.finish(3)
    await submit(processor, handlers, message(3, 7))
    assert handlers.started == [1, 3]


async def test_a_failing_handler_frees_its_lane_and_slot() -> None:
    processor = fair(per_user=1, taps=1, messages=1)

    async def fails() -> None:
        raise RuntimeError("handler failed")

    failed = asyncio.create_task(processor.process_update(message(1, 7), fails()))
    await asyncio.gather(failed, return_exceptions=True)
    handlers = Handlers()
    handlers.finish(2)
    await submit(processor, handlers, message(2, 7))
    assert handlers.started == [2] and processor.lanes == 0


def test_recently_forgets_after_the_period_and_beyond_its_cap() -> None:
    seen = Recently(period=600.0, cap=2)
    assert not seen.seen(1, 0.0)
    seen.note(1, 0.0)
    assert seen.seen(1, 599.0)
    assert not seen.seen(1, 600.0)  # a period later they may hear from us again
    for key in (1, 2, 3):
        seen.note(key, 700.0)
    assert len(seen) == 2 and not seen.seen(1, 700.0) and seen.seen(3, 700.0)


def test_a_budget_allows_count_uses_per_window() -> None:
    budget = Budget(count=2, period=10.0)
    assert [budget.take(t) for t in (0.0, 1.0, 2.0, 9.9)] == [True, True, False, False]
    assert budget.take(10.0)  # the first use left the window


def test_in_flight_refuses_a_second_hold_until_the_first_ends() -> None:
    flights = InFlight()
    with flights.hold("a") as first:
        with flights.hold("a") as second, flights.hold("b") as other:
            assert (first, second, other) == (True, False, True)
        assert len(flights) == 1
    assert len(flights) == 0
    try:
        with flights.hold("a"):
            raise ValueError("the work failed")
    except ValueError:
        pass
    with flights.hold("a") as again:
        assert again  # released in finally


def test_lru_forgets_the_least_recently_used() -> None:
    files = Lru(cap=2)
    files.put("a", 1)
    files.put("b", 2)
    assert files.get("a") == 1  # now "b" is the least recently used
    files.put("c", 3)
    assert (files.get("a"), files.get("b"), files.get("c"), len(files)) == (1, None, 3, 2)


async def test_work_between_taps_waits_until_no_tap_waits_or_is_handled() -> None:
    processor, handlers = fair(per_user=1, taps=1, pause=0), Handlers()
    await asyncio.wait_for(processor.between_taps(60), 1)  # no tap: at once
    taps = [submit(processor, handlers, tap(n, n)) for n in (1, 2)]  # the second one waits
    chat = submit(processor, handlers, message(3, 3))  # a message is no tap: not waited for
    await settle()
    delivery = asyncio.create_task(processor.between_taps(60))
    handlers.finish(1)
    await settle()
    assert handlers.started == [1, 3, 2] and not delivery.done()  # tap 2 is handled now
    handlers.finish(2)
    await settle()
    assert delivery.done()
    handlers.finish(3)
    await asyncio.gather(*taps, chat, delivery)


async def test_work_between_taps_waits_out_the_pause_after_a_tap_not_after_a_quiet_spell() -> None:
    processor, handlers = fair(pause=0.2), Handlers()
    loop = asyncio.get_running_loop()
    started = loop.time()
    await processor.between_taps(60)  # no tap yet: at once
    assert loop.time() - started < 0.1
    answered = submit(processor, handlers, tap(1, 1))
    await settle()
    handlers.finish(1)
    await answered
    started = loop.time()
    await processor.between_taps(60)  # a tap just ended: the pause, in case more come
    assert loop.time() - started >= 0.2
    started = loop.time()
    await processor.between_taps(60)  # a pause since: at once
    assert loop.time() - started < 0.1


async def test_work_between_taps_goes_ahead_after_its_patience() -> None:
    processor, handlers = fair(pause=0), Handlers()
    steady = submit(processor, handlers, tap(1, 1))
    await settle()
    await asyncio.wait_for(processor.between_taps(0.01), 1)  # a tap is still in flight
    handlers.finish(1)
    await steady

"""bot/files/parsing.py: a parse runs in a limited worker, and its crash costs only that upload."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import time

import pytest

from bot.files.limits import NOT_A_SHEET
from bot.files.parsing import (
    MAX_RESULT_BYTES,
    PARSE_FAILED,
    PARSE_TIMEOUT,
    Limits,
    SheetParser,
    parse_isolated,
)
from bot.files.sheets import read_sheet
from bot.workers import WORKER_NICENESS
from core.drafting.tables import Row, Table
from core.errors import UnreadableSheet
from tests.helpers.xlsx import xlsx_bytes

GOOD = b"sku,quantity\nA-1,2\n"
# A worker that dies, hangs or is refused is replaced by a fresh process (half a second or
# more each): those tests are slow ones, which `make test-fast` leaves out and `make test` runs.
respawns = pytest.mark.slow


# Readers run in the worker, which imports this module by name to find them.
def _abort(data: bytes) -> Table:
    os.abort()  # what a Rust panic in calamine does to the process


def _allocate(data: bytes) -> Table:
    bytearray(2 * 1024 * 1024 * 1024)  # past the 1 GiB address-space limit
    return Table(())


def _spin(data: bytes) -> Table:
    while True:
        pass


def _hang(data: bytes) -> Table:
    time.sleep(3600)  # no CPU used: only the wall-clock timeout ends it
    return Table(())


def _crash(data: bytes) -> Table:
    raise RuntimeError("a bug in a reader")


def _lie_about_rows(data: bytes) -> Table:
    return Table([Row(1, ("sku",))])  # type: ignore[arg-type]  # a list, not a tuple


def _lie_about_cells(data: bytes) -> Table:
    return Table((Row(1, ("sku",)), Row(2, ("A-1", ["a", "list"]))))  # type: ignore[arg-type]


def _lie_about_formulas(data: bytes) -> Table:
    return Table((Row(1, ("sku",), frozenset({0})), Row(2, ("A-1",), frozenset({"B"}))))  # type: ignore[arg-type]


def _answer_too_much(data: bytes) -> Table:
    return Table((Row(1, ("x" * (MAX_RESULT_BYTES + 1),)),))


def _niceness(data: bytes) -> Table:
    return Table((Row(1, (str(os.nice(0)),)),))


def _refuse(data: bytes) -> Table:
    raise UnreadableSheet(NOT_A_SHEET)


def refusal(reader: object, limits: Limits | None = None) -> str:
    with pytest.raises(UnreadableSheet) as caught:
        parse_isolated(reader, GOOD, limits)  # type: ignore[arg-type]
    return str(caught.value)


def test_a_worker_reads_exactly_what_read_sheet_reads() -> None:
    workbook = xlsx_bytes([["sku", "quantity"], ["A-1", 2]], formulas={"C2": ("=1+1", 2)})
    for data in (GOOD, workbook):
        assert parse_isolated(read_sheet, data) == read_sheet(data)


@respawns
def test_the_readers_refusal_comes_back_as_its_sentence() -> None:
    assert refusal(_refuse) == NOT_A_SHEET


@respawns
@pytest.mark.parametrize(
    ("reader", "limits"),
    [
        (_abort, None),  # SIGABRT, as calamine's panics end
        (_allocate, None),  # MemoryError under RLIMIT_AS
        (_spin, Limits(cpu_seconds=1)),  # SIGXCPU from RLIMIT_CPU
        (_crash, None),  # any unexpected exception
        (_lie_about_rows, None),  # an answer that is not a table as a reader builds one
        (_lie_about_cells, None),  # a cell no reader makes (a list: pickle builds it freely)
        (_lie_about_formulas, None),  # a formula column that is not a column number
        (_answer_too_much, None),  # an answer over the size cap
    ],
)
def test_a_worker_that_dies_or_lies_costs_only_that_parse(reader, limits) -> None:
    before = set(multiprocessing.active_children())  # the PDF renderer's, say
    assert refusal(reader, limits) == PARSE_FAILED
    assert set(multiprocessing.active_children()) <= before  # joined, none left behind
    assert parse_isolated(read_sheet, GOOD) == read_sheet(GOOD)  # the next parse works


@respawns
def test_a_hanging_worker_is_killed_at_the_timeout() -> None:
    before, started = set(multiprocessing.active_children()), time.monotonic()
    assert refusal(_hang, Limits(timeout=0.5)) == PARSE_TIMEOUT
    assert time.monotonic() - started < 5
    assert set(multiprocessing.active_children()) <= before


@respawns
@pytest.mark.timed  # one turn of the loop within 50 ms: not beside another test's CPU work
def test_waiting_for_a_worker_leaves_the_event_loop_free() -> None:
    parser = SheetParser(limits=Limits(timeout=1.0))

    async def scenario() -> float:
        parse = asyncio.create_task(parser.run(_hang, GOOD))
        await asyncio.sleep(0.1)  # the parse is now waiting on its worker
        started = time.monotonic()
        await asyncio.sleep(0)  # one turn of the loop
        took = time.monotonic() - started
        with pytest.raises(UnreadableSheet, match=PARSE_TIMEOUT):
            await parse
        return took

    assert asyncio.run(scenario()) < 0.05


def test_the_parser_reads_sheets_and_terms() -> None:
    parser = SheetParser()
    assert asyncio.run(parser.sheet(GOOD)) == read_sheet(GOOD)
    terms = b"supplier_id,sku\nS-1,A-1\n"
    assert asyncio.run(parser.terms(terms)).rows[1].cells == ("S-1", "A-1")


@respawns
def test_a_worker_runs_behind_the_bot_for_the_cpu() -> None:
    """A burst of uploads being parsed takes the CPU the bot leaves, not the bot's share."""
    (row,) = parse_isolated(_niceness, GOOD).rows
    assert int(row.cells[0]) == min(19, os.nice(0) + WORKER_NICENESS)  # 19: the lowest

"""Typed requests kept between summary and Submit (store.typed), on SQLite and PostgreSQL:
the lines sealed, read back as they were, and the state moved once by compare-and-set."""

from __future__ import annotations

import asyncio
from datetime import date

import pytest
from sqlalchemy import select

from core.errors import InsertConflict
from core.purchasing.requests import RequestLine
from core.purchasing.summaries import SummaryState, TypedRequest
from store import schema
from tests.helpers.factories import REQUESTER, T0

LINES = (
    RequestLine("CBL-USBC-1M", 40),
    RequestLine("TEA-500G", 3, note="عید کے لیے 🙂", ship_to="liberty"),
    RequestLine("PB-20K", 5, supplier_id="SUP-KHI-02", needed_by=date(2026, 12, 20)),
)
REQUEST = TypedRequest("7c9e6679-7425-40de-944b-e07fc1f90ae7", REQUESTER, LINES, (1, 2, 4), T0)


async def test_a_typed_request_reads_back_as_kept_and_its_lines_are_sealed(store):
    async with store.begin() as tx:
        await tx.insert_typed_request(REQUEST)
    async with store.reading() as tx:
        assert await tx.typed_request(REQUEST.request_id) == REQUEST
        assert await tx.typed_request("no-such-request") is None
        t = schema.typed_requests
        sealed = (await tx.conn.execute(select(t.c.lines_encrypted))).scalar_one()
    assert b"TEA-500G" not in sealed and "عید".encode() not in sealed
    assert REQUEST.sheet().sha256 == (await _read(store)).sheet().sha256  # the same digest


async def _read(store) -> TypedRequest:
    async with store.reading() as tx:
        found = await tx.typed_request(REQUEST.request_id)
    assert found is not None
    return found


async def test_the_same_id_twice_is_a_conflict(store):
    async with store.begin() as tx:
        await tx.insert_typed_request(REQUEST)
    with pytest.raises(InsertConflict):
        async with store.begin() as tx:
            await tx.insert_typed_request(REQUEST)


async def test_a_state_moves_once_however_many_try_at_once(store):
    async with store.begin() as tx:
        await tx.insert_typed_request(REQUEST)

    async def submit() -> bool:
        async with store.begin() as tx:
            return await tx.settle_typed_request(
                REQUEST.request_id, SummaryState.OPEN, SummaryState.SUBMITTED, T0
            )

    assert sorted(await asyncio.gather(*(submit() for _ in range(4)))) == [False] * 3 + [True]
    async with store.begin() as tx:
        cancelled = await tx.settle_typed_request(
            REQUEST.request_id, SummaryState.OPEN, SummaryState.CANCELLED, T0
        )
    assert not cancelled  # submitted first: a Cancel after it changes nothing
    assert (await _read(store)).state is SummaryState.SUBMITTED


async def test_a_cancelled_request_keeps_no_lines(store):
    async with store.begin() as tx:
        await tx.insert_typed_request(REQUEST)
        assert await tx.settle_typed_request(
            REQUEST.request_id, SummaryState.OPEN, SummaryState.CANCELLED, T0
        )
    cancelled = await _read(store)
    assert (cancelled.state, cancelled.lines, cancelled.numbers) == (SummaryState.CANCELLED, (), ())

"""The real bot on the Bot API emulator, on a fresh database, for the bot benchmarks: the
settings, the supplier terms, the people, and the waits the benchmarks share."""

from __future__ import annotations

import asyncio
import io
import statistics
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import Any

import xlsxwriter  # type: ignore[import-untyped]  # no stubs or py.typed
from cryptography.fernet import Fernet

from bench.databases import Database, migrated
from bot.bootstrap import Running, running
from bot.clock import utcnow
from bot.config import Settings
from bot.dev.botapi import EmulatedUser, Emulator
from bot.files.sheets import read_csv_text
from core.approval.policies import Role
from core.purchasing import new_terms
from store.engine import make_engine
from store.sql import SqlStore

ADMIN = 9001  # the configuration's one admin (MANZOORI_ADMIN_IDS), there to receive alerts
REQUESTER = 1001
FIRST_APPROVER = 20_001  # approvers are numbered from here
SUPPLIER = "SUP-BENCH-01,Bench Bazaar,orders@bench.example"
# The long poll of the tests: a stop waits for the poll in flight, so short keeps teardown short.
LONG_POLL = 1.0
# Long enough for a 10,000-row sheet on a busy machine; a wait past it is a failure to report.
PATIENCE = 120.0


@asynccontextmanager
async def bot_on(
    db: Database, *, loops: bool = False, web: bool = False, **settings: Any
) -> AsyncIterator[tuple[Emulator, Running]]:
    """The application as `manzoori run` starts it (long polling) on a fresh `db`, against a
    started emulator, with `settings` over the bench's; the runners' passes are the
    benchmark's to drive, unless `loops`: then they run their own loops, as deployed; `web`
    serves the front door (a free `web_port` among the `settings`).
    Everything is stopped and disposed however the block ends, so benchmarks can follow one
    another."""
    await (await migrated(db)).dispose()
    data_key = Fernet.generate_key()
    emulator = Emulator().start()
    try:
        configured = Settings(
            **{
                "_env_file": None,  # pydantic-settings: this run reads no .env
                "database_url": db.url,
                "manzoori_secret_key": Fernet.generate_key().decode(),
                "manzoori_data_key": data_key.decode(),
                "manzoori_admin_ids": frozenset({ADMIN}),
                "telegram_bot_token": emulator.token,
                "telegram_api_url": f"http://127.0.0.1:{emulator.port}",
                **settings,
            }
        )
        emulator.user(ADMIN, "Admin", started=True)
        store = SqlStore(make_engine(db.url), data_key)
        try:
            async with running(configured, store, loops=loops, long_poll=LONG_POLL, web=web) as run:
                yield emulator, run
        finally:
            await store.close()
    finally:
        await asyncio.to_thread(emulator.stop)
    if emulator.internal_errors:  # an emulator bug would make every figure suspect
        raise RuntimeError(f"Bot API emulator bugs: {emulator.internal_errors}")


def skus(count: int) -> list[str]:
    """`count` distinct SKUs of the bench supplier."""
    return [f"SKU-{n:05d}" for n in range(count)]


async def import_terms(store: SqlStore, count: int) -> str:
    """Supplier terms with `count` SKUs of one supplier (10.00 PKR each), imported; their
    version."""
    lines = "".join(f"{SUPPLIER},{sku},Item {sku},10.00,,\n" for sku in skus(count))
    header = (
        "supplier_id,supplier_name,supplier_email,sku,description,unit_price_pkr,min_qty,max_qty\n"
    )
    table = read_csv_text((header + lines).encode())
    result = await new_terms.import_terms(store, table, utcnow(), "bench")
    assert result.created, "the bench terms were not imported"
    async with store.reading() as tx:
        version = await tx.terms_version()
    assert version is not None
    return version


async def people(
    emulator: Emulator, store: SqlStore, role: Role, ids: Iterable[int]
) -> list[EmulatedUser]:
    """These users granted `role` and known to have started the bot, in Telegram and here."""
    users, now = [], utcnow()
    async with store.begin() as tx:
        for user_id in ids:
            await tx.grant(user_id, role, "bench", now)
            await tx.met(user_id, f"U{user_id}", now, started=True)
            users.append(emulator.user(user_id, f"U{user_id}", started=True))
    return users


def approver_ids(count: int) -> range:
    """The ids of `count` approvers."""
    return range(FIRST_APPROVER, FIRST_APPROVER + count)


def csv_sheet(count: int, tag: str) -> bytes:
    """A restock sheet of `count` rows, one per SKU; `tag` in every note makes it unlike any
    other sheet (a repeat would return the earlier POs without any work)."""
    rows = "".join(f"{sku},1,{tag}\n" for sku in skus(count))
    return ("sku,quantity,notes\n" + rows).encode()


def xlsx_sheet(count: int, tag: str) -> bytes:
    """The same sheet as a workbook, written by XlsxWriter."""
    buffer = io.BytesIO()
    with xlsxwriter.Workbook(buffer, {"in_memory": True}) as workbook:
        sheet = workbook.add_worksheet("Order")
        sheet.write_row(0, 0, ["sku", "quantity", "notes"])
        for row, sku in enumerate(skus(count), start=1):
            sheet.write_row(row, 0, [sku, 1, tag])
    return buffer.getvalue()


async def deliver_all(run: Running) -> int:
    """Notice passes until one finds nothing: every owed card out; how many were claimed."""
    assert run.notices is not None
    total = 0
    while claimed := await run.notices.run_once():
        total += claimed
    return total


async def settled(run: Running) -> None:
    """Wait until the bot has finished handling the updates it took and the deliveries those
    started (a tap's handler edits the cards in a task named "deliver-<job id>")."""
    assert run.app is not None
    handling = f"Application:{run.app.bot.id}:process_concurrent_update"
    this = asyncio.current_task()

    def busy(task: asyncio.Task[Any]) -> bool:
        name = task.get_name()
        return task is not this and (name == handling or name.startswith("deliver-"))

    async with asyncio.timeout(PATIENCE):
        while pending := {task for task in asyncio.all_tasks() if busy(task)}:
            await asyncio.wait(pending)


def percentile(values: list[float], q: float) -> float:
    """The `q`-th percentile (0..100) by the nearest-rank method: a value that was measured."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))  # ceil(n·q/100), at least the first
    return ordered[int(rank) - 1]


def median(values: list[float]) -> float:
    """The median."""
    return statistics.median(values)

"""The Mini App on a slow phone: a 60-line PO's page opened from its card in Debian's Chromium
(`make browser`), at phone size, with Chromium's network emulation at 400 kbit/s each way and
400 ms latency, against the real bot's front door. Per open: seconds until every line is shown
(readable) and until Approve can be tapped (usable), and the bytes that crossed the network;
first on a fresh phone, then again from the same phone, its cache and its kept copy of the PO.
Its last row is the catalogue's (bench/catalogue_page.py): 5,000 SKUs, the first search result.
`python -m bench.miniapp_page` prints the figures alone."""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass
from typing import Any

from playwright.async_api import BrowserContext, expect

from bench import catalogue_page
from bench.bot_harness import bot_on, deliver_all, people
from bench.common import Context, Result
from bench.databases import Database, databases
from bench.report import render
from bot.clock import utcnow
from bot.dev.demo import free_port
from bot.files.sheets import read_csv_text
from bot.telegram.cards import REVIEW_TEXT
from core.approval.opening import open_job
from core.approval.policies import Role
from core.drafting.drafts import Draft, DraftLine
from core.drafting.intake import po_number
from core.jobs import notices
from core.jobs.jobs import NewJob
from core.purchasing import new_terms
from tests.helpers.browser import CHROMIUM, phone_context

SECTION = "Mini App on a slow phone"
LINES = 60
APPROVER = 20_001
# Chromium's emulated link: 400 kbit/s each way (bytes per second) and 400 ms added latency.
THROUGHPUT, LATENCY_MS = 400_000 / 8, 400
# The targets: seconds to readable and to usable, and KB, on a first open; seconds to
# readable from the phone's cache.
READABLE_S, USABLE_S, BYTES_KB, CACHED_S = 2.5, 3.0, 60.0, 1.0


@dataclass(frozen=True)
class Open:
    """One open of the page: seconds to every line shown, to Approve enabled, bytes received."""

    readable: float
    usable: float
    received: int


async def _po_with_card(run: Any, emulator: Any) -> str:
    """A PO of LINES lines waiting for the approver, its card delivered; the page's URL."""
    header = (
        "supplier_id,supplier_name,supplier_email,sku,description,unit_price_pkr,min_qty,max_qty\n"
    )
    rows = "".join(
        f"SUP-SLOW,Hall Road Traders,orders@hallroad.example,SKU-{n:03},Part number {n} "
        f"with a longer description,{500 + n},,\n"
        for n in range(1, LINES + 1)
    )
    imported = await new_terms.import_terms(
        run.store, read_csv_text((header + rows).encode()), utcnow(), "bench"
    )
    assert imported.created
    async with run.store.reading() as tx:
        version = await tx.terms_version()
    now = utcnow()
    year = now.astimezone(run.settings.tz).year
    async with run.store.begin() as tx:
        serial = await tx.next_po_serial(year)
    draft = Draft(
        po_number=po_number(year, serial),
        supplier_id="SUP-SLOW",
        supplier_name="Hall Road Traders",
        recipient_email="orders@hallroad.example",
        terms_version=version,
        lines=tuple(
            DraftLine(f"SKU-{n:03}", f"Part number {n} with a longer description", 10, 50_000 + n)
            for n in range(1, LINES + 1)
        ),
    )
    new = NewJob(id=str(uuid.uuid4()), requester_id=1001, input_ref="bench:miniapp")
    job = await open_job(run.store, new, draft, now, run.settings.rules())
    [approver] = await people(emulator, run.store, Role.APPROVER, [APPROVER])
    async with run.store.begin() as tx:
        await tx.insert_notice(notices.card_for(job, APPROVER, now))
    await deliver_all(run)
    card = next(m for m in approver.messages() if job.po_number in (m.text or ""))
    return approver.open_web_app(card, REVIEW_TEXT)


async def _open(phone: BrowserContext, url: str) -> Open:
    """Open `url` in a new tab on the throttled link; what it took."""
    page = await phone.new_page()
    cdp = await phone.new_cdp_session(page)
    received: list[int] = []
    cdp.on("Network.loadingFinished", lambda event: received.append(event["encodedDataLength"]))
    await cdp.send("Network.enable")
    await cdp.send(
        "Network.emulateNetworkConditions",
        {
            "offline": False,
            "latency": LATENCY_MS,
            "downloadThroughput": THROUGHPUT,
            "uploadThroughput": THROUGHPUT,
        },
    )
    started = time.monotonic()
    await page.goto(url, wait_until="commit")
    await expect(page.get_by_test_id("po-line")).to_have_count(LINES, timeout=30_000)
    readable = time.monotonic() - started
    await expect(page.get_by_test_id("approve")).to_be_enabled(timeout=30_000)
    usable = time.monotonic() - started
    await page.wait_for_load_state("networkidle")
    await page.close()
    return Open(readable, usable, sum(received))


async def run_page(db: Database) -> list[Result]:
    """Both rows on `db`: a first open, and an open from the phone's cache."""
    port = free_port()
    front: dict[str, Any] = {
        "web_port": port,
        "manzoori_public_url": f"http://127.0.0.1:{port}",
        "manzoori_webapp_script": "local",
    }
    async with bot_on(db, web=True, **front) as (emulator, run):
        url = await _po_with_card(run, emulator)
        async with phone_context() as phone:
            first = await _open(phone, url)
            again = await _open(phone, url)
    link = f"{THROUGHPUT * 8 / 1000:g} kbit/s, {LATENCY_MS} ms"
    return [
        Result(
            SECTION,
            f"{LINES}-line PO, first open, {db.label}",
            _figures(first),
            target=f"≤ {READABLE_S:g} s / ≤ {USABLE_S:g} s / ≤ {BYTES_KB:g} KB",
            met=first.readable <= READABLE_S
            and first.usable <= USABLE_S
            and first.received <= BYTES_KB * 1000,
            notes=f"Chromium at phone size, {link}",
        ),
        Result(
            SECTION,
            f"{LINES}-line PO, again from the phone's cache, {db.label}",
            _figures(again),
            target=f"readable ≤ {CACHED_S:g} s",
            met=again.readable <= CACHED_S,
            notes="drawn from the copy kept on the phone, then refreshed from the server",
        ),
    ]


def _figures(opened: Open) -> dict[str, str]:
    return {
        "readable s": f"{opened.readable:.2f}",
        "usable s": f"{opened.usable:.2f}",
        "KB received": f"{opened.received / 1000:.1f}",
    }


async def run(ctx: Context) -> list[Result]:
    """The section, on SQLite (the page's wait is the link's, not the database's)."""
    if not CHROMIUM.exists():
        raise SystemExit(f"bench: no Chromium at {CHROMIUM}: `make browser` installs it")
    [sqlite, *_] = databases(ctx.sqlite_dir, None, "miniapp")
    [other, *_] = databases(ctx.sqlite_dir, None, "catalogue")
    return await run_page(sqlite) + await catalogue_page.run_page(other)


if __name__ == "__main__":
    import tempfile

    async def _main() -> None:
        with tempfile.TemporaryDirectory() as directory:
            print(render(await run(Context(quick=True, sqlite_dir=directory, postgres_url=None))))

    asyncio.run(_main())

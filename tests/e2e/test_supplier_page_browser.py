"""The supplier's page in a real browser with JavaScript off (Debian's Chromium through
Playwright, at a cheap phone's 360×740), served by uvicorn on a real port: the PO read and
accepted with a later date, the page then saying so and a reload posting nothing again; Enter
in a box answering nothing; a proposal refused and corrected with what was typed kept; a
200-line PO that runs off no side of the phone.

MANZOORI_SCREENSHOTS=docs also writes the page before and after an answer to
docs/supplier-page.png and docs/supplier-answered.png (docs/suppliers.md)."""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

import pytest
from playwright.async_api import BrowserContext, Page, ViewportSize, async_playwright, expect

from bot.clock import utcnow
from bot.config import Settings
from bot.web.app import build_web, serving_web
from bot.web.health import Heartbeats
from bot.web.metrics import Metrics
from core.company.imports import import_company
from core.drafting.drafts import DraftLine
from core.jobs.answers import LineProposal, Reply
from store.sql import SqlStore
from tests.helpers import suppliers
from tests.helpers.bot import settings_for
from tests.helpers.browser import CHROMIUM
from tests.helpers.factories import APPROVER_A, APPROVER_B, make_draft
from tests.helpers.net import free_port

pytestmark = pytest.mark.slow  # a browser is a process
SCREENSHOTS = os.environ.get("MANZOORI_SCREENSHOTS")
REPO = Path(__file__).resolve().parents[2]
PO = "PO-2026-001"
# A cheap Android phone's CSS viewport, the smallest the page is made for.
CHEAP_PHONE = ViewportSize(width=360, height=740)
LEASE = timedelta(seconds=60)
ITEMS = [
    ("CBL-USBC-1M", "USB-C cable, 1 m, braided", 120, 45_000),
    ("CHG-65W-GAN", "65 W GaN charger, PK plug", 12, 650_000),
    ("PB-20K", "20,000 mAh power bank", 6, 899_900),
    ("SCR-GLASS-A15", "Screen glass A15", 300, 15_050),
    ("EAR-TWS-BLK", "Wireless earbuds, black", 24, 349_900),
    ("CBL-LTN-1M", "Lightning cable, 1 m", 60, 55_000),
    ("CAS-A15-CLR", "Clear case A15", 100, 25_000),
    ("HLD-CAR-MAG", "Magnetic car holder", 20, 120_000),
    ("SD-128GB", "microSD card 128 GB", 40, 280_000),
    ("ADP-20W-PD", "20 W USB-C PD adapter", 50, 180_000),
]


@pytest.fixture(name="no_script_phone")
async def no_script_phone_fixture() -> AsyncIterator[BrowserContext]:
    """A headless Chromium context the size of a cheap phone, with JavaScript off, as
    WhatsApp's in-app browser or a data saver may leave it."""
    if not CHROMIUM.exists():
        pytest.fail(f"no Chromium at {CHROMIUM}: `make browser` installs Debian's chromium")
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=str(CHROMIUM))
        try:
            context = await browser.new_context(
                viewport=CHEAP_PHONE,
                device_scale_factor=2,
                is_mobile=True,
                has_touch=True,
                java_script_enabled=False,
            )
            yield context
            await context.close()
        finally:
            await browser.close()


@dataclass
class Served:
    """The web front door on a real port, and the link a sent PO's e-mail carried."""

    store: SqlStore
    url: str
    due: date


async def serve(store: SqlStore, db_url: str, lines: tuple[DraftLine, ...]) -> tuple[Settings, str]:
    """Settings for a front door on a free loopback port, which is its public URL; and a PO of
    `lines` for the Liberty branch, approved and e-mailed, with the link its e-mail carried."""
    port = free_port()
    public = f"http://127.0.0.1:{port}"
    settings = settings_for(
        db_url, web_listen="127.0.0.1", web_port=port, manzoori_public_url=public
    )
    now = utcnow()
    sample = (REPO / "samples" / "company.toml").read_text(encoding="utf-8")
    company = await import_company(store, sample, now, "test")
    draft = make_draft(
        PO,
        lines=lines,
        delivery_date=(now + timedelta(days=14)).date(),
        payment_terms="30 days after delivery",
        company_version=company.version,
        branch_id="liberty",
    )
    async with store.begin() as tx:  # the names the PDF and the page sign it with
        await tx.met(APPROVER_A, "Ayesha Khan", now, started=True)
        await tx.met(APPROVER_B, "Bilal Ahmed", now, started=True)
    effect = await suppliers.sent(store, draft, now, settings.rules())
    links = settings.supplier_links()
    assert links is not None
    return settings, links.url(effect)


@pytest.fixture
async def served(store: SqlStore, db_url: str) -> AsyncIterator[Served]:
    """The ten-line PO's page, served."""
    lines = tuple(DraftLine(*item, gst_basis_points=1800) for item in ITEMS)
    settings, url = await serve(store, db_url, lines)
    app = build_web(settings, store, Heartbeats(), Metrics())
    async with serving_web(app, settings):
        yield Served(store, url, (utcnow() + timedelta(days=14)).date())


async def answers(store: SqlStore) -> list[object]:
    async with store.reading() as tx:
        job = await tx.job_by_po(PO)
        return list(await tx.supplier_answers(job.id))


async def fits_the_phone(page: Page) -> None:
    """Nothing runs off the phone's side: only the lines' table scrolls, inside its box."""
    assert await page.evaluate("document.documentElement.scrollWidth") <= CHEAP_PHONE["width"]
    boxes = page.locator("input:not([type=hidden]), textarea, button:not([hidden]), summary")
    right = "all => all.every(e => e.getBoundingClientRect().right <= 360)"
    assert await boxes.evaluate_all(right)


async def test_a_supplier_reads_the_po_and_accepts_it_with_a_later_date(served, no_script_phone):
    page = await no_script_phone.new_page()
    opened = await page.goto(served.url)
    assert opened is not None and opened.status == 200
    assert "<script" not in await opened.text()
    await expect(page.get_by_test_id("ack-status")).to_have_text("Awaiting your answer.")
    await expect(page.get_by_text("Lahore Electronics (Pvt) Ltd").first).to_be_visible()
    await expect(page.get_by_text("Liberty Market").first).to_be_visible()
    await expect(page.get_by_test_id("ack-line")).to_have_count(10)
    await fits_the_phone(page)
    table = page.locator(".scroll")
    assert await table.evaluate("e => e.scrollWidth > e.clientWidth")  # it scrolls in its box
    if SCREENSHOTS:
        await page.screenshot(path=str(REPO / SCREENSHOTS / "supplier-page.png"), full_page=True)
    later = served.due + timedelta(days=3)
    await page.get_by_test_id("ack-date").fill(later.isoformat())
    await page.get_by_test_id("ack-accept").click()
    status = page.get_by_test_id("ack-status")
    day = f"{later.day} {later:%b} {later.year}"
    await expect(status).to_have_text(re.compile(rf"^Accepted on .+ PKT — delivery by {day}\.$"))
    await expect(page.get_by_test_id("ack-accept")).to_have_count(0)
    assert page.url == served.url  # Post/Redirect/Get: the link itself
    await page.reload()  # a GET: nothing is posted again
    await expect(status).to_have_text(re.compile(r"^Accepted on "))
    [accepted] = await answers(served.store)
    assert accepted.reply is Reply.ACCEPT and accepted.delivery_date == later
    if SCREENSHOTS:
        await page.screenshot(path=str(REPO / SCREENSHOTS / "supplier-answered.png"))


async def test_enter_in_a_box_answers_nothing_only_a_button_does(served, no_script_phone):
    page = await no_script_phone.new_page()
    await page.goto(served.url)
    await page.get_by_text("Propose changes").click()  # a <details>: opens without script
    quantity = page.get_by_test_id("ack-line").nth(0).get_by_test_id("ack-qty")
    await quantity.fill("100")
    await quantity.press("Enter")  # the form's default button is disabled: no submission
    await page.get_by_test_id("ack-propose").click()
    await expect(page.get_by_test_id("ack-status")).to_have_text(
        re.compile(r"^Changes proposed on ")
    )
    [proposed] = await answers(served.store)  # the proposal alone, not an accept before it
    assert proposed.reply is Reply.PROPOSE
    assert proposed.lines == (LineProposal(1, quantity=100),)


async def test_a_refused_proposal_keeps_what_was_typed_and_can_be_corrected(
    served, no_script_phone
):
    page = await no_script_phone.new_page()
    await page.goto(served.url)
    await page.get_by_text("Propose changes").click()
    lines = page.get_by_test_id("ack-line")
    await lines.nth(1).get_by_test_id("ack-qty").fill("13")  # 12 were ordered
    await lines.nth(2).get_by_test_id("ack-price").fill("9,250.50")
    await page.get_by_test_id("ack-note").fill("New rate from the importer")
    await page.get_by_test_id("ack-propose").click()
    await expect(page.get_by_role("alert")).to_contain_text("Line 2: more than the 12 ordered")
    await expect(lines.nth(1).get_by_test_id("ack-qty")).to_have_value("13")  # all kept
    await expect(lines.nth(2).get_by_test_id("ack-price")).to_have_value("9,250.50")
    await expect(page.get_by_test_id("ack-note")).to_have_value("New rate from the importer")
    assert await answers(served.store) == []
    await lines.nth(1).get_by_test_id("ack-qty").fill("10")
    await page.get_by_test_id("ack-propose").click()
    await expect(page.get_by_test_id("ack-status")).to_have_text(
        re.compile(r"^Changes proposed on ")
    )
    await expect(page.get_by_text("unit price Rs 8,999.00 → Rs 9,250.50")).to_be_visible()
    [proposed] = await answers(served.store)
    assert proposed.lines == (
        LineProposal(2, quantity=10),
        LineProposal(3, unit_price_paisa=925_050),
    )


async def test_a_decline_asks_for_its_reason(served, no_script_phone):
    page = await no_script_phone.new_page()
    await page.goto(served.url)
    await page.get_by_text("Decline", exact=True).click()
    await page.get_by_test_id("ack-decline").click()
    await expect(page.get_by_role("alert")).to_have_text("Please say why you decline.")
    await page.get_by_test_id("ack-reason").fill("Out of stock till March")
    await page.get_by_test_id("ack-decline").click()
    await expect(page.get_by_test_id("ack-status")).to_have_text(
        re.compile(r"^Declined on .+\. Reason: Out of stock till March$")
    )


async def test_a_200_line_po_runs_off_no_side_of_the_phone(store, db_url, no_script_phone):
    lines = tuple(
        DraftLine(f"SKU-{n:03}", f"Item {n}, a description of ordinary length", 10, 125_050)
        for n in range(1, 201)
    )
    settings, url = await serve(store, db_url, lines)
    app = build_web(settings, store, Heartbeats(), Metrics())
    async with serving_web(app, settings):
        page = await no_script_phone.new_page()
        opened = await page.goto(url)
        assert opened is not None and len(await opened.body()) < 120_000
        await page.get_by_text("Propose changes").click()
        boxes = page.get_by_test_id("ack-line")
        await expect(boxes).to_have_count(200)
        await boxes.nth(199).scroll_into_view_if_needed()
        await expect(boxes.nth(199)).to_contain_text("SKU-200")
        await fits_the_phone(page)

"""The catalogue page in a real browser (Debian's Chromium through Playwright, at phone size)
against the real bot and the Bot API emulator: 5,000 SKUs searched on the phone, a cart
through to POs, approver cards and the requester's chat answer, a cart kept across a reload,
a cart submitted offline and sent once, "Order again", Urdu right to left, and a refusal for
someone who is not a requester.

MANZOORI_SCREENSHOTS=docs also writes the page in English and Urdu to docs/catalogue-en.png
and docs/catalogue-ur.png (docs/requester.md)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from playwright.async_api import BrowserContext, Page, expect

from bot.dev.botapi import webapps
from bot.files.sheets import read_csv_text
from bot.web.urls import catalogue_url
from core.purchasing import new_terms
from tests.helpers.bot import BotRun, delivered, deliveries_done, running_bot, said
from tests.helpers.browser import phone_fixture  # noqa: F401 - provides the `phone` fixture
from tests.helpers.catalogue import catalogue_terms, sku, with_catalogue
from tests.helpers.factories import APPROVER_A, REQUESTER, T0
from tests.helpers.net import free_port
from tests.helpers.urdu import english_runs

pytestmark = pytest.mark.slow  # a browser is a process
SCREENSHOTS = os.environ.get("MANZOORI_SCREENSHOTS")
REPO = Path(__file__).resolve().parents[2]
QUEUED = "Queued — not sent yet"
# How long one keystroke's search over 5,000 SKUs, and drawing its results, may take: a
# frame or two of a cheap phone; Chromium on this machine takes a few milliseconds.
SEARCH_MS = 250


@asynccontextmanager
async def catalogue_bot(botapi, db_url) -> AsyncIterator[BotRun]:
    """The bot with its web front door on a free loopback port, which is its public URL, and
    the page loading the local Telegram stand-in."""
    port = free_port()
    async with running_bot(
        botapi, db_url, web=True, web_port=port,
        manzoori_public_url=f"http://127.0.0.1:{port}", manzoori_webapp_script="local",
    ) as run:  # fmt: skip
        yield run


async def approver_ready(botapi, run):
    """Ali, who can be written to; the catalogue's policy puts him in the managers."""
    ali = botapi.user(APPROVER_A, "Ali", started=True)
    async with run.store.begin() as tx:
        await tx.met(APPROVER_A, "Ali", T0, started=True)
    return ali


async def opened_from_new(botapi, phone: BrowserContext, shown: int = 50) -> tuple[object, Page]:
    """Bilal sends /new and opens the catalogue from the button under the answer; `shown`
    offers are listed before any search."""
    bilal = botapi.user(REQUESTER, "Bilal")
    bilal.send_text("/new")
    prompt = await bilal.next_message()
    page = await phone.new_page()
    await page.goto(bilal.open_web_app(prompt, prompt.buttons[0][0].text))  # any language
    await expect(page.get_by_test_id("catalog-item")).to_have_count(shown)
    return bilal, page


async def search(page: Page, text: str) -> float:
    """Type `text` into the search as one input event; the milliseconds it took to search
    and draw the results."""
    return await page.evaluate(
        """(text) => {
            const box = document.querySelector('[data-testid="catalog-search"]');
            const start = performance.now();
            box.value = text;
            box.dispatchEvent(new Event("input"));
            return performance.now() - start;
        }""",
        text,
    )


async def add(page: Page, wanted: str) -> None:
    """Search for a SKU and add its one offer to the cart."""
    await page.get_by_test_id("catalog-search").fill(wanted.lower())
    item = page.get_by_test_id("catalog-item")
    await expect(item).to_have_count(1)
    await item.get_by_test_id("item-add").click()


async def jobs_of_bilal(run) -> list:
    async with run.store.reading() as tx:
        return await tx.jobs_of(REQUESTER, 50)


async def test_5000_skus_searched_on_the_phone_then_a_cart_becomes_pos_and_cards(
    botapi, db_url, store, phone
):
    async with catalogue_bot(botapi, db_url) as run:
        await with_catalogue(run.store, 5000)
        ali = await approver_ready(botapi, run)
        bilal, page = await opened_from_new(botapi, phone)
        menu = botapi.menu_button(REQUESTER)  # the menu button opens the same page
        assert menu["type"] == "web_app"
        assert menu["web_app"]["url"] == catalogue_url(run.settings.manzoori_public_url)
        took = await search(page, "cat-04471")
        items = page.get_by_test_id("catalog-item")
        await expect(items).to_have_count(1)
        await expect(items).to_contain_text("Audio item 4471")
        assert took < SEARCH_MS, took
        await search(page, "chargers model 77")  # words anywhere: category and description
        await expect(items.first).to_contain_text("Chargers item")
        await expect(items).to_have_count(50)  # drawn at most; the rest counted
        await expect(page.get_by_test_id("catalog-more")).to_have_text(
            "Showing 50 of 70: type more to narrow it down."
        )
        await add(page, sku(4471))
        await add(page, sku(2))
        await add(page, sku(5))
        lines = page.get_by_test_id("cart-line")
        await expect(lines).to_have_count(3)
        await expect(lines.nth(0).get_by_test_id("cart-qty")).to_have_value("2")  # its minimum
        await lines.nth(0).get_by_test_id("cart-qty").fill("6")
        await lines.nth(2).get_by_test_id("cart-remove").click()
        await expect(lines).to_have_count(2)
        await lines.nth(1).get_by_test_id("cart-note").fill("for the Eid display")
        await lines.nth(1).get_by_test_id("cart-note").blur()
        await page.get_by_test_id("cart-branch").select_option("hallroad")
        await page.get_by_test_id("cart-needed-by").fill("2099-01-31")
        totals = page.get_by_test_id("supplier-total")
        await expect(totals).to_have_count(2)  # one PO per supplier: SKU 4471 Hall, 2 Saddar
        await expect(totals.nth(0)).to_contain_text("Hall Road Traders · Total: Rs 27,429.00")
        await page.get_by_test_id("cart-submit").click()
        status = page.get_by_test_id("cart-status")
        await expect(status).to_contain_text(
            "Your catalogue request accepted; 2 purchase orders drafted and sent for approval"
        )
        await expect(lines).to_have_count(0)  # the cart is emptied once the POs exist
        answer = await said(bilal)  # the chat hears as for a sheet
        assert answer.startswith("Your catalogue request accepted; 2 purchase orders"), answer
        jobs = await jobs_of_bilal(run)
        assert len(jobs) == 2
        async with run.store.reading() as tx:
            drafts = [await tx.draft(job.id, 1) for job in jobs]
        assert {d.branch_id for d in drafts} == {"hallroad"}
        noted = [line for d in drafts for line in d.lines if line.sku == sku(2)]
        assert noted[0].note == "for the Eid display" and str(noted[0].needed_by) == "2099-01-31"
        await delivered(run)
        cards = [m for m in ali.messages() if "Approve" in str(m.buttons)]
        assert len(cards) == 2  # a card for each PO


async def test_a_cart_survives_a_reload_and_an_offline_submit_is_sent_once(
    botapi, db_url, store, phone
):
    async with catalogue_bot(botapi, db_url) as run:
        await with_catalogue(run.store, 200, budgets=False)
        await approver_ready(botapi, run)
        bilal, page = await opened_from_new(botapi, phone)
        await add(page, sku(7))
        await page.reload()
        lines = page.get_by_test_id("cart-line")
        await expect(lines).to_have_count(1)  # kept on the phone
        await expect(lines.get_by_test_id("cart-qty")).to_have_value("2")
        posts: list[str] = []
        page.on("request", lambda r: posts.append(r.url) if r.method == "POST" else None)
        await phone.set_offline(True)
        await page.get_by_test_id("cart-submit").click()
        status = page.get_by_test_id("cart-status")
        await expect(status).to_have_text(QUEUED)
        await asyncio.sleep(1.5)  # a retry or two, each failing offline
        await expect(status).to_have_text(QUEUED)
        assert await jobs_of_bilal(run) == []
        key = f"manzoori.request.{REQUESTER}"
        queued = await page.evaluate(
            f"JSON.stringify(JSON.parse(localStorage.getItem('{key}')).body)"
        )
        await phone.set_offline(False)
        await expect(status).to_contain_text("accepted; 1 purchase order", timeout=15_000)
        await deliveries_done(run)
        assert len(await jobs_of_bilal(run)) == 1
        assert await page.evaluate(f"localStorage.getItem('{key}')") is None
        await asyncio.sleep(2)  # no retry left over sends it again
        assert len(await jobs_of_bilal(run)) == 1
        await phone.route("**/api/catalogue", lambda route: route.abort())
        await page.reload()  # the server out of reach: the copy kept on the phone is shown
        await expect(page.get_by_test_id("catalog-item")).to_have_count(50)
        await expect(page.locator("#offline")).to_be_visible()
        await expect(lines).to_have_count(0)  # the cart that was sent is not kept
        await phone.unroute("**/api/catalogue")
        told = [m.text for m in bilal.messages() if "catalogue request" in m.text]
        assert len(told) == 1, told  # the chat is told once
        # The answer lost on the way back: the same cart comes again and is the same POs.
        sent = await page.evaluate(
            """async (body) => (await fetch("/api/requests", {method: "POST",
                headers: {"Authorization": `tma ${Telegram.WebApp.initData}`,
                          "Content-Type": "application/json"},
                body})).json()""",
            queued,
        )
        assert sent["status"] == "made" and sent["repeated"] is True
        await deliveries_done(run)
        assert len(await jobs_of_bilal(run)) == 1
        assert len([m for m in bilal.messages() if "catalogue request" in m.text]) == 1


async def test_order_again_loads_a_past_po_at_todays_prices_and_names_what_is_gone(
    botapi, db_url, store, phone
):
    async with catalogue_bot(botapi, db_url) as run:
        await with_catalogue(run.store, 40, budgets=False)
        await approver_ready(botapi, run)
        bilal = botapi.user(REQUESTER, "Bilal")
        bilal.send_document(
            f"sku,quantity,supplier_id,notes\n{sku(1)},4,SUP-HALL,top shelf\n"
            f"{sku(3)},6,SUP-HALL,\n".encode(),
            "restock.csv",
            "text/csv",
        )
        assert (await said(bilal)).startswith("restock.csv accepted; 1 purchase order")
        rows = catalogue_terms(40).decode().splitlines()
        kept = [rows[0]] + [r.replace(",101.50,", ",120.00,") for r in rows[1:] if sku(3) not in r]
        table = read_csv_text(("\n".join(kept) + "\n").encode())
        assert (await new_terms.import_terms(run.store, table, T0, "test")).created
        _, page = await opened_from_new(botapi, phone, 43)  # 44 offers, SKU 3's one gone
        await page.get_by_test_id("order-again").first.click()
        lines = page.get_by_test_id("cart-line")
        await expect(lines).to_have_count(1)
        await expect(lines.get_by_test_id("cart-qty")).to_have_value("4")
        await expect(lines.get_by_test_id("cart-note")).to_have_value("top shelf")
        await expect(lines.get_by_test_id("cart-amount")).to_have_text(
            "4 × Rs 120.00 = Rs 480.00"
        )  # today's price, not the PO's Rs 101.50
        status = page.get_by_test_id("cart-status")
        await expect(status).to_contain_text("is in the cart at today's prices.")
        await expect(status).to_contain_text(f"No longer offered, left out: {sku(3)}")


async def test_the_page_reads_right_to_left_in_urdu(botapi, db_url, store, phone):
    async with catalogue_bot(botapi, db_url) as run:
        await with_catalogue(run.store, 300)
        async with run.store.begin() as tx:
            await tx.met(REQUESTER, "Bilal", T0, started=True)
            await tx.set_language(REQUESTER, "ur", T0)
        bilal, urdu = await opened_from_new(botapi, phone)
        root = "[document.documentElement.dir, document.documentElement.lang]"
        assert await urdu.evaluate(root) == ["rtl", "ur"]
        for wanted, quantity in ((sku(12), "12"), (sku(31), "3")):
            await add(urdu, wanted)
            await urdu.get_by_test_id("cart-line").last.get_by_test_id("cart-qty").fill(quantity)
        await urdu.get_by_test_id("catalog-search").fill("")
        isolated = urdu.get_by_test_id("cart-line").first.locator("bdi[dir=ltr]")
        directions = "all => all.map(e => [e.textContent, getComputedStyle(e).direction])"
        assert await isolated.evaluate_all(directions) == [
            [sku(12), "ltr"], ["12 × Rs 112.50 = Rs 1,350.00", "ltr"],
        ]  # fmt: skip
        assert await urdu.evaluate("document.documentElement.scrollWidth") <= 390
        submit = await urdu.get_by_test_id("cart-submit").text_content()
        assert submit and not submit.isascii()  # said in Urdu
        await screenshot(urdu, "catalogue-ur.png")
        async with run.store.begin() as tx:
            await tx.set_language(REQUESTER, "en", T0)
        _, english = await opened_from_new(botapi, phone)  # the cart is the phone's
        # The page draws the phone's last copy (in Urdu) at once, then the fresh one.
        await expect(english.locator("html")).to_have_attribute("dir", "ltr")
        await expect(english.get_by_test_id("cart-line")).to_have_count(2)
        await screenshot(english, "catalogue-en.png")
        async with run.store.begin() as tx:  # the answers come in the sender's language
            await tx.set_language(REQUESTER, "ur", T0)
        await urdu.get_by_test_id("cart-submit").click()
        status = urdu.get_by_test_id("cart-status")
        await expect(status).to_contain_text("قبول ہو گئی")
        answer = await bilal.next_message()
        assert "قبول ہو گئی" in answer.text and english_runs(answer.text) == [], answer.text


async def screenshot(page: Page, name: str) -> None:
    """With MANZOORI_SCREENSHOTS, the page with a search typed and its cart, into that folder."""
    if not SCREENSHOTS:
        return
    await page.get_by_test_id("catalog-search").fill(sku(31).lower())
    await expect(page.get_by_test_id("catalog-item")).to_have_count(1)
    await page.get_by_test_id("cart-needed-by").fill("2026-12-24")
    await page.get_by_test_id("cart-needed-by").blur()
    await page.screenshot(path=str(REPO / SCREENSHOTS / name), full_page=True)


async def test_someone_who_is_not_a_requester_is_refused_on_the_page(botapi, db_url, store, phone):
    async with catalogue_bot(botapi, db_url) as run:
        await with_catalogue(run.store, 10, budgets=False)
        ali = await approver_ready(botapi, run)
        ali.send_text("/new")
        assert await said(ali) == "/new is for requesters and admins; you are neither."
        page = await phone.new_page()
        url = catalogue_url(run.settings.manzoori_public_url)
        await page.goto(webapps.launch_url(url, ali.web_app_data()))
        await expect(page.get_by_test_id("load-error")).to_have_text(
            "Only requesters and admins can order from the catalogue."
        )
        assert await jobs_of_bilal(run) == []

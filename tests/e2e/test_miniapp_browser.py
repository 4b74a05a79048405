"""The Mini App in a real browser (Debian's Chromium through Playwright, at phone size) against
the real bot, the Bot API emulator and the SMTP sink: the whole of a 200-line PO, an approval
with changes through to the one e-mail, initData that proves nothing, and decisions made
offline.

MANZOORI_SCREENSHOTS=docs also writes the page in English and Urdu to docs/miniapp-en.png and
docs/miniapp-ur.png (README, docs/approver.md)."""

from __future__ import annotations

import asyncio
import csv
import io
import os
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from urllib.parse import quote, urlencode

import pytest
from playwright.async_api import BrowserContext, Page, expect
from pypdf import PdfReader

from bot.clock import utcnow
from bot.files.sheets import read_csv_text
from bot.telegram.cards import APPROVE_TEXT, REVIEW_TEXT
from bot.telegram.notices import NoticeRunner
from core.approval import opening
from core.approval.opening import Revision
from core.jobs.jobs import Stamp
from core.jobs.states import State
from core.purchasing import new_terms
from tests.helpers.bot import (
    BotRun,
    answer,
    cards_out,
    deliveries_done,
    job_and_decisions,
    running_bot,
    said,
)
from tests.helpers.browser import phone_fixture  # noqa: F401 - provides the `phone` fixture
from tests.helpers.factories import APPROVER_A, APPROVER_B, REQUESTER, T0
from tests.helpers.miniapp import OTHER_BOT_TOKEN, forged, long_sheet, long_terms
from tests.helpers.net import free_port

pytestmark = pytest.mark.slow  # a browser is a process
SCREENSHOTS = os.environ.get("MANZOORI_SCREENSHOTS")
REPO = Path(__file__).resolve().parents[2]
QUEUED = "Queued — not sent yet"
# Ali's queue of decisions on the phone (miniapp.js keeps one per Telegram user).
ALI_QUEUE = f"manzoori.queue.{APPROVER_A}"


@asynccontextmanager
async def mini_app_bot(botapi, db_url, smtp_sink=None) -> AsyncIterator[BotRun]:
    """The bot with its web front door on a free loopback port, which is its public URL, and
    the page loading the local Telegram stand-in."""
    port = free_port()
    mail = {}
    if smtp_sink is not None:
        mail = dict(smtp_host=smtp_sink.host, smtp_port=smtp_sink.port, smtp_tls="none")
    async with running_bot(
        botapi, db_url, web=True, web_port=port,
        manzoori_public_url=f"http://127.0.0.1:{port}", manzoori_webapp_script="local", **mail,
    ) as run:  # fmt: skip
        yield run


async def long_po_out(botapi, run, lines: int):
    """A PO of `lines` lines from one supplier, its cards with Ali and Sana."""
    table = read_csv_text(long_terms(lines))
    assert (await new_terms.import_terms(run.store, table, T0, "test")).created
    ali = botapi.user(APPROVER_A, "Ali", started=True)
    sana = botapi.user(APPROVER_B, "Sana", started=True)
    async with run.store.begin() as tx:
        await tx.met(APPROVER_A, "Ali", T0, started=True)
        await tx.met(APPROVER_B, "Sana", T0, started=True)
    bilal = botapi.user(REQUESTER, "Bilal")
    bilal.send_document(long_sheet(lines), "restock.csv", "text/csv")
    assert (await said(bilal)).startswith("restock.csv accepted; 1 purchase order")
    assert await NoticeRunner(run.store, run.app.bot, run.settings).run_once() == 2
    return bilal, ali, await ali.next_message(), sana, await sana.next_message()


async def opened(phone: BrowserContext, url: str, lines: int) -> Page:
    """The Mini App opened at `url`, every line shown."""
    page = await phone.new_page()
    await page.goto(url)
    await expect(page.get_by_test_id("po-line")).to_have_count(lines)
    return page


async def decisions_now(run) -> int:
    return len((await job_and_decisions(run))[1])


async def test_a_200_line_po_shows_every_line_on_a_phone(botapi, db_url, store, phone):
    async with mini_app_bot(botapi, db_url) as run:
        _, ali, card, _, _ = await long_po_out(botapi, run, 200)
        assert card.button(REVIEW_TEXT).web_app.startswith(run.settings.manzoori_public_url)
        page = await opened(phone, ali.open_web_app(card, REVIEW_TEXT), 200)
        lines = page.get_by_test_id("po-line")
        for n in (0, 99, 199):  # the first, the middle and the last, each reached by scrolling
            await lines.nth(n).scroll_into_view_if_needed()
            await expect(lines.nth(n)).to_be_visible()
            await expect(lines.nth(n)).to_contain_text(f"SKU-{n + 1:03}")
        laid_out = (
            "all => all.every(e => e.offsetHeight > 0 && e.getBoundingClientRect().right <= 390)"
        )
        assert await lines.evaluate_all(laid_out)  # every line has its place on the phone
        width = await page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390  # nothing runs off the phone's side
        await page.get_by_test_id("search").fill("sku-150")
        await expect(page.locator('[data-testid="po-line"]:visible')).to_have_count(1)
        await expect(page.get_by_test_id("countdown")).to_contain_text(re.compile(r"\d+:\d\d:\d\d"))
        await expect(page.get_by_test_id("version")).to_contain_text("Draft v1 · ")


async def test_trim_and_drop_then_approve_with_changes_sends_the_trimmed_po_once(
    botapi, db_url, store, smtp_sink, phone
):
    async with mini_app_bot(botapi, db_url, smtp_sink) as run:
        bilal, ali, ali_card, sana, sana_card = await long_po_out(botapi, run, 200)
        page = await opened(phone, ali.open_web_app(ali_card, REVIEW_TEXT), 200)
        lines = page.get_by_test_id("po-line")
        await lines.nth(0).get_by_test_id("line-qty").fill("4")  # SKU-001: 10 → 4
        await lines.nth(6).get_by_test_id("line-drop").click()  # SKU-007 dropped
        await expect(page.get_by_test_id("approve")).to_be_disabled()  # changes: not as shown
        await page.get_by_test_id("approve-with-changes").click()
        status = page.get_by_test_id("decision-status")
        await expect(status).to_have_text("Needs a second approver. Your approval is recorded.")
        await expect(page.get_by_test_id("version")).to_contain_text("Draft v2 · ")
        await expect(lines).to_have_count(199)
        await deliveries_done(run)
        job, decided, _ = await job_and_decisions(run)
        assert (job.draft_version, job.state) == (2, State.AWAITING_APPROVAL)
        assert [(d.reviewer_id, d.draft_version) for d in decided] == [(APPROVER_A, 2)]
        old = botapi.message(APPROVER_B, sana_card.message_id)
        assert old.text.startswith("🔁 Superseded by v2")  # the old card, tapped no more
        assert botapi.message(APPROVER_A, ali_card.message_id).text.startswith("🔁 Superseded")
        new_card = await sana.next_message()
        assert "v2" in new_card.text and new_card.button(REVIEW_TEXT).web_app
        news = [m.text for m in bilal.messages()]
        assert any("Ali" in text and "SKU-007" in text for text in news), news
        assert smtp_sink.messages == []  # the policy wants a second approver
        assert await answer(botapi, sana.tap(new_card, APPROVE_TEXT)) == (
            "Approved — e-mailing the supplier."
        )
        await deliveries_done(run)
        assert await run.outbox.run_once() == 1
        assert await run.outbox.run_once() == 0
    [mail] = smtp_sink.messages
    pdf, attachment = mail.iter_attachments()  # the PO as a PDF, its lines as a CSV
    assert pdf.get_content_type() == "application/pdf"
    rows = list(csv.DictReader(io.StringIO(attachment.get_content())))
    quantities = {row["sku"]: row["quantity"] for row in rows}
    assert len(rows) == 199 and quantities["SKU-001"] == "4" and "SKU-007" not in quantities
    assert f":v2:{job.draft_hash[:12]}" in mail["Idempotency-Key"]


@pytest.mark.parametrize(
    "spoil",
    [
        lambda user, token: forged(user.web_app_data()),  # the hash altered
        lambda user, token: user.web_app_data(age=3601),  # older than the hour allowed
        lambda user, token: user.web_app_data(token=OTHER_BOT_TOKEN),  # another bot's
    ],
    ids=["forged", "too-old", "other-bot"],
)
async def test_init_data_that_proves_nothing_is_refused_and_changes_nothing(
    botapi, db_url, store, phone, spoil
):
    async with mini_app_bot(botapi, db_url) as run:
        ali, card, _, _ = await cards_out(botapi, run)
        good = ali.open_web_app(card, REVIEW_TEXT)
        bad = spoil(ali, botapi.token)
        page = await phone.new_page()
        fragment = urlencode({"tgWebAppData": bad}, quote_via=quote)  # as Telegram passes it
        await page.goto(f"{good.split('#', 1)[0]}#{fragment}")
        await expect(page.get_by_test_id("load-error")).to_contain_text("initData")
        job, _, _ = await job_and_decisions(run)
        status = await page.evaluate(
            """async ([po, data, body]) => (await fetch(`/api/po/${po}/decision`, {
                method: "POST", body: JSON.stringify(body),
                headers: {"Authorization": `tma ${data}`, "Content-Type": "application/json"},
            })).status""",
            [job.po_number, bad, {"id": "forged-1", "verdict": "approve",
                                  "draft_version": 1, "draft_hash": job.draft_hash}],
        )  # fmt: skip
        assert status == 401
        after, decided, effects = await job_and_decisions(run)
    assert (after.state, after.version, decided, effects) == (job.state, job.version, [], [])


async def test_an_approval_made_offline_is_queued_then_recorded_once(botapi, db_url, store, phone):
    async with mini_app_bot(botapi, db_url) as run:
        ali, card, _, _ = await cards_out(botapi, run)
        page = await opened(phone, ali.open_web_app(card, REVIEW_TEXT), 1)
        sent: list[str] = []
        page.on("request", lambda r: sent.append(r.post_data or "") if r.method == "POST" else None)
        await phone.set_offline(True)
        await page.get_by_test_id("approve").click()
        status = page.get_by_test_id("decision-status")
        await expect(status).to_have_text(QUEUED)
        await asyncio.sleep(0.5)
        await expect(status).to_have_text(QUEUED)  # still: never shown as approved
        assert await decisions_now(run) == 0
        await phone.set_offline(False)
        await expect(status).to_have_text("Approved — e-mailing the supplier.", timeout=10_000)
        await deliveries_done(run)
        assert await decisions_now(run) == 1
        # The page shows the PO as it is now: decided, nothing left to tap or change.
        await expect(page.get_by_test_id("refusal")).to_contain_text("Already approved by you at")
        await expect(page.get_by_test_id("approve")).to_be_disabled()
        await expect(page.get_by_test_id("line-qty")).to_be_disabled()
        # The answer lost on the way back: the same decision comes again from the queue.
        queued = await page.evaluate("(key) => localStorage.getItem(key)", ALI_QUEUE)
        assert queued == "[]"
        await page.evaluate(
            """([key, body]) => {
                const labels = {queued: "q", sign_in_again: "s"};
                const po = location.pathname.split("/").pop();
                localStorage.setItem(key,
                    JSON.stringify([{po, decision: JSON.parse(body), labels}]));
                document.querySelector('[data-testid="decision-status"]').textContent = "";
                window.dispatchEvent(new Event("online"));
            }""",
            [ALI_QUEUE, sent[-1]],
        )
        await expect(status).to_have_text("Approved — e-mailing the supplier.")  # as the first
        await page.wait_for_function("(key) => localStorage.getItem(key) === '[]'", arg=ALI_QUEUE)
        job, decided, effects = await job_and_decisions(run)
    assert [d.reviewer_id for d in decided] == [APPROVER_A]  # once, however often it came
    assert job.state is State.APPROVED and len(effects) == 1


async def test_a_decision_queued_on_a_shared_phone_goes_only_as_the_person_who_made_it(
    botapi, db_url, store, phone
):
    """Two Telegram accounts on one phone share the Mini App's storage: Ali's decision queued
    offline is not sent by Sana's page, with her initData, nor does her page draw his copy."""
    async with mini_app_bot(botapi, db_url) as run:
        _, ali, ali_card, sana, sana_card = await long_po_out(botapi, run, 2)
        page = await opened(phone, ali.open_web_app(ali_card, REVIEW_TEXT), 2)
        await phone.set_offline(True)
        await page.get_by_test_id("approve").click()
        await expect(page.get_by_test_id("decision-status")).to_have_text(QUEUED)
        await page.close()
        await phone.set_offline(False)
        posts: list[str] = []
        theirs = await phone.new_page()
        theirs.on("request", lambda r: posts.append(r.url) if r.method == "POST" else None)
        await theirs.goto(sana.open_web_app(sana_card, REVIEW_TEXT))
        await expect(theirs.get_by_test_id("approve")).to_be_enabled()  # the server's copy
        await theirs.evaluate("() => window.dispatchEvent(new Event('online'))")
        await asyncio.sleep(0.5)
        assert posts == [] and await decisions_now(run) == 0
        assert await theirs.evaluate("(key) => localStorage.getItem(key)", ALI_QUEUE) != "[]"
        await theirs.close()
        again = await opened(phone, ali.open_web_app(ali_card, REVIEW_TEXT), 2)
        await again.wait_for_function("(key) => localStorage.getItem(key) === '[]'", arg=ALI_QUEUE)
        await deliveries_done(run)
        _, decided, _ = await job_and_decisions(run)
    assert [d.reviewer_id for d in decided] == [APPROVER_A]


async def test_a_second_open_draws_the_kept_copy_at_once_but_acts_only_on_the_server_s(
    botapi, db_url, store, phone
):
    """Over a slow link the API's answer is most of the wait: the page draws the copy kept on
    the phone at once, its buttons off, and acts only on the server's copy, which here says
    the PO was decided meanwhile."""
    async with mini_app_bot(botapi, db_url) as run:
        ali, card, sana, sana_card = await cards_out(botapi, run)
        url = ali.open_web_app(card, REVIEW_TEXT)
        await (await opened(phone, url, 1)).close()  # the first open keeps its copy
        assert await answer(botapi, sana.tap(sana_card, APPROVE_TEXT)) == (
            "Approved — e-mailing the supplier."
        )
        held = asyncio.Event()

        async def slow_api(route):
            await held.wait()  # the server's copy on its way, for as long as the test says
            await route.continue_()

        await phone.route("**/api/po/*", slow_api)
        page = await phone.new_page()
        await page.goto(url)
        await expect(page.get_by_test_id("po-line")).to_have_count(1)  # drawn from the phone
        await expect(page.get_by_test_id("approve")).to_be_disabled()
        await expect(page.get_by_test_id("line-qty")).to_be_disabled()
        assert await page.get_attribute("#app", "aria-busy") == "true"
        held.set()
        await expect(page.get_by_test_id("refusal")).to_contain_text("Already decided")
        await expect(page.get_by_test_id("approve")).to_be_disabled()
        assert await page.get_attribute("#app", "aria-busy") == "false"
        assert await decisions_now(run) == 1


async def test_a_queued_decision_the_server_refuses_is_dropped_and_its_refusal_shown(
    botapi, db_url, store, phone
):
    """A 4xx is an answer for good: the page stops sending the decision and says why (issue 21:
    a body nested too deep got a 500, which the page retried for ever)."""
    async with mini_app_bot(botapi, db_url) as run:
        ali, card, _, _ = await cards_out(botapi, run)
        page = await opened(phone, ali.open_web_app(card, REVIEW_TEXT), 1)
        posts: list[int] = []
        page.on("response", lambda r: posts.append(r.status) if "/decision" in r.url else None)
        await page.evaluate(
            """(key) => {
                let changes = [{line: 1, quantity: 0}];
                for (let n = 0; n < 3000; n++) changes = [changes];  // the issue's 3 KB of [
                const po = location.pathname.split("/").pop();
                const decision = {id: "deep-1", verdict: "approve", draft_version: 1,
                                  draft_hash: "0".repeat(64), changes};
                localStorage.setItem(key, JSON.stringify(
                    [{po, decision, labels: {queued: "q", sign_in_again: "s"}}]));
                window.dispatchEvent(new Event("online"));
            }""",
            ALI_QUEUE,
        )
        status = page.get_by_test_id("decision-status")
        await expect(status).to_have_text("the body nests deeper than 16")
        await expect(status).to_have_class("refused")
        await page.wait_for_function("(key) => localStorage.getItem(key) === '[]'", arg=ALI_QUEUE)
        assert posts == [400]  # answered once, for good: nothing left to send again
        await expect(page.get_by_test_id("approve")).to_be_enabled()  # the PO still waits
        assert await decisions_now(run) == 0


async def test_a_rejection_from_the_page_needs_its_reason_and_reaches_the_requester(
    botapi, db_url, store, phone
):
    async with mini_app_bot(botapi, db_url) as run:
        ali, card, _, _ = await cards_out(botapi, run)
        page = await opened(phone, ali.open_web_app(card, REVIEW_TEXT), 1)
        status = page.get_by_test_id("decision-status")
        await page.get_by_test_id("reject").click()
        await expect(status).to_have_text("Write the reason first.")
        assert await decisions_now(run) == 0
        await page.get_by_test_id("reason").fill("Too dear this month")
        await page.get_by_test_id("reject").click()
        job, _, _ = await job_and_decisions(run)
        await expect(status).to_have_text(
            f"Rejected {job.po_number}. The requester is told your reason."
        )
        await deliveries_done(run)
        job, decided, effects = await job_and_decisions(run)
        bilal = botapi.user(REQUESTER, "Bilal")
        told = await bilal.next_message()
        assert botapi.message(APPROVER_A, card.message_id).text.startswith("❌ Rejected by Ali")
    assert job.state is State.REJECTED and effects == []
    assert [(d.verdict.value, d.reason) for d in decided] == [("reject", "Too dear this month")]
    assert "Too dear this month" in told.text


async def test_an_offline_approval_of_a_draft_changed_meanwhile_is_refused(
    botapi, db_url, store, phone
):
    async with mini_app_bot(botapi, db_url) as run:
        ali, card, _, _ = await cards_out(botapi, run)
        page = await opened(phone, ali.open_web_app(card, REVIEW_TEXT), 1)
        await phone.set_offline(True)
        await page.get_by_test_id("approve").click()
        status = page.get_by_test_id("decision-status")
        await expect(status).to_have_text(QUEUED)
        job, _, _ = await job_and_decisions(run)
        async with run.store.reading() as tx:
            draft = await tx.draft(job.id, 1)
        revision = Revision.noted(_halved(draft), "the requester sent fewer")
        await opening.revise(
            run.store, job.po_number, revision, Stamp("user:1001", utcnow()), run.settings.rules()
        )
        await phone.set_offline(False)
        await expect(status).to_have_text("This PO changed — review it again", timeout=10_000)
        job, decided, _ = await job_and_decisions(run)
    assert (job.draft_version, decided) == (2, [])


def _halved(draft):
    """The draft with every quantity halved (at least one)."""
    lines = tuple(replace(line, quantity=max(1, line.quantity // 2)) for line in draft.lines)
    return replace(draft, lines=lines)


async def test_the_page_reads_right_to_left_in_urdu(botapi, db_url, store, phone):
    async with mini_app_bot(botapi, db_url) as run:
        async with run.store.begin() as tx:
            await tx.met(APPROVER_B, "Sana", T0, started=True)
            await tx.set_language(APPROVER_B, "ur", T0)
        _, ali, ali_card, sana, sana_card = await long_po_out(botapi, run, 4)
        english = await opened(phone, ali.open_web_app(ali_card, REVIEW_TEXT), 4)
        urdu = await opened(phone, sana.open_web_app(sana_card, sana_card.buttons[1][1].text), 4)
        root = "[document.documentElement.dir, document.documentElement.lang]"
        assert await urdu.evaluate(root) == ["rtl", "ur"]
        assert await english.evaluate("document.documentElement.dir") == "ltr"
        isolated = urdu.get_by_test_id("po-line").first.locator("bdi")  # the SKU, the amounts
        directions = "all => all.map(e => [e.textContent, getComputedStyle(e).direction])"
        assert await isolated.evaluate_all(directions) == [
            ["SKU-001", "ltr"], ["10 × Rs 501.00 = Rs 5,010.00", "ltr"],
        ]  # fmt: skip
        assert await urdu.evaluate("document.documentElement.scrollWidth") <= 390
        for page in (english, urdu):  # a trimmed line and a dropped one, as an approver edits
            lines = page.get_by_test_id("po-line")
            await lines.nth(1).get_by_test_id("line-qty").fill("6")
            await lines.nth(3).get_by_test_id("line-drop").click()
            await expect(page.get_by_test_id("approve-with-changes")).to_be_enabled()
        await expect(english.get_by_test_id("total")).to_have_text("New total: Rs 13,052.00")
        if SCREENSHOTS:
            folder = REPO / SCREENSHOTS
            await english.screenshot(path=str(folder / "miniapp-en.png"), full_page=True)
            await urdu.screenshot(path=str(folder / "miniapp-ur.png"), full_page=True)


async def test_the_pdf_button_sends_the_draft_as_the_supplier_will_get_it(
    botapi, db_url, store, phone
):
    async with mini_app_bot(botapi, db_url) as run:
        _, ali, card, _, _ = await long_po_out(botapi, run, 12)
        page = await opened(phone, ali.open_web_app(card, REVIEW_TEXT), 12)
        await page.get_by_test_id("po-pdf").click()
        status = page.get_by_test_id("decision-status")
        await expect(status).to_have_text("The PDF is in your chat with the bot.")
        (sent,) = botapi.documents(APPROVER_A)
        assert sent.document.file_name.endswith("-v1.pdf")
        text = "\n".join(p.extract_text() for p in PdfReader(io.BytesIO(sent.document.data)).pages)
        assert "DRAFT" in text and "SKU-012" in text
        assert await decisions_now(run) == 0  # reading it decides nothing

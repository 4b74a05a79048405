"""The supplier's page through the ASGI application on a real store (SQLite and PostgreSQL),
with no bot token: a GET shows the PO and records nothing; an answer is a POST answered by a
303 back to the page, which then says what was recorded; the same POST again is one answer, a
different one a 409; a form that cannot be read is the page again with why (400), never a
500; a link forged, expired or of no order is a plain page; a called-off or replaced order
says so and offers nothing."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from urllib.parse import urlencode

import httpx
import pytest

from bot.clock import utcnow
from bot.config import Settings
from bot.web.app import build_web
from bot.web.health import Heartbeats
from bot.web.metrics import Metrics
from bot.web.supplier import MAX_BODY
from core.approval import decisions
from core.approval.decisions import Review
from core.approval.policies import Verdict
from core.drafting.drafts import DraftLine
from core.jobs.answers import LineProposal, Reply
from core.jobs.jobs import Stamp
from core.outbox import calling_off
from core.outbox.calling_off import CallOff
from core.suppliers.links import SupplierLink, link_for, sign_link
from store.sql import SqlStore
from tests.helpers import suppliers
from tests.helpers.bot import settings_for
from tests.helpers.factories import APPROVER_A, make_draft

PO = "PO-2026-001"
LEASE = timedelta(seconds=60)
FORM = {"Content-Type": "application/x-www-form-urlencoded"}
HIDDEN = re.compile(r'name="(version|hash)" value="([^"]*)"')


@dataclass
class Supplier:
    """The supplier's side: a browser without script, at the link of a sent PO."""

    web: httpx.AsyncClient
    settings: Settings
    store: SqlStore
    link: SupplierLink

    @property
    def url(self) -> str:
        return "/s/" + sign_link(self.settings.secret, self.link)

    shown: dict[str, str] | None = None

    async def post(self, **form: str) -> httpx.Response:
        """The form posted as the page sends it: the version and hash the page showed when
        first opened (a second POST is the same form sent again, from the back button)."""
        fields = urlencode({**await self.opened(), **form})
        return await self.web.post(self.url, content=fields, headers=FORM)

    async def opened(self) -> dict[str, str]:
        """The version and hash of the form, from the page as first opened."""
        if self.shown is None:
            self.shown = dict(HIDDEN.findall((await self.web.get(self.url)).text))
        return self.shown


@pytest.fixture
async def supplier(store: SqlStore, db_url: str) -> AsyncIterator[Supplier]:
    settings = settings_for(db_url)
    app = build_web(settings, store, Heartbeats(), Metrics())  # no bot token: still served
    link = await sent(store, settings)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://web") as web:
        yield Supplier(web, settings, store, link)


async def sent(store: SqlStore, settings: Settings) -> SupplierLink:
    """A PO approved and e-mailed just now, due in three weeks: the link its e-mail carried."""
    now = utcnow()
    draft = make_draft(PO, delivery_date=(now + timedelta(days=21)).date())
    effect = await suppliers.sent(store, draft, now, settings.rules())
    return link_for(effect, settings.manzoori_supplier_link_days)


async def recorded(store: SqlStore) -> tuple[object, ...]:
    """What the store holds of the order: its answers, its audit trail and its notices."""
    async with store.reading() as tx:
        job = await tx.job_by_po(PO)
        return (
            job.state,
            job.draft_version,
            tuple(await tx.supplier_answers(job.id)),
            tuple(e.action for e in await tx.audit(job.id)),
            len(await tx.notices_for(job.id)),
        )


def status_of(page: httpx.Response) -> str:
    found = re.search(r'data-testid="ack-status"[^>]*>([^<]*)<', page.text)
    assert found is not None, page.text[:300]
    return found[1]


def alert_of(page: httpx.Response) -> str:
    found = re.search(r'role="alert">([^<]*)<', page.text)
    assert found is not None, page.text[:300]
    return found[1]


async def test_the_page_shows_the_po_with_its_headers_and_a_get_records_nothing(supplier):
    before = await recorded(supplier.store)
    page = await supplier.web.get(supplier.url)
    again = await supplier.web.get(supplier.url)
    assert page.status_code == again.status_code == 200
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    assert page.headers["cache-control"] == "no-store"
    assert page.headers["referrer-policy"] == "no-referrer"
    assert page.headers["x-robots-tag"] == "noindex"
    assert page.headers["x-content-type-options"] == "nosniff"
    policy = page.headers["content-security-policy"]
    assert "script-src 'none'" in policy and "form-action 'self'" in policy
    assert PO in page.text and "Hall Road Electronics" in page.text and "CBL-USB-C-1M" in page.text
    assert status_of(page) == "Awaiting your answer."
    assert page.text.count('data-testid="ack-line"') == 2
    assert await recorded(supplier.store) == before  # a mail scanner's GET changes nothing


async def test_a_200_line_order_reaches_a_phone_in_under_30_kb(store, db_url):
    settings = settings_for(db_url)
    lines = tuple(
        DraftLine(f"SKU-{n:03}", f"Item {n}, a description of ordinary length", 10 + n, 125_050)
        for n in range(1, 201)
    )
    draft = make_draft(PO, lines=lines, delivery_date=(utcnow() + timedelta(days=21)).date())
    effect = await suppliers.sent(store, draft, utcnow(), settings.rules())
    url = "/s/" + sign_link(settings.secret, link_for(effect, 30))
    app = build_web(settings, store, Heartbeats(), Metrics())
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://web"
    ) as web:
        squeezed = await web.get(url, headers={"Accept-Encoding": "gzip"})
        plain = await web.get(url, headers={"Accept-Encoding": "identity"})
    assert squeezed.text == plain.text and squeezed.text.count('data-testid="ack-line"') == 200
    assert squeezed.headers["content-encoding"] == "gzip"
    wire = int(squeezed.headers["content-length"])
    assert wire < 30_000 < len(plain.content), (wire, len(plain.content))
    assert "content-encoding" not in plain.headers


async def test_the_style_sheet_is_versioned_and_kept_a_year(supplier):
    page = await supplier.web.get(supplier.url)
    [href] = re.findall(r'href="(static/[0-9a-f]+/supplier\.css)"', page.text)
    sheet = await supplier.web.get(f"/s/{href}")  # relative to /s/{token}
    assert sheet.status_code == 200 and sheet.headers["content-type"].startswith("text/css")
    assert sheet.headers["cache-control"] == "public, max-age=31536000, immutable"
    assert "button" in sheet.text
    assert (await supplier.web.get("/s/static/000000000000/supplier.css")).status_code == 404


async def test_an_accept_redirects_to_the_page_that_says_it_once_and_refuses_another(supplier):
    due = (utcnow() + timedelta(days=25)).date()
    posted = await supplier.post(answer="accept", date=due.isoformat())
    assert posted.status_code == 303
    assert posted.headers["location"] == supplier.url.rsplit("/", 1)[1]  # the page, relative
    page = await supplier.web.get(supplier.url)
    day = f"{due.day} {due:%b} {due.year}"
    assert re.fullmatch(rf"Accepted on .+ PKT — delivery by {day}\.", status_of(page))
    assert 'data-testid="ack-accept"' not in page.text and "<form" not in page.text
    after = await recorded(supplier.store)
    assert len(after[2]) == 1 and after[3].count("supplier_accept") == 1
    same = await supplier.post(answer="accept", date=due.isoformat())
    assert same.status_code == 303 and await recorded(supplier.store) == after  # one answer
    other = await supplier.post(answer="decline", reason="no stock")
    assert other.status_code == 409
    assert alert_of(other) == "This order was already accepted."
    assert status_of(other).startswith("Accepted on ")
    assert await recorded(supplier.store) == after


async def test_a_decline_needs_a_reason_and_keeps_what_was_typed_until_it_has_one(supplier):
    before = await recorded(supplier.store)
    refused = await supplier.post(answer="decline", reason="   ")
    assert refused.status_code == 400 and alert_of(refused) == "Please say why you decline."
    assert "<details open><summary>Decline" in refused.text
    assert await recorded(supplier.store) == before
    posted = await supplier.post(answer="decline", reason="Out of stock till March")
    assert posted.status_code == 303
    page = await supplier.web.get(supplier.url)
    assert re.fullmatch(r"Declined on .+ PKT\. Reason: Out of stock till March", status_of(page))


async def test_a_proposal_is_recorded_line_by_line_in_exact_paisa(supplier):
    posted = await supplier.post(
        answer="propose", note="new rate", **{"qty-1": "2", "price-2": "4,800.50", "qty-2": ""}
    )
    assert posted.status_code == 303
    _, _, answers, _, _ = await recorded(supplier.store)
    [answer] = answers
    assert answer.reply is Reply.PROPOSE and answer.note == "new rate"
    assert answer.lines == (LineProposal(1, quantity=2), LineProposal(2, unit_price_paisa=480_050))
    page = await supplier.web.get(supplier.url)
    assert status_of(page).startswith("Changes proposed on ")
    assert "quantity 4 → 2" in page.text and "Rs 4,500.00 → Rs 4,800.50" in page.text
    assert "<form" not in page.text


QTY_1 = 'name="qty-1" inputmode="numeric" value="{}"'
PRICE_2 = 'name="price-2" inputmode="decimal" value="{}"'


@pytest.mark.parametrize(
    ("form", "alert", "kept"),
    [
        # a quantity that is no whole number, kept in its box
        (
            {"answer": "propose", "qty-1": "2.5"},
            "Line 1: the quantity must be a whole number",
            QTY_1.format("2.5"),
        ),
        # a price that is no price
        (
            {"answer": "propose", "price-2": "abc"},
            "Line 2: the unit price must be in rupees",
            PRICE_2.format("abc"),
        ),
        # a date as people write it, not as the date field sends it
        (
            {"answer": "accept", "date": "31/12/2026"},
            "The delivery date must be a date",
            'value="31/12/2026"',
        ),
        # no button pressed: Enter in a field of a browser that ignores the disabled default
        ({"reason": "x"}, "Choose Accept, Decline or Propose changes.", ">x</textarea>"),
        # more than the PO ordered: the core's refusal
        ({"answer": "propose", "qty-1": "9"}, "Line 1: more than the 4 ordered", QTY_1.format(9)),
        # a line the PO does not have: no box to keep it in, the note kept
        ({"answer": "propose", "qty-7": "1", "note": "n"}, "No such line.", ">n</textarea>"),
        # a proposal that changes nothing
        ({"answer": "propose", "note": "hello"}, "Change a quantity, a price", ">hello</textarea>"),
    ],
)
async def test_an_answer_that_cannot_stand_is_the_page_again_with_why(supplier, form, alert, kept):
    before = await recorded(supplier.store)
    page = await supplier.post(**form)
    assert page.status_code == 400, page.text[:300]
    assert alert_of(page).startswith(alert)
    assert 'data-testid="ack-accept"' in page.text  # the answer is still open
    assert kept in page.text  # what the supplier typed, in its box
    assert await recorded(supplier.store) == before


@pytest.mark.parametrize(
    ("body", "status"),
    [
        (b"answer=accept&version=1&hash=%FF%FE", 400),  # not UTF-8
        (b"&".join([b"x=1"] * 3_000), 400),  # too many fields
        (b"answer=accept&version=99999999&hash=abc", 400),  # no version a page shows
        (b"x=" + b"1" * (MAX_BODY + 1), 413),  # too large to read to its end
    ],
)
async def test_a_body_no_page_sends_is_refused_plainly(supplier, body, status):
    before = await recorded(supplier.store)
    answer = await supplier.web.post(supplier.url, content=body, headers=FORM)
    assert answer.status_code == status
    assert "Traceback" not in answer.text and answer.headers["cache-control"] == "no-store"
    assert await recorded(supplier.store) == before


async def test_a_form_sent_another_way_is_refused(supplier):
    multipart = await supplier.web.post(supplier.url, files={"answer": b"accept"})
    assert multipart.status_code == 415


async def test_a_form_of_another_version_is_a_conflict(supplier):
    stale = await supplier.post(answer="accept", hash="000000000000")
    assert stale.status_code == 409
    assert alert_of(stale) == "This form is of another version of the order."


async def test_a_link_forged_expired_or_of_no_order_is_a_plain_page(supplier):
    token = supplier.url.rsplit("/", 1)[1]
    forged = token[:-2] + ("AA" if token[-2:] != "AA" else "BB")
    expired = replace(supplier.link, expires_at=datetime(2026, 1, 1, tzinfo=utcnow().tzinfo))
    nowhere = replace(supplier.link, job_id="00000000-0000-4000-8000-000000000000")
    cases = [
        (f"/s/{forged}", 404, "This link is not valid"),
        ("/s/" + "A" * 500, 404, "This link is not valid"),
        ("/s/" + sign_link(supplier.settings.secret, expired), 410, "This link has expired"),
        ("/s/" + sign_link(supplier.settings.secret, nowhere), 410, "no longer available"),
    ]
    for url, status, said in cases:
        for answer in (
            await supplier.web.get(url),
            await supplier.web.post(url, content="answer=accept", headers=FORM),
        ):
            assert answer.status_code == status, url
            assert said in answer.text and "<form" not in answer.text
            assert answer.headers["content-type"] == "text/html; charset=utf-8"
            assert "script-src 'none'" in answer.headers["content-security-policy"]


async def test_a_called_off_order_says_so_and_takes_no_answer(supplier):
    await supplier.opened()  # the supplier had the page open when the buyer called it off
    await calling_off.call_off(
        supplier.store,
        CallOff(PO, "bought elsewhere", None),
        frozenset(),
        Stamp("operator", utcnow()),
    )
    page = await supplier.web.get(supplier.url)
    assert status_of(page) == "This order was cancelled. There is nothing to answer."
    assert "<form" not in page.text and "<a " not in page.text and "CBL-USB-C-1M" not in page.text
    refused = await supplier.post(answer="accept")
    assert refused.status_code == 409 and alert_of(refused) == "This order was cancelled."


async def test_a_version_replaced_by_an_approved_proposal_says_so(supplier):
    assert (await supplier.post(answer="propose", **{"qty-1": "2"})).status_code == 303
    async with supplier.store.reading() as tx:
        job = await tx.job_by_po(PO)
    review = Review(PO, APPROVER_A, Verdict.APPROVE, job.draft_version, job.draft_hash)
    await decisions.decide(supplier.store, review, utcnow(), supplier.settings.rules())
    page = await supplier.web.get(supplier.url)
    assert status_of(page).startswith("This order was replaced by version 2")
    assert "<form" not in page.text and "<a " not in page.text


async def test_an_unforeseen_failure_is_a_plain_page_that_says_nothing_of_it(supplier, monkeypatch):
    async def broken(*args: object) -> None:
        raise RuntimeError("the database went away")

    monkeypatch.setattr("core.suppliers.pages.open_page", broken)
    page = await supplier.web.get(supplier.url)
    assert page.status_code == 500 and "Please try again in a few minutes." in page.text
    assert "RuntimeError" not in page.text and "database" not in page.text
    assert "script-src 'none'" in page.headers["content-security-policy"]

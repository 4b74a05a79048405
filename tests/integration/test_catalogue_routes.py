"""The catalogue's routes through the ASGI application on a real store (SQLite and
PostgreSQL): the page, the catalogue a requester reads (offers, branches, budgets, recent POs),
a cart submitted as a sheet (POs, problems by item, the same cart twice), and every bad input
answered with a clear 4xx, never a 500."""

from __future__ import annotations

import asyncio
import gzip
import json
import re
import threading
from functools import partial

import httpx
import pytest

from bot.telegram.app import build_application
from bot.web.app import build_web
from bot.web.health import Heartbeats
from bot.web.metrics import Metrics
from core.approval.approval_policy import import_policy
from core.drafting.sheets import MAX_DATA_ROWS
from tests.helpers.bot import ADMIN
from tests.helpers.catalogue import POLICY, cart, price_paisa, sku, with_catalogue
from tests.helpers.factories import APPROVER_A, OUTSIDER, REQUESTER, T0
from tests.helpers.miniapp import (
    TOKEN,
    forged,
    init_data,
    miniapp_client,  # noqa: F401 - provides the `web` fixture
    tma,
)
from tests.helpers.miniapp import miniapp_settings as settings_for

JSON = {"Content-Type": "application/json"}


def as_user(user_id: int) -> dict[str, str]:
    return tma(init_data(TOKEN, user_id, "Bilal"))


async def post(web: httpx.AsyncClient, body: object, user_id: int = REQUESTER) -> httpx.Response:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return await web.post("/api/requests", content=content, headers={**as_user(user_id), **JSON})


async def test_the_page_is_a_shell_of_versioned_assets_under_a_strict_policy(web):
    page = await web.get("/app/new")
    assert page.status_code == 200 and page.headers["cache-control"] == "no-cache"
    assert "'unsafe-inline'" not in page.headers["content-security-policy"]
    scripts = re.findall(r"<script([^>]*)>(.*?)</script>", page.text, re.S)
    assert scripts and all('src="' in attrs and not body.strip() for attrs, body in scripts)
    [script] = re.findall(r'src="(/app/static/[0-9a-f]{12}/catalogue\.js)"', page.text)
    asset = await web.get(script)
    assert asset.status_code == 200 and "immutable" in asset.headers["cache-control"]
    [common] = re.findall(r'src="(/app/static/[0-9a-f]{12}/common\.js)"', page.text)
    assert page.text.index(common) < page.text.index(script)  # its helpers first
    shared = await web.get(common)
    assert shared.status_code == 200 and "immutable" in shared.headers["cache-control"]


async def test_a_requester_reads_offers_branches_budgets_compact_and_gzipped(web, store):
    await with_catalogue(store, 300)
    answer = await web.get(
        "/api/catalogue", headers={**as_user(REQUESTER), "Accept-Encoding": "gzip"}
    )
    assert answer.status_code == 200
    assert answer.headers["cache-control"] == "no-store"
    assert answer.headers["content-encoding"] == "gzip"
    body = answer.json()
    assert body["suppliers"] == [
        ["SUP-HALL", "Hall Road Traders"],
        ["SUP-SADDAR", "Saddar Wholesale"],
    ]
    assert len(body["items"]) == 330  # every tenth SKU from both suppliers
    first = body["items"][0]
    assert first == [
        sku(1),
        "Chargers item 1 model 7",
        "chargers",
        0,
        price_paisa(1),
        2,
        500,
        1,
        1800,
    ]
    assert body["branches"] == [["liberty", "Liberty Market"], ["hallroad", "Hall Road"]]
    assert body["home"] == "liberty"
    assert body["budgets"] == [
        ["accessories", 100_000_000, 100_000_000],
        ["chargers", 60_000_000, 60_000_000],
    ]
    assert body["recent"] == [] and body["dir"] == "ltr"
    assert body["labels"]["budget_line"] == "{category}: {left} left of {budget}"


async def test_a_cart_becomes_pos_per_supplier_and_the_same_cart_again_is_the_same_pos(web, store):
    await with_catalogue(store, 40)
    sent = cart((sku(1), "SUP-HALL", 4), (sku(2), "SUP-SADDAR", 3), branch="hallroad",
                needed_by="2099-01-31")  # fmt: skip
    first = await post(web, sent)
    assert first.status_code == 200, first.text
    made = first.json()
    assert made["status"] == "made" and not made["repeated"]
    assert [o["supplier"] for o in made["orders"]] == ["Hall Road Traders", "Saddar Wholesale"]
    assert made["message"].startswith("Your catalogue request accepted; 2 purchase orders")
    again = (await post(web, sent)).json()
    assert again["repeated"] and [o["po"] for o in again["orders"]] == [
        o["po"] for o in made["orders"]
    ]
    async with store.reading() as tx:
        job = await tx.job_by_po(made["orders"][0]["po"])
        draft = await tx.draft(job.id, 1)
    assert (draft.branch_id, [(line.sku, line.quantity) for line in draft.lines]) == (
        "hallroad", [(sku(1), 4)],
    )  # fmt: skip
    recent = (await web.get("/api/catalogue", headers=as_user(REQUESTER))).json()["recent"]
    assert {po["po"] for po in recent} == {o["po"] for o in made["orders"]}
    assert [sku(2), "SUP-SADDAR", 3, ""] in [line for po in recent for line in po["lines"]]


async def test_problems_come_back_named_by_the_cart_s_items(web, store):
    await with_catalogue(store, 40)
    sent = cart((sku(1), "SUP-HALL", 0), ("NOPE-1", None, 3), (sku(3), "SUP-NOBODY", 2))
    answer = await post(web, sent)
    assert answer.status_code == 422
    body = answer.json()
    assert (
        body["message"] == "Your catalogue request: not accepted; nothing was created. Please fix:"
    )
    problems = {(p["line"], p["sku"]) for p in body["problems"]}
    assert problems == {(1, sku(1)), (2, "NOPE-1"), (3, sku(3))}
    assert all(p["text"] and not p["text"].startswith("Line") for p in body["problems"])
    async with store.reading() as tx:
        assert await tx.jobs_of(REQUESTER, 10) == []


@pytest.mark.parametrize(
    ("user_id", "route", "status"),
    [
        (APPROVER_A, "/api/catalogue", 403),  # an approver orders nothing
        (APPROVER_A, "/api/requests", 403),
        (OUTSIDER, "/api/catalogue", 403),  # not registered at all
        (ADMIN, "/api/catalogue", 200),  # an admin may read it
        (ADMIN, "/api/requests", 200),  # and order from it (MANZOORI_ADMIN_IDS)
    ],
)
async def test_only_requesters_submit_and_others_are_told_why(web, store, user_id, route, status):
    await with_catalogue(store, 10, budgets=False)
    if route == "/api/catalogue":
        answer = await web.get(route, headers=as_user(user_id))
    else:
        answer = await post(web, cart((sku(1), None, 2)), user_id)
    assert answer.status_code == status
    if status == 403:
        said = answer.json()
        assert (said.get("error") or said.get("message")).startswith(("Only requesters", "You are"))
    elif route == "/api/requests":
        async with store.reading() as tx:
            [job] = await tx.jobs_of(user_id, 10)
        assert job.requester_id == user_id and answer.json()["orders"][0]["po"] == job.po_number


@pytest.mark.parametrize(
    ("body", "status", "said"),
    [
        (b"{not json", 400, "not JSON"),
        (b"\xff\xfe", 400, "not UTF-8"),
        (b"[" * 100 + b"]" * 100, 400, "nests deeper"),
        (b"[]", 400, "not a JSON object"),
        ({"id": "short", "lines": []}, 400, "id must be"),
        (cart(), 400, "at least one line"),
        (cart(("CAT-00001", None, -1)), 400, "quantity must be"),
        (cart(("CAT-00001", None, 2.5)), 400, "quantity must be"),
        (cart(("CAT 1", None, 2)), 400, "sku must be"),
        (cart(("CAT-00001", None, 2), branch="Not A Branch"), 400, "branch must be"),
        (cart(("CAT-00001", None, 2), needed_by="31/12/2026"), 400, "needed_by must be"),
        ({**cart(), "lines": [{"sku": "A", "quantity": 1, "extra": 1}]}, 400, "line 1 must be"),
        (cart(*[("CAT-00001", None, 1)] * (MAX_DATA_ROWS + 1)), 400, "at most 10,000 lines"),
        (b'{"id": "' + b"x" * 6_000_000 + b'"}', 413, "cart too large"),
    ],
    ids=["not-json", "not-utf8", "too-deep", "not-object", "bad-id", "no-lines", "negative",
         "fraction", "bad-sku", "bad-branch", "bad-date", "extra-key", "too-many", "huge"],
)  # fmt: skip
async def test_bad_input_is_a_clear_4xx_and_creates_nothing(web, store, body, status, said):
    answer = await post(web, body)
    assert answer.status_code == status, answer.text
    reply = answer.json()
    assert said in (reply.get("message") or reply.get("error"))
    async with store.reading() as tx:
        assert await tx.jobs_of(REQUESTER, 10) == []


async def test_a_second_cart_while_the_first_is_checked_is_busy_then_goes_through(store, db_url):
    """A person has one sheet or cart checked at a time (the bot's guards.sheets): a second
    cart while the first is in the intake is a 429 that stores nothing, and goes through once
    the first is answered."""
    await with_catalogue(store, 40)
    settings = settings_for(db_url)
    telegram = build_application(settings, store)  # never started: its Deps are what counts
    deps = telegram.bot_data["deps"]
    app = build_web(settings, store, Heartbeats(), Metrics(), telegram)
    # The first cart's checking waits its turn on the bot's one CPU thread, which another
    # person's sheet holds until `checked` is set: the first cart is in the intake till then.
    checked = threading.Event()
    ahead = deps.offload(partial(checked.wait, 30))
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://web"
        ) as web:
            first = asyncio.create_task(post(web, cart((sku(1), "SUP-HALL", 4))))
            for _ in range(500):  # the first cart takes the requester's slot
                if len(deps.guards.sheets) or first.done():
                    break
                await asyncio.sleep(0.01)
            assert not first.done() and len(deps.guards.sheets) == 1
            second = cart((sku(2), "SUP-SADDAR", 3))
            busy = await asyncio.wait_for(post(web, second), 10)  # not queued behind the first
            assert busy.status_code == 429, busy.text
            assert busy.json() == {
                "status": "busy",
                "message": "Your previous request is still being checked; "
                "this one is sent again shortly.",
            }
            async with store.reading() as tx:
                assert await tx.jobs_of(REQUESTER, 10) == []
            checked.set()
            await ahead
            made = await asyncio.wait_for(first, 30)
            assert made.status_code == 200, made.text
            assert len(deps.guards.sheets) == 0  # the slot is free again
            again = await post(web, second)
    finally:
        checked.set()
    assert again.status_code == 200, again.text
    assert again.json()["status"] == "made" and not again.json()["repeated"]
    [po] = again.json()["orders"]
    async with store.reading() as tx:
        jobs = await tx.jobs_of(REQUESTER, 10)
        job = await tx.job_by_po(po["po"])
        draft = await tx.draft(job.id, 1)
    assert len(jobs) == 2  # the first cart's PO and the second's, nothing of the refusal
    assert [(line.sku, line.quantity) for line in draft.lines] == [(sku(2), 3)]


async def test_wrong_type_and_no_init_data_are_refused(web):
    text = await web.post("/api/requests", content=b"{}", headers=as_user(REQUESTER))
    assert text.status_code == 415
    bad = forged(init_data(TOKEN, REQUESTER))
    refused = await web.post("/api/requests", content=b"{}", headers={**tma(bad), **JSON})
    assert refused.status_code == 401
    assert (await web.get("/api/catalogue")).status_code == 401


async def test_a_catalogue_of_5000_skus_is_small_on_the_wire(web, store):
    await with_catalogue(store, 5000, company=False, budgets=False)
    answer = await web.get(
        "/api/catalogue", headers={**as_user(REQUESTER), "Accept-Encoding": "gzip"}
    )
    assert len(answer.json()["items"]) == 5500
    wire = len(gzip.compress(answer.content))  # httpx has unzipped it; about what was sent
    assert wire < 150_000, wire


async def test_a_hard_budget_refuses_the_whole_cart_with_its_figures(web, store):
    await with_catalogue(store, 20)
    hard = POLICY.replace(
        'mode = "soft"\nover_budget_stage = { group = "managers" }', 'mode = "hard"'
    )
    hard = hard.replace("chargers = 600_000", "chargers = 100")
    assert (await import_policy(store, hard, T0, "cli:test")).created
    answer = await post(web, cart((sku(1), "SUP-HALL", 5)))  # a charger: Rs 595.28 with GST
    assert answer.status_code == 422
    [problem] = answer.json()["problems"]
    assert (problem["line"], problem["sku"]) == (None, None)  # the whole cart, not a line
    assert problem["text"].startswith("Over the ") and "chargers" in problem["text"]
    budgets = (await web.get("/api/catalogue", headers=as_user(REQUESTER))).json()["budgets"]
    assert ["chargers", 10_000, 10_000] in budgets


async def test_before_any_terms_the_catalogue_is_empty_and_says_why(web):
    body = (await web.get("/api/catalogue", headers=as_user(REQUESTER))).json()
    assert (body["items"], body["suppliers"], body["branches"], body["home"]) == ([], [], [], None)
    assert body["terms"] is None and body["labels"]["no_terms"].startswith("No supplier terms")
    refused = await post(web, cart(("CAT-00001", None, 2)))
    assert refused.status_code == 422  # the sheet's own problem: nothing can be priced
    assert refused.json()["problems"][0]["line"] is None

"""The Mini App's routes through the ASGI application on a real store (SQLite and
PostgreSQL): the page and its assets with their headers, initData on every API call, the view
in the viewer's language, and decisions through the same use cases as a tap."""

from __future__ import annotations

import json
import re
import uuid
from datetime import timedelta

import httpx
import pytest

from bot.clock import utcnow
from bot.web.app import build_web
from bot.web.health import Heartbeats
from bot.web.metrics import Metrics
from core.approval import decisions, opening
from core.approval.decisions import Review
from core.approval.opening import Revision
from core.approval.policies import Role, Verdict
from core.drafting.drafts import draft_hash
from core.jobs.answers import Reply, SupplierReply
from core.jobs.jobs import Job, Stamp
from core.jobs.states import State
from core.suppliers import pages
from core.suppliers.links import link_for
from store.engine import make_engine
from store.sql import SqlStore
from tests.helpers import suppliers
from tests.helpers.factories import APPROVER_A, APPROVER_B, OUTSIDER, REQUESTER, make_draft, new_job
from tests.helpers.miniapp import (
    OTHER_BOT_TOKEN,
    TOKEN,
    forged,
    init_data,
    miniapp_client,  # noqa: F401 - provides the `web` fixture
    tma,
)
from tests.helpers.miniapp import miniapp_settings as settings_for
from tests.helpers.store import DATA_KEY


async def opened(store: SqlStore) -> Job:
    """A two-line PO from the requester, waiting for one approval, opened now."""
    settings = settings_for("sqlite+aiosqlite:///unused.db")
    return await opening.open_job(store, new_job(), make_draft(), utcnow(), settings.rules())


def decision(job: Job, **more: object) -> dict[str, object]:
    return {
        "id": str(uuid.uuid4()),
        "verdict": "approve",
        "draft_version": job.draft_version,
        "draft_hash": job.draft_hash,
        "device_time": "2026-12-02T06:00:00.000Z",
        **more,
    }


async def decisions_of(store: SqlStore, job: Job) -> list[object]:
    async with store.reading() as tx:
        return list(await tx.decisions(job.id))


async def test_the_page_is_a_shell_with_a_strict_policy_and_versioned_assets(web):
    page = await web.get("/app/po/PO-2026-001")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert page.headers["cache-control"] == "no-cache"
    csp = page.headers["content-security-policy"]
    assert "default-src 'self'" in csp and "script-src 'self' https://telegram.org;" in csp
    assert "'unsafe-inline'" not in csp
    assert page.headers["x-content-type-options"] == "nosniff"
    assert page.headers["referrer-policy"] == "no-referrer"
    scripts = re.findall(r"<script([^>]*)>(.*?)</script>", page.text, re.S)
    assert scripts and all('src="' in attrs and not body.strip() for attrs, body in scripts)
    assert 'src="https://telegram.org/js/telegram-web-app.js"' in page.text  # production's
    [script] = re.findall(r'src="(/app/static/[0-9a-f]{12}/miniapp\.js)"', page.text)
    asset = await web.get(script)
    assert asset.status_code == 200
    assert asset.headers["cache-control"] == "public, max-age=31536000, immutable"
    assert asset.headers["content-type"].startswith("text/javascript")
    stale = script.replace(script.split("/")[3], "000000000000")
    assert (await web.get(stale)).status_code == 404  # an old release's URL
    assert (await web.get(script.replace("miniapp.js", "../config.py"))).status_code == 404
    assert (await web.post("/app/po/PO-2026-001")).status_code == 405
    # The helpers both pages share: same origin (script-src 'self'), versioned like the rest,
    # kept a year, gzipped, and run before the page's own script (both deferred, in order).
    [common] = re.findall(r'src="(/app/static/[0-9a-f]{12}/common\.js)"', page.text)
    assert common.split("/")[3] == script.split("/")[3]
    assert page.text.index(common) < page.text.index(script)
    shared = await web.get(common, headers={"Accept-Encoding": "gzip"})
    assert shared.status_code == 200
    assert shared.headers["cache-control"] == "public, max-age=31536000, immutable"
    assert shared.headers["content-type"].startswith("text/javascript")
    assert shared.headers["content-encoding"] == "gzip"
    assert "withTax" in shared.text


async def test_the_local_stand_in_replaces_telegrams_script_only_on_loopback(store, db_url):
    local = settings_for(
        db_url, manzoori_public_url="http://127.0.0.1:8080", manzoori_webapp_script="local"
    )
    app = build_web(local, store, Heartbeats(), Metrics())
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://web") as client:
        page = await client.get("/app/po/PO-2026-001")
    assert "telegram.org" not in page.text
    assert "script-src 'self';" in page.headers["content-security-policy"]
    assert re.search(r'src="/app/static/[0-9a-f]{12}/telegram-web-app\.js"', page.text)
    with pytest.raises(ValueError, match="local is only for a MANZOORI_PUBLIC_URL on localhost"):
        settings_for(
            db_url, manzoori_public_url="https://po.example", manzoori_webapp_script="local"
        )


@pytest.mark.parametrize(
    "header",
    [
        {},  # no initData at all
        {"Authorization": "Bearer something"},  # another scheme
        tma(forged(init_data(TOKEN, APPROVER_A))),  # forged: the hash altered
        tma(init_data(TOKEN, APPROVER_A, age=3601)),  # older than MANZOORI_WEBAPP_MAX_AGE_SECONDS
        tma(init_data(OTHER_BOT_TOKEN, APPROVER_A)),  # signed for another bot
    ],
    ids=["missing", "scheme", "forged", "too-old", "other-bot"],
)
async def test_init_data_that_proves_nothing_gets_401_and_changes_nothing(web, store, header):
    job = await opened(store)
    view = await web.get(f"/api/po/{job.po_number}", headers=header)
    assert view.status_code == 401 and view.json()["error"]
    assert view.headers["cache-control"] == "no-store"
    posted = await web.post(f"/api/po/{job.po_number}/decision", json=decision(job), headers=header)
    assert posted.status_code == 401
    assert await decisions_of(store, job) == []


async def test_the_view_shows_every_line_in_the_viewers_language(web, store):
    job = await opened(store)
    async with store.begin() as tx:
        await tx.met(APPROVER_B, "Sana", utcnow(), started=True)
        assert await tx.set_language(APPROVER_B, "ur", utcnow())
    english = await web.get(f"/api/po/{job.po_number}", headers=tma(init_data(TOKEN, APPROVER_A)))
    assert english.status_code == 200 and english.headers["cache-control"] == "no-store"
    body = english.json()
    assert (body["lang"], body["dir"], body["version"]) == ("en", "ltr", 1)
    assert body["hash"] == job.draft_hash
    assert [line["sku"] for line in body["lines"]] == ["CBL-USB-C-1M", "ADP-65W"]
    assert body["lines"][0]["quantity"] == 4 and body["lines"][0]["unit_price"] == "Rs 1,250.00"
    assert body["decision"] == {"allowed": True, "why": None, "needs_reason": False}
    assert body["labels"]["queued"] == "Queued — not sent yet"
    assert body["version_text"].startswith("Draft v1 · ")
    urdu = await web.get(f"/api/po/{job.po_number}", headers=tma(init_data(TOKEN, APPROVER_B)))
    shown = urdu.json()
    assert (shown["lang"], shown["dir"]) == ("ur", "rtl")
    assert shown["labels"]["queued"] != "Queued — not sent yet"  # from the Urdu catalogue
    assert "\u2068" in shown["total_text"]  # the amount isolated inside the Urdu sentence


async def test_a_sent_pos_view_says_what_its_supplier_answered(web, store):
    rules, now = settings_for("sqlite+aiosqlite:///unused.db").rules(), utcnow()
    job = await opened(store)
    viewer = tma(init_data(TOKEN, APPROVER_A))
    waiting = (await web.get(f"/api/po/{job.po_number}", headers=viewer)).json()
    assert waiting["supplier_text"] is None  # not sent: nothing for a supplier to answer
    review = Review(job.po_number, APPROVER_A, Verdict.APPROVE, 1, job.draft_hash)
    await decisions.decide(store, review, now, rules)
    effect = await suppliers.attempted(store, now, rules)  # e-mailed, as a runner does
    awaiting = (await web.get(f"/api/po/{job.po_number}", headers=viewer)).json()
    assert awaiting["supplier_text"].startswith("📬 awaiting the supplier's answer (")
    link = link_for(effect, 30)
    declined = SupplierReply(Reply.DECLINE, 1, link.hash_prefix, reason="no stock")
    await pages.answer(store, link, declined, now, rules.approval.zone, rules)
    said = (await web.get(f"/api/po/{job.po_number}", headers=viewer)).json()["supplier_text"]
    assert said.startswith("📬 the supplier declined: no stock (")


async def test_strangers_and_outsiders_see_nothing(web, store):
    job = await opened(store)
    stranger = await web.get(f"/api/po/{job.po_number}", headers=tma(init_data(TOKEN, 424242)))
    assert stranger.status_code == 403
    async with store.begin() as tx:
        await tx.grant(OUTSIDER, Role.REQUESTER, "test", utcnow())
    outsider = await web.get(f"/api/po/{job.po_number}", headers=tma(init_data(TOKEN, OUTSIDER)))
    missing = await web.get("/api/po/PO-2026-999", headers=tma(init_data(TOKEN, OUTSIDER)))
    assert outsider.status_code == missing.status_code == 404  # alike: nothing to learn
    requester = await web.get(f"/api/po/{job.po_number}", headers=tma(init_data(TOKEN, REQUESTER)))
    assert requester.status_code == 200 and requester.json()["decision"]["allowed"] is False


async def test_an_approval_is_recorded_once_however_often_it_is_sent(web, store):
    job = await opened(store)
    asked, headers = decision(job), tma(init_data(TOKEN, APPROVER_A))
    first = await web.post(f"/api/po/{job.po_number}/decision", json=asked, headers=headers)
    assert first.status_code == 200, first.text
    assert first.json()["status"] == "recorded"
    assert first.json()["message"] == "Approved — e-mailing the supplier."
    assert first.json()["replay"] is False
    again = await web.post(f"/api/po/{job.po_number}/decision", json=asked, headers=headers)
    assert again.status_code == 200 and again.json()["status"] == "recorded"
    assert again.json()["replay"] is True and again.json()["message"] == first.json()["message"]
    assert len(await decisions_of(store, job)) == 1
    async with store.reading() as tx:
        assert (await tx.job_by_po(job.po_number)).state is State.APPROVED
    other = await web.post(f"/api/po/{job.po_number}/decision", json=decision(job), headers=headers)
    assert other.status_code == 409 and other.json()["status"] == "refused"


async def test_a_decision_on_a_draft_that_changed_is_refused(web, store):
    job = await opened(store)
    settings = settings_for("sqlite+aiosqlite:///unused.db")
    revision = Revision.noted(make_draft(quantity=3), "fewer cables")
    await opening.revise(
        store, job.po_number, revision, Stamp("user:1001", utcnow()), settings.rules()
    )
    answer = await web.post(
        f"/api/po/{job.po_number}/decision",
        json=decision(job),
        headers=tma(init_data(TOKEN, APPROVER_A)),
    )
    assert answer.status_code == 409
    assert answer.json()["message"] == "This PO changed — review it again"
    assert await decisions_of(store, job) == []


async def test_an_approval_with_changes_makes_a_new_version(web, store):
    job = await opened(store)
    changes = [{"line": 1, "quantity": 2}]
    answer = await web.post(
        f"/api/po/{job.po_number}/decision",
        json=decision(job, changes=changes),
        headers=tma(init_data(TOKEN, APPROVER_A)),
    )
    assert answer.status_code == 200, answer.text
    assert answer.json()["version"] == 2
    async with store.reading() as tx:
        now = await tx.job_by_po(job.po_number)
        draft = await tx.draft(job.id, 2)
    assert now.draft_version == 2 and now.draft_hash == draft_hash(draft)
    assert [line.quantity for line in draft.lines] == [2, 2]


@pytest.mark.parametrize(
    ("body", "status"),
    [
        (b"{not json", 400),  # not JSON
        (b"[]", 400),  # not an object
        (json.dumps({"verdict": "approve"}).encode(), 400),  # no id, version or hash
        (json.dumps({"id": "x" * 65}).encode(), 400),  # an id longer than 64
        (b'{"id": "' + b"x" * 100_001 + b'"}', 413),  # longer than any decision
    ],
)
async def test_a_body_that_is_not_a_decision_is_refused(web, store, body, status):
    job = await opened(store)
    answer = await web.post(
        f"/api/po/{job.po_number}/decision",
        content=body,
        headers={**tma(init_data(TOKEN, APPROVER_A)), "Content-Type": "application/json"},
    )
    assert answer.status_code == status
    said = answer.json()
    assert said["status"] == "invalid" if status == 400 else said["error"] == "decision too large"
    assert await decisions_of(store, job) == []


async def test_a_rejection_needs_a_reason_and_a_form_post_is_not_taken(web, store):
    job = await opened(store)
    headers = tma(init_data(TOKEN, APPROVER_A))
    url = f"/api/po/{job.po_number}/decision"
    bare = await web.post(url, json=decision(job, verdict="reject"), headers=headers)
    assert bare.status_code == 400
    form = await web.post(url, data={"verdict": "approve"}, headers=headers)
    assert form.status_code == 415
    reasoned = await web.post(
        url, json=decision(job, verdict="reject", reason="too dear"), headers=headers
    )
    assert reasoned.status_code == 200
    told = f"Rejected {job.po_number}. The requester is told your reason."
    assert reasoned.json()["message"] == told
    assert (await web.get(url, headers=headers)).status_code == 405  # no GET changes anything


async def test_an_expired_request_is_refused(web, store):
    settings = settings_for("sqlite+aiosqlite:///unused.db")
    job = await opening.open_job(
        store, new_job(), make_draft(), utcnow() - timedelta(days=2), settings.rules()
    )
    answer = await web.post(
        f"/api/po/{job.po_number}/decision",
        json=decision(job),
        headers=tma(init_data(TOKEN, APPROVER_A)),
    )
    assert answer.status_code == 409 and answer.json()["code"] == "expired"


# What every answer of the API carries, whatever it says (bot/web/security.py).
API_HEADERS = {
    "cache-control": "no-store",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
}


def carries_the_api_headers(answer: httpx.Response) -> bool:
    shown = {name: answer.headers.get(name) for name in API_HEADERS}
    csp = answer.headers.get("content-security-policy", "")
    return shown == API_HEADERS and "default-src 'self'" in csp


@pytest.mark.parametrize(
    "body",
    [
        b'{"changes": ' + b"[" * 3000 + b"]" * 3000 + b"}",  # the 3 KB of brackets
        b"[" * 3000,  # brackets, never closed
        b'{"a":' * 1000 + b"1" + b"}" * 1000,  # objects inside objects
    ],
    ids=["arrays", "unclosed", "objects"],
)
async def test_a_body_nested_too_deep_is_a_400_with_the_api_headers(web, store, body):
    job = await opened(store)
    answer = await web.post(
        f"/api/po/{job.po_number}/decision",
        content=body,
        headers={**tma(init_data(TOKEN, APPROVER_A)), "Content-Type": "application/json"},
    )
    assert answer.status_code == 400
    assert answer.json() == {"status": "invalid", "message": "the body nests deeper than 16"}
    assert carries_the_api_headers(answer)
    assert await decisions_of(store, job) == []


async def test_a_reason_that_is_not_text_is_a_400(web, store):
    job = await opened(store)
    # A lone surrogate: JSON can escape it, but no database or answer can hold it.
    body = json.dumps(decision(job, verdict="reject", reason="too dear \ud800")).encode()
    answer = await web.post(
        f"/api/po/{job.po_number}/decision",
        content=body,
        headers={**tma(init_data(TOKEN, APPROVER_A)), "Content-Type": "application/json"},
    )
    assert answer.status_code == 400
    said = "reason must be Unicode text, without lone surrogates"
    assert answer.json() == {"status": "invalid", "message": said}
    assert carries_the_api_headers(answer)
    assert await decisions_of(store, job) == []


async def test_every_answer_carries_the_headers_even_one_no_route_made(web, store):
    job = await opened(store)
    url, headers = f"/api/po/{job.po_number}/decision", tma(init_data(TOKEN, APPROVER_A))
    answers = [
        await web.post(url, json=decision(job)),  # 401: no initData
        await web.post(url, data={"verdict": "approve"}, headers=headers),  # 415
        await web.get("/api/po/PO-2026-999", headers=headers),  # 404: no such PO
        await web.get("/api/nowhere", headers=headers),  # 404: Starlette's, no route's
        await web.get(url, headers=headers),  # 405: Starlette's
        await web.post(url, json=decision(job), headers=headers),  # 200
    ]
    assert [a.status_code for a in answers] == [401, 415, 404, 404, 405, 200]
    assert all(carries_the_api_headers(a) for a in answers)


async def test_an_unexpected_error_is_a_500_with_the_headers_and_no_internals(tmp_path):
    # A database that cannot be opened: every API call fails past initData, unforeseen.
    nowhere = f"sqlite+aiosqlite:///{tmp_path}/missing/folder/manzoori.db"
    broken = SqlStore(make_engine(nowhere), DATA_KEY)
    app = build_web(settings_for(nowhere), broken, Heartbeats(), Metrics())
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://web") as client:
            answer = await client.get("/api/po/PO-2026-001", headers=tma(init_data(TOKEN, 7)))
    finally:
        await broken.close()
    assert answer.status_code == 500
    assert answer.json() == {"error": "internal error: try again later"}
    assert carries_the_api_headers(answer)

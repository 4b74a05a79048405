"""The web front door's /healthz and /metrics on a real store (SQLite and PostgreSQL), through
the ASGI application and through uvicorn on a real port."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from bot.bootstrap import running
from bot.config import Settings
from bot.web.app import build_web, serving_web
from bot.web.health import Heartbeats
from bot.web.metrics import Metrics
from store.engine import make_engine
from store.sql import SqlStore
from tests.helpers.bot import settings_for as base_settings
from tests.helpers.net import free_port
from tests.helpers.store import DATA_KEY

POLL = 2.0


class Clock:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def settings_for(db_url: str, **values: object) -> Settings:
    return base_settings(db_url, **{"manzoori_poll_seconds": POLL, **values})


def client(settings: Settings, store: SqlStore, heartbeats: Heartbeats) -> httpx.AsyncClient:
    app = build_web(settings, store, heartbeats, Metrics())
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://web")


async def test_healthz_is_ok_while_both_runners_are_fresh_and_names_a_stale_one(store, db_url):
    clock = Clock()
    beats = Heartbeats(clock)
    beats.expect("outbox")
    beats.expect("notice")
    async with client(settings_for(db_url), store, beats) as web:
        clock.now += 3 * POLL  # three intervals since the start: still healthy
        fresh = await web.get("/healthz")
        assert fresh.status_code == 200
        assert fresh.json() == {
            "status": "ok",
            "database": "ok",
            "runners": {"notice": 3 * POLL, "outbox": 3 * POLL},
        }
        beats.beat("outbox")
        clock.now += 0.5
        stale = await web.get("/healthz")
    assert stale.status_code == 503
    body = stale.json()
    assert body["status"] == "unhealthy" and body["database"] == "ok"
    assert body["reason"] == "the notice runner's last pass was 6.5s ago"
    assert body["runners"] == {"notice": 6.5, "outbox": 0.5}


async def test_healthz_is_503_when_the_database_does_not_answer(tmp_path, db_url):
    nowhere = f"sqlite+aiosqlite:///{tmp_path}/missing/folder/manzoori.db"
    store = SqlStore(make_engine(nowhere), DATA_KEY)
    try:
        async with client(settings_for(db_url), store, Heartbeats()) as web:
            response = await web.get("/healthz")
    finally:
        await store.close()
    assert response.status_code == 503
    body = response.json()
    assert body["database"].startswith("unreachable: ")
    assert body["reason"].startswith("the database does not answer (")


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a Prometheus text exposition, by name and labels."""
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


async def test_metrics_need_the_bearer_token_when_one_is_set(store, db_url):
    settings = settings_for(db_url, manzoori_metrics_token="scrape-me")
    async with client(settings, store, Heartbeats()) as web:
        assert (await web.get("/metrics")).status_code == 401
        wrong = await web.get("/metrics", headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401
        assert (await web.get("/metrics?token=scrape-me")).status_code == 401  # header only
        right = await web.get("/metrics", headers={"Authorization": "Bearer scrape-me"})
    assert right.status_code == 200
    assert right.headers["content-type"].startswith("text/plain; version=0.0.4")
    assert samples(right.text)[("manzoori_review_queue", ())] == 0


async def test_running_serves_the_front_door_and_the_outbox_runner_beats(store, db_url):
    port = free_port()
    settings = settings_for(db_url, web_port=port, manzoori_poll_seconds=0.05)
    async with (
        running(settings, store, bot=False, web=True),
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as web,
    ):
        async with asyncio.timeout(10):
            while (response := await web.get("/healthz")).status_code != 200:
                await asyncio.sleep(0.05)
        assert list(response.json()["runners"]) == ["outbox"]  # a worker: no notice runner
        assert (await web.get("/metrics")).status_code == 200  # no token set: open
        assert (await web.get("/nowhere")).status_code == 404


async def test_a_port_already_taken_fails_at_start(store, db_url):
    port = free_port()
    settings = settings_for(db_url, web_port=port)
    app = build_web(settings, store, Heartbeats(), Metrics())
    async with serving_web(app, settings):
        with pytest.raises(OSError, match=f"could not listen on 127.0.0.1:{port}"):
            async with serving_web(app, settings):
                pass


WEBHOOK_TOKEN = "7000000001:AAexampleexampleexampleexampleexam"
SECRET = "s3cret_Token-for-tests"


@pytest.mark.parametrize(
    "body",
    [
        b'{"update_id": 1, "message": ' + b"[" * 3000 + b"]" * 3000 + b"}",  # nested too deep
        b'{"update_id": 1, "message": []}',  # PTB: 'list' object has no attribute 'get'
        b'{"update_id": 1, "message": {"message_id": 1, "date": 1e30, '
        b'"chat": {"id": 1, "type": "private"}}}',  # PTB: timestamp out of range
        b"[]",  # not an object at all
        b"\xff\xfe",  # not UTF-8
    ],
    ids=["deep", "list-message", "date-overflow", "array", "bytes"],
)
async def test_an_unreadable_update_is_a_400_and_queues_nothing(store, db_url, body):
    """The webhook is Telegram's, behind its secret; still, no body it carries is a 500."""
    from telegram.ext import ApplicationBuilder

    telegram = ApplicationBuilder().token(WEBHOOK_TOKEN).updater(None).build()
    settings = settings_for(
        db_url, webhook_url="https://bot.example/telegram/hook", webhook_secret=SECRET
    )
    app = build_web(settings, store, Heartbeats(), Metrics(), telegram)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://web") as web:
        headers = {"X-Telegram-Bot-Api-Secret-Token": SECRET}
        answer = await web.post("/telegram/hook", content=body, headers=headers)
    assert (answer.status_code, answer.text) == (400, "not a Telegram update")
    assert answer.headers["x-content-type-options"] == "nosniff"
    assert telegram.update_queue.empty()

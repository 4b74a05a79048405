"""The web front door beside the real bot: /metrics counts what the bot did, /healthz tells
when a runner has stopped making passes, and the webhook refuses a body that is not a Telegram
update."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from bot.telegram.cards import APPROVE_TEXT
from core.jobs.effects import EffectStatus
from core.jobs.states import State
from tests.e2e.test_webhook_bot import SECRET
from tests.helpers.bot import answer, cards_out, deliveries_done, running_bot, submitted
from tests.helpers.factories import APPROVER_A, T0
from tests.helpers.net import free_port

TOKEN = "metrics-token"


async def test_metrics_count_an_approved_po_its_send_and_its_notices(
    botapi, db_url, store, smtp_sink
):
    port = free_port()
    mail = dict(smtp_host=smtp_sink.host, smtp_port=smtp_sink.port, smtp_tls="none")
    async with (
        running_bot(
            botapi, db_url, web=True, web_port=port, manzoori_metrics_token=TOKEN, **mail
        ) as run,
        httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as web,
    ):
        botapi.fail_next("sendMessage", status=429, retry_after=1, chat_id=APPROVER_A)
        ali, ali_card, _, _ = await cards_out(botapi, run)  # the limiter waits, then sends
        await answer(botapi, ali.tap(ali_card, APPROVE_TEXT))
        await deliveries_done(run)
        assert await run.outbox.run_once() == 1  # the e-mail, through the sink
        assert (await web.get("/metrics")).status_code == 401
        response = await web.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 200
    families = {f.name: f for f in text_string_to_metric_families(response.text)}
    jobs = {s.labels["state"]: s.value for s in families["manzoori_jobs"].samples}
    assert jobs == {State.SENT.value: 1}  # approved, then e-mailed
    effects = {s.labels["status"]: s.value for s in families["manzoori_outbox_effects"].samples}
    assert effects == {EffectStatus.SUCCEEDED.value: 1}
    assert sum(s.value for s in families["manzoori_notices"].samples) >= 2  # the two cards
    assert [s.value for s in families["manzoori_review_queue"].samples] == [0]
    sends = {s.name: s.value for s in families["manzoori_smtp_send_seconds"].samples}
    assert sends["manzoori_smtp_send_seconds_count"] == 1
    assert 0 < sends["manzoori_smtp_send_seconds_sum"] < 30
    taps = {s.name: s.value for s in families["manzoori_tap_answer_seconds"].samples}
    assert taps["manzoori_tap_answer_seconds_count"] == 1  # Ali's approval, answered once
    parses = {s.name: s.value for s in families["manzoori_sheet_parse_seconds"].samples}
    assert parses["manzoori_sheet_parse_seconds_count"] == 1  # restock.csv
    for name in ("manzoori_telegram_errors", "manzoori_telegram_rate_limited"):
        counted = {
            s.labels["method"]: s.value for s in families[name].samples if s.name.endswith("_total")
        }
        assert counted == {"sendMessage": 1}, name


async def test_the_webhook_refuses_what_is_not_an_update(botapi, db_url):
    port = free_port()
    url = f"http://127.0.0.1:{port}/telegram/hook"
    headers = {"X-Telegram-Bot-Api-Secret-Token": SECRET}
    async with (
        running_bot(botapi, db_url, webhook_url=url, webhook_secret=SECRET, web_port=port),
        httpx.AsyncClient() as web,
    ):
        assert (await web.post(url, content=b"{not json", headers=headers)).status_code == 400
        huge = b'{"update_id": 1, "x": "' + b"a" * 1_000_001 + b'"}'
        assert (await web.post(url, content=huge, headers=headers)).status_code == 413
        assert (await web.get(url, headers=headers)).status_code == 405
        assert (await web.post(url, content=b"{}")).status_code == 403  # no secret
        health = await web.get(f"http://127.0.0.1:{port}/healthz")  # the same front door
        metrics = (await web.get(f"http://127.0.0.1:{port}/metrics")).text
    assert health.status_code == 200
    assert 'manzoori_webhook_updates_total{outcome="unreadable"} 2.0' in metrics
    assert 'manzoori_webhook_updates_total{outcome="refused"} 1.0' in metrics
    assert 'outcome="queued"' not in metrics  # nothing was


@asynccontextmanager
async def hung_smtp_server() -> AsyncIterator[int]:
    """A mail server that takes the connection and then never says a word: the e-mail
    runner's send waits on its greeting until the SMTP timeout. Yields its port."""
    held: list[asyncio.StreamWriter] = []

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)  # kept open, unanswered

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        for writer in held:
            writer.close()
        server.close()
        await server.wait_closed()


POLL = 0.2  # seconds between a runner's idle passes: /healthz calls it stale after 0.6 s
HUNG_FOR = 3.0  # the SMTP timeout: how long the stuck send holds the e-mail runner


@pytest.mark.slow  # waits out a real SMTP timeout
@pytest.mark.timed
async def test_healthz_turns_503_when_the_e_mail_runner_stops_making_passes(botapi, db_url, store):
    port = free_port()
    async with hung_smtp_server() as smtp_port:
        settings = dict(
            smtp_host="127.0.0.1", smtp_port=smtp_port, smtp_timeout_seconds=HUNG_FOR,
            manzoori_poll_seconds=POLL, web_port=port,
        )  # fmt: skip
        async with (
            running_bot(botapi, db_url, web=True, loops=True, **settings) as run,
            httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as web,
        ):
            before = await web.get("/healthz")
            ali = botapi.user(APPROVER_A, "Ali", started=True)
            async with run.store.begin() as tx:
                await tx.met(APPROVER_A, "Ali", T0, started=True)
            await submitted(botapi, run)
            card = await ali.next_message()  # delivered by the notice runner's own loop
            assert await answer(botapi, ali.tap(card, APPROVE_TEXT)) == (
                "Approved — e-mailing the supplier."
            )
            # The e-mail runner takes the send and waits on the silent server: no more passes.
            async with asyncio.timeout(HUNG_FOR - 0.5):
                while (after := await web.get("/healthz")).status_code == 200:
                    await asyncio.sleep(POLL / 2)
    assert before.status_code == 200 and before.json()["status"] == "ok"
    assert after.status_code == 503
    body = after.json()
    assert body["status"] == "unhealthy" and body["database"] == "ok"
    assert body["reason"].startswith("the outbox runner's last pass was ")
    assert body["runners"]["notice"] <= 3 * POLL  # the other runner still makes its passes

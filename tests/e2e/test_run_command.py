"""`manzoori run` as a real process: the bot answers over HTTP, SIGTERM stops it cleanly, and
the bot token appears in none of its output."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys

import httpx
import pytest

from tests.helpers.cli import base_env
from tests.helpers.factories import REQUESTER
from tests.helpers.net import free_port

pytestmark = pytest.mark.slow  # spawns `manzoori run`


async def test_manzoori_run_answers_stops_on_sigterm_and_never_logs_the_token(
    botapi, db_url, store, tmp_path
):
    env = dict(
        base_env(db_url),
        TELEGRAM_BOT_TOKEN=botapi.token,
        TELEGRAM_API_URL=f"http://127.0.0.1:{botapi.port}",
        MANZOORI_POLL_SECONDS="0.1",
        WEB_PORT=str(port := free_port()),
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "bot.cli", "run"], cwd=tmp_path, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        requester = botapi.user(REQUESTER, "Bilal")
        requester.send_text("/start")
        reply = await requester.next_message(timeout=30)  # start-up: imports, migrations, getMe
        assert reply.text == (
            "Hello Bilal. You are registered as requester. /help shows what you can do."
        )
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as web:
            health = await web.get("/healthz")  # both runners have passed by the reply
        assert health.status_code == 200, health.text
        assert set(health.json()["runners"]) == {"notice", "outbox"}
    finally:
        process.send_signal(signal.SIGTERM)
        out, err = await asyncio.to_thread(process.communicate, timeout=30)
    assert process.returncode == 0, err
    assert "INFO" in err  # it logged (start-up, migrations), so the next line can fail
    assert botapi.token not in out + err  # a request URL is /bot<token>/method
    assert not botapi.unimplemented_calls

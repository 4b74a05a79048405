"""Real runner processes: killed with SIGKILL at named fault points, restarted, and raced.

Each runner is `python -m bot.cli runner --until-idle` against the same database and a real
SMTP server. Jobs are approved at the real current time, since the runner reads the real clock.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections import Counter
from datetime import UTC, datetime

import pytest
from cryptography.fernet import Fernet

from bot.dev.smtp import running_sink
from core import service, workflow
from core.effects import EffectStatus, message_id
from core.policies import Rules, Verdict
from core.service import Review
from core.states import State
from store.engine import make_engine
from store.sql import SqlStore
from tests.helpers.factories import APPROVER_A, make_draft, new_job
from tests.helpers.store import DATA_KEY, grant_cast

pytestmark = pytest.mark.slow
DOMAIN = "shop.example"
# The lease must outlive the SMTP timeout (config enforces it); short, so restarts are quick.
LEASE_SECONDS, SMTP_TIMEOUT_SECONDS = 2, 1


@pytest.fixture
def sink():
    with running_sink() as sink:
        yield sink


def runner_env(db_url: str, sink, fault: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MANZOORI_", "SMTP_"))}
    env.update(
        DATABASE_URL=db_url,
        MANZOORI_DATA_KEY=DATA_KEY.decode(),
        MANZOORI_SECRET_KEY=Fernet.generate_key().decode(),
        SMTP_HOST=sink.host,
        SMTP_PORT=str(sink.port),
        SMTP_TLS="none",
        SMTP_TIMEOUT_SECONDS=str(SMTP_TIMEOUT_SECONDS),
        MAIL_FROM=f"orders@{DOMAIN}",
        MANZOORI_LEASE_SECONDS=str(LEASE_SECONDS),
        MANZOORI_POLL_SECONDS="0.2",
    )
    if fault:
        env["MANZOORI_FAULT_POINT"] = fault
    return env


def start_runner(db_url: str, sink, tmp_path, fault: str | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "bot.cli", "runner", "--until-idle", "--max-seconds", "60"],
        env=runner_env(db_url, sink, fault),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(process: subprocess.Popen) -> int:
    _out, err = process.communicate(timeout=90)
    if process.returncode not in (0, -signal.SIGKILL):
        pytest.fail(f"runner exited {process.returncode}:\n{err}")
    return process.returncode


async def _approve(db_url: str, po_numbers: list[str]) -> None:
    store = SqlStore(make_engine(db_url), DATA_KEY)
    now = datetime.now(UTC)
    try:
        await grant_cast(store)
        for po in po_numbers:
            job = await service.open_job(store, new_job(), make_draft(po), now, Rules())
            await service.decide(
                store, Review(po, APPROVER_A, Verdict.APPROVE, 1, job.draft_hash), now, Rules()
            )
    finally:
        await store.close()


async def _snapshot(db_url: str, po: str):
    store = SqlStore(make_engine(db_url), DATA_KEY)
    try:
        async with store.begin() as tx:
            job = await workflow.load(tx, po)
            return job, await tx.effects_for(job.id)
    finally:
        await store.close()


def approve(db_url: str, *po_numbers: str) -> None:
    asyncio.run(_approve(db_url, list(po_numbers)))


def snapshot(db_url: str, po: str):
    return asyncio.run(_snapshot(db_url, po))


def keys_received(sink) -> Counter[str]:
    return Counter(m["Idempotency-Key"] for m in sink.messages)


# fault point, state after the restart, e-mails the supplier got, effect status after restart
CRASHES = [
    # claimed but not started: safe to run again once the lease ends
    ("after_claim", State.SENT, 1, EffectStatus.SUCCEEDED),
    # marker committed, SMTP never called: the runner cannot know that, so a person checks
    ("after_marker", State.UNKNOWN_OUTCOME, 0, EffectStatus.UNKNOWN),
    # the server took the message, nothing recorded: unknown, and never a second copy
    ("after_accept", State.UNKNOWN_OUTCOME, 1, EffectStatus.UNKNOWN),
    # everything recorded: the restart has nothing to do
    ("after_record", State.SENT, 1, EffectStatus.SUCCEEDED),
]


@pytest.mark.parametrize(
    ("fault", "state", "mails", "status"), CRASHES, ids=[c[0] for c in CRASHES]
)
def test_killed_runner_restarts_without_a_second_email(
    db_url, sink, tmp_path, fault, state, mails, status
):
    approve(db_url, "PO-2026-101")
    assert finish(start_runner(db_url, sink, tmp_path, fault)) == -signal.SIGKILL
    assert finish(start_runner(db_url, sink, tmp_path)) == 0
    job, [effect] = snapshot(db_url, "PO-2026-101")
    assert (job.state, effect.status) == (state, status)
    assert len(sink.messages) == mails
    if mails:
        assert sink.messages[0]["Message-ID"] == message_id(effect.key, DOMAIN)
    # a third runner changes nothing either
    assert finish(start_runner(db_url, sink, tmp_path)) == 0
    assert len(sink.messages) == mails
    assert snapshot(db_url, "PO-2026-101")[0].state is state


def test_two_runner_processes_send_each_po_once(db_url, sink, tmp_path):
    po_numbers = [f"PO-2026-{n:03d}" for n in range(1, 25)]
    approve(db_url, *po_numbers)
    runners = [start_runner(db_url, sink, tmp_path) for _ in range(2)]
    assert [finish(r) for r in runners] == [0, 0]
    received = keys_received(sink)
    assert len(received) == len(po_numbers)
    assert set(received.values()) == {1}
    for po in po_numbers:
        job, [effect] = snapshot(db_url, po)
        assert job.state is State.SENT and received[effect.key] == 1

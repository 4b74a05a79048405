"""The ladder in real processes: two `manzoori run --worker` sweeping the same database on a
second-scale ladder, one of them restarted midway, owe and audit each reminder and
escalation once. The cards are delivered at the real current time, since the workers read
the real clock."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest
from cryptography.fernet import Fernet

from bot.clock import utcnow
from core.approval import opening
from core.approval.policies import Rules
from core.jobs.notices import NoticeKind
from core.messaging import delivery
from store import schema
from store.engine import make_engine
from store.sql import SqlStore
from tests.helpers.factories import APPROVER_A, APPROVER_B, make_draft, new_job
from tests.helpers.store import DATA_KEY, grant_cast

pytestmark = pytest.mark.slow


def worker(db_url: str, tmp_path) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MANZOORI_", "SMTP_"))}
    env.update(
        DATABASE_URL=db_url,
        MANZOORI_DATA_KEY=DATA_KEY.decode(),
        MANZOORI_SECRET_KEY=Fernet.generate_key().decode(),
        MANZOORI_WORKING_HOURS="Mon-Sun 00:00-24:00",
        MANZOORI_REMIND_AFTER="1s",
        MANZOORI_ESCALATE_AFTER="2s",
        MANZOORI_BEFORE_EXPIRY="off",
        MANZOORI_DIGEST_AT="off",
        MANZOORI_LADDER_CHECK_SECONDS="0.05",
        MANZOORI_POLL_SECONDS="0.2",
    )
    return subprocess.Popen(
        [sys.executable, "-m", "bot.cli", "run", "--worker"],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def stop(process: subprocess.Popen[str]) -> None:
    """SIGTERM: a clean stop, or, for a worker still starting, an end as abrupt as a crash."""
    process.send_signal(signal.SIGTERM)
    _out, err = process.communicate(timeout=30)
    if process.returncode not in (0, -signal.SIGTERM):
        pytest.fail(f"worker exited {process.returncode}:\n{err}")


async def waiting_with_cards_out(db_url: str) -> None:
    store = SqlStore(make_engine(db_url), DATA_KEY)
    try:
        await grant_cast(store)
        now = utcnow()
        async with store.begin() as tx:
            await tx.met(APPROVER_A, "Ali", now, started=True)
            await tx.met(APPROVER_B, "Sana", now, started=True)
        await opening.open_job(store, new_job(), make_draft("PO-2026-0001"), now, Rules())
        async with store.begin() as tx:
            cards = await tx.claim_notices(now, "test", now, 10, None)
        for card in cards:
            await delivery.sent(store, card, 1, now)
    finally:
        await store.close()


async def owed_and_audited(db_url: str) -> tuple[list[str], Counter[str]]:
    store = SqlStore(make_engine(db_url), DATA_KEY)
    try:
        async with store.reading() as tx:
            t = schema.notices
            rows = await tx.conn.execute(t.select().where(t.c.kind == NoticeKind.NUDGE.value))
            keys = sorted(row.key for row in rows)
            job = await tx.job_by_po("PO-2026-0001")
            assert job is not None
            trail = Counter(e.action for e in await tx.audit(job.id))
        return keys, trail
    finally:
        await store.close()


def owed_by_then(db_url: str, step: str, timeout: float = 30.0) -> None:
    """Wait until both people's `step` is owed."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        keys, _trail = asyncio.run(owed_and_audited(db_url))
        if sum(k.startswith(f"{step}:") for k in keys) == 2:
            return
        time.sleep(0.2)
    pytest.fail(f"no {step} owed within {timeout} s")


def test_two_workers_and_a_restart_owe_each_nudge_once(db_url: str, tmp_path) -> None:
    asyncio.run(waiting_with_cards_out(db_url))
    started: list[subprocess.Popen[str]] = []
    try:
        first, second = worker(db_url, tmp_path), worker(db_url, tmp_path)
        started += [first, second]
        owed_by_then(db_url, "remind")
        stop(first)
        started.append(restarted := worker(db_url, tmp_path))
        owed_by_then(db_url, "escalate")
        time.sleep(4)  # the restarted worker is up and sweeping again by now
        stop(second)
        stop(restarted)
    finally:  # a failed step leaves no worker behind to hold ports or sweep the next test's rows
        for process in started:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=30)
    keys, trail = asyncio.run(owed_and_audited(db_url))
    assert [k.split(":")[0] for k in keys] == ["escalate"] * 2 + ["remind"] * 2
    assert (trail["ladder_remind"], trail["ladder_escalate"]) == (2, 2)

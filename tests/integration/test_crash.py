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
from core.approval import decisions, opening
from core.approval.decisions import Review
from core.approval.policies import Rules, Verdict
from core.jobs import closing, transitions
from core.jobs.effects import EffectKind, EffectStatus, message_id
from core.jobs.jobs import Effect, Job, Stamp
from core.jobs.states import Action, State
from core.outbox import calling_off
from store.engine import make_engine
from store.sql import SqlStore
from tests.helpers.factories import APPROVER_A, make_draft, new_job
from tests.helpers.store import DATA_KEY, grant_cast

pytestmark = pytest.mark.slow
DOMAIN = "shop.example"
# The lease must outlive the sends a connection makes in one pass, 3 x the SMTP timeout (config
# enforces it); short, so restarts are quick.
LEASE_SECONDS, SMTP_TIMEOUT_SECONDS = 3.5, 1


@pytest.fixture
def sink():
    with running_sink() as sink:
        yield sink


def runner_env(
    db_url: str,
    sink,
    fault: str | None = None,
    lease: float = LEASE_SECONDS,
    smtp_timeout: float = SMTP_TIMEOUT_SECONDS,
) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MANZOORI_", "SMTP_"))}
    env.update(
        DATABASE_URL=db_url,
        MANZOORI_DATA_KEY=DATA_KEY.decode(),
        MANZOORI_SECRET_KEY=Fernet.generate_key().decode(),
        SMTP_HOST=sink.host,
        SMTP_PORT=str(sink.port),
        SMTP_TLS="none",
        SMTP_TIMEOUT_SECONDS=str(smtp_timeout),
        MAIL_FROM=f"orders@{DOMAIN}",
        MANZOORI_LEASE_SECONDS=str(lease),
        MANZOORI_POLL_SECONDS="0.2",
    )
    if fault:
        env["MANZOORI_FAULT_POINT"] = fault
    return env


def start_runner(
    db_url: str, sink, tmp_path, fault: str | None = None, **timing: float
) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "bot.cli", "runner", "--until-idle", "--max-seconds", "60"],
        env=runner_env(db_url, sink, fault, **timing),
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
            job = await opening.open_job(store, new_job(), make_draft(po), now, Rules())
            await decisions.decide(
                store, Review(po, APPROVER_A, Verdict.APPROVE, 1, job.draft_hash), now, Rules()
            )
    finally:
        await store.close()


async def _snapshots(db_url: str, po_numbers: list[str]) -> dict[str, tuple[Job, Effect]]:
    store = SqlStore(make_engine(db_url), DATA_KEY)
    try:
        found = {}
        async with store.begin() as tx:
            for po in po_numbers:
                job = await transitions.load(tx, po)
                [effect] = await tx.effects_for(job.id)
                found[po] = (job, effect)
        return found
    finally:
        await store.close()


async def _reconcile(db_url: str, findings: dict[str, Action]) -> None:
    store = SqlStore(make_engine(db_url), DATA_KEY)
    try:
        for po, finding in findings.items():
            stamp = Stamp("cli:ops", datetime.now(UTC))
            await closing.reconcile(store, po, finding, "checked with the supplier", stamp)
    finally:
        await store.close()


def approve(db_url: str, *po_numbers: str) -> None:
    asyncio.run(_approve(db_url, list(po_numbers)))


def snapshots(db_url: str, po_numbers: list[str]) -> dict[str, tuple[Job, Effect]]:
    return asyncio.run(_snapshots(db_url, po_numbers))


def reconcile_unknown(db_url: str, after_restart, received: Counter[str]) -> None:
    """A person's findings: sent where the supplier has the mail, not sent where not."""
    findings = {
        po: Action.RECONCILE_SENT if received[effect.key] else Action.RECONCILE_NOT_SENT
        for po, (job, effect) in after_restart.items()
        if job.state is State.UNKNOWN_OUTCOME
    }
    asyncio.run(_reconcile(db_url, findings))


def keys_received(sink) -> Counter[str]:
    return Counter(m["Idempotency-Key"] for m in sink.messages)


# POs due when the runner is killed: several, so that sends are in flight at every point.
BATCH_POS = [f"PO-2026-{n:03d}" for n in range(101, 106)]
# fault point: the states the POs may be in once a second runner has recovered what it can
CRASHES = {
    # claimed, nothing started: every row is claimed again after the lease and sent once
    "after_claim": {State.SENT},
    # every marker committed, SMTP never called: the runner cannot know that, a person checks
    "after_marker": {State.UNKNOWN_OUTCOME},
    # the first mail taken while others were in flight, none recorded: all unknown, none resent
    "after_accept": {State.UNKNOWN_OUTCOME},
    # the first result recorded; the others had got to wherever they were: sent or unknown
    "after_record": {State.SENT, State.UNKNOWN_OUTCOME},
}


@pytest.mark.parametrize("fault", list(CRASHES))
def test_killed_runner_restarts_without_a_second_email(db_url, sink, tmp_path, fault):
    approve(db_url, *BATCH_POS)
    assert finish(start_runner(db_url, sink, tmp_path, fault)) == -signal.SIGKILL
    assert finish(start_runner(db_url, sink, tmp_path)) == 0
    after_restart = snapshots(db_url, BATCH_POS)
    assert_no_second_copy(sink, after_restart, CRASHES[fault])
    states = [job.state for job, _effect in after_restart.values()]
    received = keys_received(sink)
    if fault == "after_marker":
        assert received == {}
    if fault == "after_accept":
        assert received  # the kill came after the server took a mail
    if fault == "after_record":
        assert State.SENT in states
    # a third runner changes nothing either
    assert finish(start_runner(db_url, sink, tmp_path)) == 0
    assert keys_received(sink) == received
    assert snapshots(db_url, BATCH_POS) == after_restart
    # what a person finds out settles the rest, and only what did not arrive is sent
    reconcile_unknown(db_url, after_restart, received)
    assert finish(start_runner(db_url, sink, tmp_path)) == 0
    for po, (job, effect) in snapshots(db_url, BATCH_POS).items():
        assert job.state is State.SENT, po
        assert keys_received(sink)[effect.key] == 1, po


def assert_no_second_copy(sink, after_restart, allowed: set[State]) -> None:
    """Every PO in an allowed state; SENT means one copy arrived, unknown at most one."""
    received = keys_received(sink)
    assert set(received.values()) <= {1}
    for po, (job, effect) in after_restart.items():
        assert job.state in allowed, po
        if job.state is State.SENT:
            assert effect.status is EffectStatus.SUCCEEDED and received[effect.key] == 1, po
        else:
            assert effect.status is EffectStatus.UNKNOWN, po
    ids = {str(m["Message-ID"]) for m in sink.messages}
    assert ids <= {message_id(effect.key, DOMAIN) for _job, effect in after_restart.values()}


def test_two_runner_processes_send_each_po_once(db_url, sink, tmp_path):
    po_numbers = [f"PO-2026-{n:03d}" for n in range(1, 25)]
    approve(db_url, *po_numbers)
    # What is raced here is the claim, not the clock: the crash tests' 1 s SMTP timeout and
    # 3.5 s lease, on a loaded machine (CI: two cores, coverage), let a slow connect end in a
    # retry for later, which --until-idle rightly does not wait for, or a lease run out.
    relaxed = {"lease": 100.0, "smtp_timeout": 30.0}
    runners = [start_runner(db_url, sink, tmp_path, **relaxed) for _ in range(2)]
    assert [finish(r) for r in runners] == [0, 0]
    received = keys_received(sink)
    assert len(received) == len(po_numbers)
    assert set(received.values()) == {1}
    for po, (job, effect) in snapshots(db_url, po_numbers).items():
        assert job.state is State.SENT and received[effect.key] == 1, po


# -- a PO called off after it was sent: its cancellation e-mail under the same crashes ----------

# fault point: the states the called-off POs may be in once a second runner has recovered
CANCEL_CRASHES = {
    "after_claim": {State.CANCELLED},
    "after_marker": {State.CANCEL_UNKNOWN},
    "after_accept": {State.CANCEL_UNKNOWN},
    "after_record": {State.CANCELLED, State.CANCEL_UNKNOWN},
}


async def _call_off(db_url: str, po_numbers: list[str]) -> None:
    store = SqlStore(make_engine(db_url), DATA_KEY)
    try:
        for po in po_numbers:
            request = calling_off.CallOff(po, "ordered twice")
            stamp = Stamp("cli:ops", datetime.now(UTC))
            done = await calling_off.call_off(store, request, frozenset(), stamp)
            assert done.job.state is State.CANCELLING
    finally:
        await store.close()


async def _cancel_snapshots(db_url: str, po_numbers: list[str]) -> dict[str, tuple[Job, Effect]]:
    """Each PO's job and its cancellation's row."""
    store = SqlStore(make_engine(db_url), DATA_KEY)
    try:
        found = {}
        async with store.begin() as tx:
            for po in po_numbers:
                job = await transitions.load(tx, po)
                effects = await tx.effects_for(job.id)
                [cancel] = [e for e in effects if e.kind == EffectKind.CANCEL_PO]
                found[po] = (job, cancel)
        return found
    finally:
        await store.close()


async def _settle_cancellations(db_url: str, findings: dict[str, Action]) -> None:
    store = SqlStore(make_engine(db_url), DATA_KEY)
    try:
        for po, finding in findings.items():
            stamp = Stamp("cli:ops", datetime.now(UTC))
            await calling_off.reconcile(store, po, finding, "checked with the supplier", stamp)
    finally:
        await store.close()


@pytest.mark.parametrize("fault", list(CANCEL_CRASHES))
def test_killed_runner_never_sends_a_cancellation_twice(db_url, sink, tmp_path, fault):
    """Sent POs called off, then the runner sending their cancellations killed at each fault
    point: each cancellation is sent once in effect, or waits in CANCEL_UNKNOWN for a person,
    never twice; once a person has settled them, every PO is CANCELLED with one e-mail."""
    approve(db_url, *BATCH_POS)
    assert finish(start_runner(db_url, sink, tmp_path)) == 0  # every PO e-mailed, once
    placed = keys_received(sink)
    asyncio.run(_call_off(db_url, BATCH_POS))
    assert finish(start_runner(db_url, sink, tmp_path, fault)) == -signal.SIGKILL
    assert finish(start_runner(db_url, sink, tmp_path)) == 0
    after_restart = asyncio.run(_cancel_snapshots(db_url, BATCH_POS))
    received = keys_received(sink) - placed
    assert set(received.values()) <= {1}
    assert keys_received(sink) & placed == placed  # no PO e-mailed again
    for po, (job, cancel) in after_restart.items():
        assert job.state in CANCEL_CRASHES[fault], po
        if job.state is State.CANCELLED:
            assert cancel.status is EffectStatus.SUCCEEDED and received[cancel.key] == 1, po
        else:
            assert cancel.status is EffectStatus.UNKNOWN, po
    if fault == "after_marker":
        assert received == {}
    if fault == "after_accept":
        assert received  # the kill came after the server took a cancellation
    # a third runner changes nothing either
    assert finish(start_runner(db_url, sink, tmp_path)) == 0
    assert keys_received(sink) - placed == received
    assert asyncio.run(_cancel_snapshots(db_url, BATCH_POS)) == after_restart
    # a person's findings settle the rest; only what did not arrive is sent, under its key
    findings = {
        po: Action.RECONCILE_SENT if received[cancel.key] else Action.RECONCILE_NOT_SENT
        for po, (job, cancel) in after_restart.items()
        if job.state is State.CANCEL_UNKNOWN
    }
    asyncio.run(_settle_cancellations(db_url, findings))
    assert finish(start_runner(db_url, sink, tmp_path)) == 0
    for po, (job, cancel) in asyncio.run(_cancel_snapshots(db_url, BATCH_POS)).items():
        assert job.state is State.CANCELLED, po
        assert keys_received(sink)[cancel.key] == 1, po
        assert cancel.key.startswith(f"cancel-po:{po}:v1:"), po
    ids = [str(m["Message-ID"]) for m in sink.messages]
    assert len(ids) == len(set(ids)) == 2 * len(BATCH_POS)

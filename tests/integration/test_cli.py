"""The `manzoori` CLI as an admin runs it: a real subprocess, on SQLite and PostgreSQL.

State is set up in-process through core's use cases and core.outbox.dispatch (as the bot and the
runner would leave it); each test then asserts on what the admin sees (exit code, stdout, stderr,
JSON) and on the database afterwards. A subprocess costs ~1.5 s (imports), so each test reuses its
setup for several commands.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from alembic.script import ScriptDirectory
from cryptography.fernet import Fernet
from sqlalchemy import select

from bot.clock import Runtime, utcnow
from bot.outbox.runner import OutboxRunner
from bot.outbox.smtp import SmtpSender, SmtpServer
from core.approval import decisions, opening
from core.approval.decisions import Review
from core.approval.policies import Role, Verdict
from core.drafting.money import format_pkr
from core.errors import AmbiguousSendError, PermanentSendError, SendError
from core.jobs import closing
from core.jobs.effects import EffectStatus, message_id, send_po_key
from core.jobs.jobs import AuditEvent, Effect, Job
from core.jobs.states import State
from core.outbox import dispatch
from core.outbox.dispatch import Attempted
from store import schema
from store.migrate import alembic_config
from store.sql import SqlStore
from tests.helpers.cli import DOMAIN, MAIL_FROM, RULES, Cli, base_env, ok, plain, with_store
from tests.helpers.documents import with_document
from tests.helpers.factories import APPROVER_A, make_draft, new_job
from tests.helpers.store import grant_cast

pytestmark = pytest.mark.slow  # every test spawns `manzoori` subprocesses

LEASE = timedelta(seconds=60)
# A personal address that must reach the supplier's inbox and nothing an admin prints.
RECIPIENT = "priya.sales@hall-road.example"


# --- running the CLI ------------------------------------------------------------------------


@pytest.fixture
def cli(db_url: str, tmp_path: Path) -> Cli:
    """The CLI pointed at the test database."""
    return Cli(tmp_path, base_env(db_url))


# --- setting up state in-process ------------------------------------------------------------


async def awaiting(store: SqlStore, po: str, at: datetime) -> Job:
    """A fresh request for `po`, waiting for approval."""
    draft = make_draft(po, recipient=RECIPIENT)
    return await opening.open_job(store, new_job(), draft, at, RULES)


async def approved(store: SqlStore, po: str, at: datetime, reason: str | None = None) -> Job:
    """A request for `po` approved by APPROVER_A, its send due at `at`."""
    job = await awaiting(store, po, at)
    result = await decisions.decide(
        store,
        Review(po, APPROVER_A, Verdict.APPROVE, 1, job.draft_hash or "", reason=reason),
        at,
        RULES,
    )
    assert result.job.state is State.APPROVED
    return result.job


async def attempted(
    store: SqlStore,
    po: str,
    at: datetime,
    *,
    error: SendError | None = None,
    result: dict[str, Any] | None = None,
) -> State:
    """Approve `po` and record one send attempt ending in `error` or `result`, as a runner would."""
    await approved(store, po, at)
    [effect] = await dispatch.claim(store, at, "test-runner", LEASE, 10)
    await with_document(store, effect, at)
    order = await dispatch.start_attempt(store, effect.key, "test-runner", at, LEASE, RULES)
    assert order is not None
    return await dispatch.finish_attempt(
        store, order, Attempted("test-runner", result=result, error=error), at, RULES, 0.5
    )


async def snapshot(store: SqlStore, po: str) -> tuple[Job, list[Effect], list[AuditEvent]]:
    """The job, its outbox rows and its audit trail, as stored."""
    async with store.begin() as tx:
        job = await tx.job_by_po(po)
        assert job is not None
        return job, await tx.effects_for(job.id), await tx.audit(job.id)


def stored(db_url: str, po: str) -> tuple[Job, list[Effect], list[AuditEvent]]:
    """`snapshot`, from synchronous code."""
    return with_store(db_url, lambda store: snapshot(store, po))


def smtp_runner(store: SqlStore, host: str, port: int, timeout: float) -> OutboxRunner:
    """An in-process runner sending through the sink, with the given SMTP timeout."""
    sender = SmtpSender(
        SmtpServer(host=host, port=port, tls="none", timeout=timeout), mail_from=MAIL_FROM
    )
    return OutboxRunner(store, sender, RULES, lease=LEASE, runtime=Runtime(owner="test-runner"))


# --- db upgrade -----------------------------------------------------------------------------


def sqlite_schema(path: Path) -> tuple[set[str], list[str]]:
    """The tables of a SQLite file and the revisions in its alembic_version table."""
    with sqlite3.connect(path) as conn:
        tables = {
            row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
        }
        revisions = [row[0] for row in conn.execute("SELECT version_num FROM alembic_version")]
    return tables, revisions


def test_db_upgrade_creates_the_schema_on_a_fresh_file_and_is_harmless_twice(tmp_path):
    path = tmp_path / "fresh.db"
    cli = Cli(tmp_path, base_env(f"sqlite+aiosqlite:///{path}"))
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    expected = {*schema.metadata.tables, "alembic_version"}

    assert "database is at the latest schema" in ok(cli("db", "upgrade"))
    tables, revisions = sqlite_schema(path)
    assert expected <= tables and revisions == [head]

    assert "database is at the latest schema" in ok(cli("db", "upgrade"))
    assert sqlite_schema(path) == (tables, [head])
    assert ok(cli("jobs", "list")).strip() == "no jobs"


# --- users ----------------------------------------------------------------------------------


async def roles_and_user_audit(store: SqlStore, user_id: int) -> tuple[frozenset[Role], list[Any]]:
    """A user's roles, and every audit event not tied to a job (role changes), oldest first."""
    async with store.begin() as tx:
        roles = await tx.roles(user_id)
        t = schema.audit_events
        query = select(t).where(t.c.job_id.is_(None)).order_by(t.c.id)
        events = (await tx.conn.execute(query)).all()
    return roles, [(e.actor, e.action, e.detail) for e in events]


def test_users_grant_and_revoke_change_roles_and_write_the_audit_trail(cli, db_url):
    user = 4242
    assert ok(cli("users", "grant", str(user), "approver")).strip() == (
        f"user {user} now has role approver"
    )
    assert with_store(db_url, lambda s: roles_and_user_audit(s, user))[0] == {Role.APPROVER}

    assert "already had role approver" in ok(cli("users", "grant", str(user), "approver"))
    assert "now has role admin" in ok(cli("users", "grant", str(user), "admin"))

    invalid = cli("users", "grant", str(user), "superuser")
    assert invalid.returncode == 2  # click's usage error
    assert "'superuser' is not one of 'admin', 'approver', 'requester'" in plain(invalid.stderr)

    roles, events = with_store(db_url, lambda s: roles_and_user_audit(s, user))
    assert roles == {Role.APPROVER, Role.ADMIN}
    assert [(action, detail) for _actor, action, detail in events] == [
        ("grant_role", {"user_id": user, "role": "approver"}),
        ("grant_role", {"user_id": user, "role": "admin"}),
    ]

    assert ok(cli("users", "revoke", str(user))).strip() == (
        f"user {user} lost roles: admin, approver"
    )
    roles, events = with_store(db_url, lambda s: roles_and_user_audit(s, user))
    assert roles == frozenset()
    assert events[-1][1:] == ("revoke_roles", {"user_id": user, "roles": ["admin", "approver"]})
    assert all(actor.startswith("cli:") for actor, _action, _detail in events)

    again = cli("users", "revoke", str(user))
    assert again.returncode != 0
    assert f"error: user {user} holds no role" in again.stderr
    assert again.stdout == ""


def test_a_refused_revoke_leaves_no_audit_event(cli, db_url):
    refused = cli("users", "revoke", "5151")
    assert refused.returncode != 0 and "holds no role" in refused.stderr
    _roles, events = with_store(db_url, lambda s: roles_and_user_audit(s, 5151))
    assert events == []


# --- jobs list ------------------------------------------------------------------------------


def test_jobs_list_shows_every_job_filters_by_state_and_the_review_queue(cli, db_url):
    base = utcnow() - timedelta(minutes=10)
    refused = PermanentSendError("SMTP envelope failed: 550 5.1.1 [address]: no such user")
    lost = AmbiguousSendError("SMTP data failed: SMTPReadTimeoutError: timed out")
    receipt = {"message_id": "<x@shop.example>", "smtp_code": 250}

    async def setup(store: SqlStore) -> None:
        await grant_cast(store)
        # One at a time, so each attempt claims only its own send; newest last.
        assert await attempted(store, "PO-C", base, error=refused) is State.FAILED_FINAL
        at = base + timedelta(minutes=1)
        assert await attempted(store, "PO-D", at, error=lost) is State.UNKNOWN_OUTCOME
        at = base + timedelta(minutes=2)
        assert await attempted(store, "PO-E", at, result=receipt) is State.SENT
        await awaiting(store, "PO-A", base + timedelta(minutes=3))
        await approved(store, "PO-B", base + timedelta(minutes=4))

    with_store(db_url, setup)
    newest_first = {
        "PO-B": "APPROVED",
        "PO-A": "AWAITING_APPROVAL",
        "PO-E": "SENT",
        "PO-D": "UNKNOWN_OUTCOME",
        "PO-C": "FAILED_FINAL",
    }
    total = make_draft().total_paisa

    # upgrading a database that already holds jobs changes nothing
    ok(cli("db", "upgrade"))

    table, as_json, waiting, review, unknown = cli.all(
        ("jobs", "list"),
        ("jobs", "list", "--json"),
        ("jobs", "list", "--state", "awaiting_approval", "--json"),
        ("jobs", "list", "--review", "--json"),
        ("jobs", "list", "--state", "LOST"),
    )
    header, *lines = ok(table).splitlines()
    assert header.split() == ["PO", "STATE", "V", "SUPPLIER", "TOTAL", "UPDATED"]
    assert [line.split()[:4] for line in lines] == [
        [po, state, "1", "SUP-LHR-01"] for po, state in newest_first.items()
    ]
    assert all(format_pkr(total) in line for line in lines)

    rows = json.loads(ok(as_json))
    assert {r["po_number"]: r["state"] for r in rows} == newest_first
    assert [r["po_number"] for r in rows] == list(newest_first)
    assert {(r["supplier_id"], r["total_paisa"], r["draft_version"]) for r in rows} == {
        ("SUP-LHR-01", total, 1)
    }

    assert [(r["po_number"], r["state"]) for r in json.loads(ok(waiting))] == [
        ("PO-A", "AWAITING_APPROVAL")
    ]

    assert [(r["po_number"], r["state"]) for r in json.loads(ok(review))] == [
        ("PO-D", "UNKNOWN_OUTCOME"),
        ("PO-C", "FAILED_FINAL"),
    ]

    assert unknown.returncode != 0 and unknown.stdout == ""
    assert "unknown state 'LOST'" in unknown.stderr
    assert all(state.value in unknown.stderr for state in State)


# --- jobs show ------------------------------------------------------------------------------


def test_jobs_show_has_approvals_sends_and_audit_but_no_recipient_address(cli, db_url, smtp_sink):
    po, reason = "PO-2026-101", "within the November budget"
    decided_at = utcnow()

    async def setup(store: SqlStore) -> Job:
        await grant_cast(store)
        job = await approved(store, po, decided_at, reason)
        assert await smtp_runner(store, smtp_sink.host, smtp_sink.port, 5.0).run_once() == 1
        return job

    job = with_store(db_url, setup)
    # The address really was in the draft: the e-mail went there.
    assert [m["To"] for m in smtp_sink.messages] == [RECIPIENT]
    key = send_po_key(po, 1, job.draft_hash or "")

    shown, text, missing = cli.all(
        ("jobs", "show", po, "--json"), ("jobs", "show", po), ("jobs", "show", "PO-2026-404")
    )
    detail = json.loads(ok(shown))
    assert detail["po_number"] == po and detail["state"] == "SENT"
    assert detail["draft_version"] == 1 and detail["draft_hash"] == job.draft_hash
    assert detail["supplier_id"] == "SUP-LHR-01"
    assert detail["total_paisa"] == make_draft().total_paisa
    [approval] = detail["approvals"]
    assert approval["reviewer_id"] == APPROVER_A
    assert approval["decision"] == "approve" and approval["reason"] == reason
    assert approval["draft_hash"] == job.draft_hash
    assert datetime.fromisoformat(approval["at"]) == decided_at
    [effect] = detail["effects"]
    assert effect["idempotency_key"] == key and effect["status"] == "succeeded"
    # what the admin searches the supplier's or the relay's mail log for
    assert effect["message_id"] == effect["result"]["message_id"] == message_id(key, DOMAIN)
    assert [a["action"] for a in detail["audit"]] == [
        "receive",
        "validate",
        "research",
        "draft",
        "request_approval",
        "approve",
        "start_send",
        "mark_sent",
    ]
    assert detail["audit"][5]["actor"] == f"user:{APPROVER_A}"

    assert ok(text).splitlines()[0].split() == [po, "SENT"]
    assert key in text.stdout and str(APPROVER_A) in text.stdout and reason in text.stdout

    for result in (shown, text):
        everything = result.stdout + result.stderr
        assert RECIPIENT not in everything and "priya" not in everything

    assert missing.returncode != 0 and missing.stdout == ""
    assert "no purchase order PO-2026-404" in missing.stderr


# --- jobs reconcile and the runner ----------------------------------------------------------


def test_reconcile_sent_and_not_sent_then_the_runner_sends_exactly_once(cli, db_url, smtp_sink):
    resend, confirmed = "PO-2026-201", "PO-2026-202"

    async def setup(store: SqlStore) -> None:
        await grant_cast(store)
        for po in (resend, confirmed):
            await approved(store, po, utcnow())
            # The server swallows the data and answers too late: the outcome is unknown.
            smtp_sink.script("DATA", "554 5.0.0 lost", delay=1.0)
        assert await smtp_runner(store, smtp_sink.host, smtp_sink.port, 0.3).run_once() == 2

    with_store(db_url, setup)
    assert stored(db_url, resend)[0].state is State.UNKNOWN_OUTCOME
    assert stored(db_url, confirmed)[0].state is State.UNKNOWN_OUTCOME

    no_flag, two_flags, blank = cli.all(
        ("jobs", "reconcile", resend, "--note", "called the supplier"),
        ("jobs", "reconcile", resend, "--sent", "--failed", "--note", "called the supplier"),
        ("jobs", "reconcile", resend, "--sent", "--note", "   "),
    )
    for wrong in (no_flag, two_flags):
        assert wrong.returncode != 0
        assert "give exactly one of --sent, --resend, --failed" in wrong.stderr
    assert blank.returncode != 0 and "--note must say what was checked" in blank.stderr
    assert stored(db_url, resend)[0].state is State.UNKNOWN_OUTCOME

    note = "supplier confirmed receipt by phone"
    said = ok(cli("jobs", "reconcile", confirmed, "--sent", "--note", note))
    assert said.strip() == f"{confirmed} is now SENT"
    job, [effect], trail = stored(db_url, confirmed)
    assert job.state is State.SENT and effect.status is EffectStatus.SUCCEEDED
    assert (trail[-1].action, trail[-1].to_state) == ("reconcile_sent", State.SENT)
    assert trail[-1].detail["note"] == note and trail[-1].actor.startswith("cli:")

    said = ok(cli("jobs", "reconcile", resend, "--resend", "--note", "supplier has nothing"))
    assert said.strip() == f"{resend} is now APPROVED"
    job, [effect], trail = stored(db_url, resend)
    assert job.state is State.APPROVED and effect.status is EffectStatus.PENDING
    assert trail[-1].detail["note"] == "supplier has nothing"

    ok(
        cli(
            "runner",
            "--until-idle",
            "--max-seconds",
            "20",
            SMTP_HOST=smtp_sink.host,
            SMTP_PORT=smtp_sink.port,
            MANZOORI_POLL_SECONDS=0.1,
        )
    )
    # Only the job reconciled as not sent goes out, once, under its original key.
    [mail] = smtp_sink.messages
    assert mail["Message-ID"] == message_id(effect.key, DOMAIN)
    assert mail["Idempotency-Key"] == effect.key
    job, [effect], _trail = stored(db_url, resend)
    assert job.state is State.SENT
    assert effect.status is EffectStatus.SUCCEEDED
    job, [effect], _trail = stored(db_url, confirmed)
    assert job.state is State.SENT and effect.attempts == 1

    settled = cli("jobs", "reconcile", confirmed, "--failed", "--note", "changed my mind")
    assert settled.returncode != 0
    assert f"{confirmed} is SENT, not UNKNOWN_OUTCOME" in settled.stderr
    assert stored(db_url, confirmed)[0].state is State.SENT


# --- jobs cancel ----------------------------------------------------------------------------


def test_jobs_cancel_withdraws_a_job_and_its_open_send(cli, db_url):
    waiting, ready = "PO-2026-301", "PO-2026-302"

    async def setup(store: SqlStore) -> None:
        await grant_cast(store)
        await awaiting(store, waiting, utcnow())
        await approved(store, ready, utcnow())

    with_store(db_url, setup)

    said = ok(cli("jobs", "cancel", waiting, "--note", "duplicate of PO-2026-300"))
    assert said.strip() == f"{waiting} is now CANCELLED"
    job, effects, trail = stored(db_url, waiting)
    assert job.state is State.CANCELLED and effects == []
    assert (trail[-1].action, trail[-1].detail["note"]) == ("cancel", "duplicate of PO-2026-300")
    assert trail[-1].actor.startswith("cli:")

    assert "is now CANCELLED" in ok(cli("jobs", "cancel", ready, "--note", "supplier closed"))
    job, [effect], _trail = stored(db_url, ready)
    assert job.state is State.CANCELLED and effect.status is EffectStatus.CANCELLED

    again = cli("jobs", "cancel", waiting, "--note", "twice")
    assert again.returncode != 0 and f"{waiting} is already cancelled." in again.stderr


def test_reissue_puts_an_expired_job_up_for_approval_again(cli, db_url):
    po = "PO-2026-311"

    async def setup(store: SqlStore) -> None:
        await grant_cast(store)
        await awaiting(store, po, utcnow() - timedelta(days=2))
        await closing.expire_due(store, utcnow())

    with_store(db_url, setup)
    blank, fresh = cli.all(
        ("jobs", "reissue", po, "--note", " "), ("jobs", "cancel", po, "--note", "")
    )
    assert blank.returncode != 0 and "--note must say" in blank.stderr
    assert fresh.returncode != 0 and "--note must say" in fresh.stderr
    assert stored(db_url, po)[0].state is State.EXPIRED

    said = ok(cli("jobs", "reissue", po, "--note", "supplier confirmed the prices still hold"))
    assert said.strip() == f"{po} v2 is now AWAITING_APPROVAL"
    job, _effects, trail = stored(db_url, po)
    assert (job.state, job.draft_version) == (State.AWAITING_APPROVAL, 2)
    assert (trail[-1].action, trail[-1].detail["note"]) == (
        "revise",
        "supplier confirmed the prices still hold",
    )
    again = cli("jobs", "reissue", po, "--note", "twice")
    assert again.returncode != 0 and "not allowed from AWAITING_APPROVAL" in again.stderr


def test_commands_before_db_upgrade_say_so_in_one_line(tmp_path):
    cli = Cli(tmp_path, base_env(f"sqlite+aiosqlite:///{tmp_path / 'empty.db'}"))
    listing, bad_id = cli.all(("jobs", "list"), ("users", "grant", "0", "admin"))
    assert listing.returncode == 1
    assert listing.stderr.startswith("error: database: no such table: jobs")
    assert "manzoori db upgrade" in listing.stderr and "Traceback" not in listing.stderr
    assert bad_id.returncode == 2 and "'0' is not a Telegram user id" in plain(bad_id.stderr)


# --- configuration --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (None, "missing — run `manzoori init`"),  # unset: point at `init`
        ("not-a-fernet-key", "not 32 bytes of URL-safe base64"),  # malformed: say why
    ],
)
def test_a_missing_or_malformed_data_key_is_named_and_nothing_is_touched(tmp_path, value, reason):
    path = tmp_path / "untouched.db"
    cli = Cli(tmp_path, base_env(f"sqlite+aiosqlite:///{path}"))
    result = cli("jobs", "list", MANZOORI_DATA_KEY=value)
    assert result.returncode != 0 and result.stdout == ""
    assert f"MANZOORI_DATA_KEY: {reason}" in result.stderr
    assert "Traceback" not in result.stderr
    if value is not None:
        assert value not in result.stderr  # a key is never echoed, even a broken one
    assert not path.exists()


# --- init -----------------------------------------------------------------------------------


def env_keys(path: Path) -> dict[str, str]:
    """The key variables a written settings file sets."""
    pairs = (line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)
    return {
        name: value for name, value in pairs if name in ("MANZOORI_SECRET_KEY", "MANZOORI_DATA_KEY")
    }


def test_init_writes_fresh_keys_and_never_overwrites_without_force(tmp_path):
    cli = Cli(tmp_path, base_env("sqlite+aiosqlite:///unused.db"))
    target = tmp_path / "manzoori.env"

    said = ok(cli("init", "--path", "manzoori.env"))
    assert "wrote manzoori.env with new MANZOORI_SECRET_KEY and MANZOORI_DATA_KEY" in said
    assert target.stat().st_mode & 0o777 == 0o600
    keys = env_keys(target)
    assert set(keys) == {"MANZOORI_SECRET_KEY", "MANZOORI_DATA_KEY"}
    assert len(set(keys.values())) == 2
    for key in keys.values():
        Fernet(key)  # raises unless it is a usable key
    written = target.read_bytes()

    again = cli("init", "--path", "manzoori.env")
    assert again.returncode != 0
    assert "manzoori.env exists; pass --force to overwrite it" in again.stderr
    assert target.read_bytes() == written

    ok(cli("init", "--path", "manzoori.env", "--force"))
    assert set(env_keys(target).values()).isdisjoint(keys.values())


def test_the_runner_logs_one_json_object_a_line_with_the_po(cli, db_url, smtp_sink):
    po = "PO-2026-301"

    async def setup(store: SqlStore) -> None:
        await grant_cast(store)
        await approved(store, po, utcnow())

    with_store(db_url, setup)
    done = cli(
        "runner", "--until-idle", "--max-seconds", "20", SMTP_HOST=smtp_sink.host,
        SMTP_PORT=smtp_sink.port, MANZOORI_POLL_SECONDS=0.1, MANZOORI_LOG_FORMAT="json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stderr.splitlines()]
    job, _, _ = stored(db_url, po)
    [sent] = [line for line in lines if line["message"].endswith("-> SENT")]
    assert (sent["po_number"], sent["job_id"], sent["level"]) == (po, job.id, "INFO")
    assert all({"time", "level", "logger", "message"} <= set(line) for line in lines)
    assert "orders@supplier.example" not in done.stderr  # no addresses

"""Random interleavings of the whole workflow, checked against the database and a real SMTP server.

A hypothesis state machine opens, revises, reissues, approves, rejects, trims (in the Mini App)
and cancels purchase orders, calls sent ones off (their supplier e-mailed a cancellation),
revokes and restores approvers, hands approvals over while someone is away and takes them back
(a delegator and their delegate are one person on a request), moves the clock, runs the outbox
runner against one running SMTP sink (which may answer 451, 550, or too late), kills "ghost"
runners mid-attempt, and reconciles unknown outcomes (a cancellation's as well) the way a
careful person would.
After every step the invariants are read back from the database and the sink; they run on
SQLite and, with TEST_POSTGRES_URL, on PostgreSQL.

The only model kept is what the system cannot know: which ghost still holds a delivered e-mail
it has not reported, and how many e-mails each job had when it was closed. Whether an e-mail was
delivered is read from the sink, which plays the supplier's inbox."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import Counter
from collections.abc import Coroutine
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from cryptography.fernet import Fernet
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)
from sqlalchemy import select, text

from bot.clock import Runtime
from bot.dev.smtp import SmtpSink, running_sink
from bot.outbox.runner import OutboxRunner
from bot.outbox.smtp import SmtpSender, SmtpServer
from core.approval import decisions as deciding
from core.approval import opening
from core.approval.decisions import Review
from core.approval.delegations import Delegation
from core.approval.opening import Revision
from core.approval.policies import (
    DEFAULT_GROUP,
    ApprovalPolicy,
    Decision,
    Outcome,
    Role,
    Rules,
    Verdict,
)
from core.approval.routes import route_for
from core.approval.standing import route_of
from core.approval.tally import People, tally
from core.drafting.drafts import Draft, draft_hash
from core.errors import (
    AlreadyDecided,
    ApprovalExpired,
    CancelRefused,
    DelegationRefused,
    DraftChanged,
    DuplicatePurchaseOrder,
    EditRefused,
    IllegalTransition,
    LeaseLost,
    NotAnApprover,
    ReconcileRefused,
    SelfApproval,
    SendError,
    UnknownJob,
)
from core.jobs import closing
from core.jobs.effects import (
    OPEN_STATUSES,
    EffectKind,
    EffectStatus,
    cancel_po_key,
    message_id,
    send_po_key,
)
from core.jobs.jobs import Effect, Job, NewJob, SendOrder, Stamp
from core.jobs.states import CALLING_OFF, TRANSITIONS, Action, State
from core.outbox import calling_off, dispatch
from core.outbox.calling_off import NOTICE_ATTEMPT, NOTICE_RETRY, CallOff
from core.outbox.dispatch import Attempted
from core.people import delegating
from core.purchasing.edits import Edit, LineChange, approve_with_changes, edited_draft
from store import schema
from store.engine import make_engine
from store.migrate import upgrade
from store.sql import SqlStore
from tests.helpers.documents import with_document
from tests.helpers.factories import (
    APPROVER_A,
    APPROVER_B,
    FAST_RETRY,
    OUTSIDER,
    REQUESTER,
    Clock,
    make_draft,
)

TTL = timedelta(hours=24)
RULES = Rules(
    approval=ApprovalPolicy(ttl=TTL, dual_above_paisa=500_000 * 100),
    retry=FAST_RETRY,
)
LEASE = timedelta(seconds=60)
DEFAULT_POLICY = RULES.approval.default_policy


def _required(total: int) -> int:
    """Approvals the default policy's one stage needs for a total (the model's view)."""
    (stage,) = route_for(RULES.approval.default_policy, total, "SUP-1").stages
    return stage.approvals


DOMAIN = "shop.example"
# Small, so an answer that comes too late costs the test little; LATE is well past it.
CLIENT_TIMEOUT = 0.3
LATE = 0.5
_TABLES = "audit_events, decisions, effects, drafts, user_roles, delegations, jobs"

POS = ("PO-A", "PO-B", "PO-C")
NEVER_OPENED = "PO-Z"
# Mostly real purchase orders; now and then one nobody opened.
TARGETS = (*POS, *POS, *POS, NEVER_OPENED)
# make_draft adds PKR 9,000 of chargers: 400 units at PKR 1,250 or more cross PKR 500,000,
# so some drafts need two approvers and a revision can move a job across the threshold.
QUANTITIES = (4, 40, 400)
UNIT_PRICES = (125_000, 150_000)
# An approver may also request; then approving their own request is a self-approval.
REQUESTERS = (REQUESTER, REQUESTER, APPROVER_A)
REVIEWERS = (APPROVER_A, APPROVER_B, REQUESTER, OUTSIDER)
APPROVERS = (APPROVER_A, APPROVER_B)
STEPS = (
    timedelta(seconds=13),  # a first retry (10 s + 2 s of jitter) is due
    timedelta(seconds=61),  # a ghost's lease has run out
    timedelta(hours=6),
    TTL + timedelta(seconds=1),  # every approval and decision window so far is over
)
# command, answer, delay: how the sink answers the next attempt.
FAILURES = {
    "451": ("DATA", "451 4.3.0 Try again later", 0.0),
    "550": ("RCPT", "550 5.1.1 No such user", 0.0),
    "late-accepted": ("DATA", "250 2.0.0 Ok: queued", LATE),  # delivered; the client never hears
    "late-refused": ("DATA", "554 5.0.0 Lost it", LATE),  # not delivered; nor does it hear that
}
GHOST_STAGES = ("claimed", "marked", "delivered", "zombie")
# A zombie (a ghost that reports late) needs the most steps after it, so it comes twice; and
# twice a ghost's lease runs out at once and a pass recovers its attempt (the crash path).
GHOSTS = (
    *(f"ghost-{stage}" for stage in (*GHOST_STAGES, "zombie")),
    "ghost-marked+recovery",
    "ghost-delivered+recovery",
)
# What a pass with something due meets: mostly a healthy server; the late answers cost time.
TROUBLE = (None, None, None, *sorted(FAILURES), *GHOSTS)
RECONCILE_ACTIONS = (Action.RECONCILE_SENT, Action.RECONCILE_NOT_SENT, Action.RECONCILE_FAILED)
# Swarm testing switches whole rules off, so the chores a stuck job needs come from two rules.
CHORES = ("reconcile", "reconcile", "reissue", "reissue", "cancel", "toggle")
# What an edit leaves of a line: dropped, one, or 390 of 400 (dual still at PKR 1,500 a unit).
KEEP = (0, 1, 390)
# A cancellation or a role change ends many paths; a few per example leave room for the rest.
MAX_CANCELS = 1
MAX_ROLE_CHANGES = 2

_DECIDED = frozenset(State) - {State.AWAITING_APPROVAL, State.EXPIRED}
_UNCHANGED_KEEPS_VERSION = frozenset({State.DRAFTED, State.AWAITING_APPROVAL, State.APPROVED})
_REISSUABLE = frozenset({State.EXPIRED, State.FAILED_RETRYABLE, State.FAILED_FINAL})
_QUIET = frozenset({State.REJECTED, State.CANCELLED, State.EXPIRED})
_NON_TRANSITIONS = {"receive", "record_approval", "grant_role", "revoke_roles"}
# Audit events about a CANCELLING job that do not move it: its cancellation's attempts, retries.
_UNMOVED = {"record_approval": State.AWAITING_APPROVAL} | dict.fromkeys(
    (NOTICE_ATTEMPT, NOTICE_RETRY), State.CANCELLING
)
# States a cancellation refuses with its reason: closed already, or a send in flight.
_NOT_WITHDRAWN = frozenset({State.CANCELLED, State.SENDING, State.UNKNOWN_OUTCOME, State.REJECTED})
# Why an admin calls a sent PO off; a blank one is refused (it goes in the supplier's e-mail).
CALL_OFF_REASONS = ("ordered twice", "", "ordered twice")


@dataclass
class World:
    """What outlives one example: the database to use and the supplier's inbox."""

    db_url: str
    sink: SmtpSink
    tmp: Path
    examples: int = 0
    seen: Counter[str] = field(default_factory=Counter)
    quiet_at: float = 0.0  # time.monotonic() by which every late SMTP session has finished

    def expect_late_answers(self) -> None:
        """A send may still be in the server's hands; note when it surely has been recorded."""
        self.quiet_at = time.monotonic() + LATE

    def settle(self) -> None:
        """Wait until the inbox holds everything the server was given (a careful person waits
        for the supplier's answer before reconciling)."""
        time.sleep(max(0.0, self.quiet_at - time.monotonic()))

    def fresh_url(self) -> str:
        """A new SQLite file for this example; PostgreSQL is truncated instead."""
        if not self.db_url.startswith("sqlite"):
            return self.db_url
        return f"sqlite+aiosqlite:///{self.tmp / f'example-{self.examples}.db'}"


@dataclass(frozen=True)
class Zombie:
    """A ghost runner that delivered an e-mail and has not reported it yet."""

    owner: str
    order: SendOrder
    result: dict[str, Any]


@dataclass(frozen=True)
class AuditRow:
    """One line of the audit trail as stored."""

    id: int
    job_id: str | None
    at: datetime
    actor: str
    action: str
    source: State | None
    target: State | None
    detail: dict[str, Any]


@dataclass(frozen=True)
class Snapshot:
    """Everything the database holds, read in one transaction."""

    jobs: dict[str, Job]  # by PO number
    effects: dict[str, Effect]  # by key
    decisions: dict[str, list[Decision]]  # by job id
    drafts: dict[tuple[str, int], tuple[str, int]]  # (job id, version) -> (hash, total)
    audit: list[AuditRow]  # oldest first
    roles: dict[int, frozenset[Role]]  # the cast's roles now
    delegations: list[Delegation]  # every hand-over, ended or not

    def people(self, job: Job, until: datetime, *, closed: bool = True) -> People:
        """Who are one person on the job: pairs whose delegation was active at some time from
        its request to `until` (before `until`, if not `closed`: a decided job's last
        decision), the model's view of core.approval.tally.People."""
        return People(
            frozenset(
                (d.delegator, d.delegate)
                for d in self.delegations
                if d.overlaps(job.created_at, until, closed=closed)
            )
        )

    def active(self, now: datetime) -> list[Delegation]:
        """The hand-overs in force now."""
        return [d for d in self.delegations if d.active(now)]

    def effects_of(self, job: Job) -> list[Effect]:
        """The job's outbox rows."""
        return [e for e in self.effects.values() if e.job_id == job.id]

    def is_approver(self, user: int) -> bool:
        """Whether the user holds the approver role now."""
        return Role.APPROVER in self.roles.get(user, frozenset())


async def read_snapshot(store: SqlStore) -> Snapshot:
    """Read jobs, outbox, decisions, drafts, roles and the audit trail."""
    async with store.begin() as tx:
        jobs = await tx.list_jobs(None, 100)
        effects: dict[str, Effect] = {}
        decisions: dict[str, list[Decision]] = {}
        for job in jobs:
            effects.update({e.key: e for e in await tx.effects_for(job.id)})
            decisions[job.id] = await tx.decisions(job.id)
        d, a = schema.drafts, schema.audit_events
        rows = await tx.conn.execute(select(d.c.job_id, d.c.version, d.c.hash, d.c.total_paisa))
        drafts = {(r.job_id, r.version): (r.hash, r.total_paisa) for r in rows}
        audit = [
            AuditRow(
                r.id,
                r.job_id,
                r.at,
                r.actor,
                r.action,
                r.from_state and State(r.from_state),
                r.to_state and State(r.to_state),
                r.detail,
            )
            for r in await tx.conn.execute(select(a).order_by(a.c.id))
        ]
        u = schema.user_roles
        held: dict[int, set[Role]] = {}
        for user, role in await tx.conn.execute(select(u.c.user_id, u.c.role)):
            held.setdefault(user, set()).add(Role(role))
        roles = {user: frozenset(held.get(user, ())) for user in REVIEWERS}
        delegations = await tx.delegations_since(datetime.min.replace(tzinfo=UTC))
    return Snapshot(
        {j.po_number: j for j in jobs}, effects, decisions, drafts, audit, roles, delegations
    )


def job_id(po: str) -> str:
    """A stable job id per PO number, so a failing example replays identically."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"manzoori:{po}"))


def is_due(effect: Effect, now: datetime) -> bool:
    """Whether a runner pass at `now` would claim or recover the row."""
    if effect.status is EffectStatus.PENDING:
        return effect.next_attempt_at is not None and effect.next_attempt_at <= now
    if effect.status in (EffectStatus.CLAIMED, EffectStatus.STARTED):
        return effect.lease_until is not None and effect.lease_until < now
    return False


def decide_refusal(
    snap: Snapshot, job: Job | None, reviewer: int, version: int, reviewed: str, now: datetime
) -> type[Exception] | None:
    """The error a decision must raise, in the order the rules are documented; None if it counts."""
    if job is None:
        return UnknownJob
    if not snap.is_approver(reviewer):
        return NotAnApprover
    if reviewer == job.requester_id:
        return SelfApproval
    if job.state in _DECIDED:
        return AlreadyDecided
    if job.state is State.EXPIRED:
        return ApprovalExpired
    if (job.draft_version, job.draft_hash) != (version, reviewed):
        return DraftChanged
    mine = (reviewer, version, reviewed)
    if any((d.reviewer_id, d.draft_version, d.draft_hash) == mine for d in snap.decisions[job.id]):
        return AlreadyDecided
    assert job.decision_deadline is not None
    if now >= job.decision_deadline:
        return ApprovalExpired
    one = snap.people(job, now)
    if one.of(reviewer) == one.of(job.requester_id):
        return SelfApproval  # through a delegate
    counted = {
        one.of(d.reviewer_id)
        for d in snap.decisions[job.id]
        if (d.draft_version, d.draft_hash) == (version, reviewed)
        and d.verdict is Verdict.APPROVE
        and d.at <= now < d.expires_at
        and snap.is_approver(d.reviewer_id)
    }
    if one.of(reviewer) in counted:
        return AlreadyDecided  # their person counts already
    return None


def expected_after_decision(
    snap: Snapshot, job: Job, decisions: list[Decision], now: datetime
) -> State:
    """Where the decisions on the current draft leave the job, counted by hand."""
    # Only people who are approvers now count: an approval by someone revoked since is void.
    assert job.total_paisa is not None
    current = (job.draft_version, job.draft_hash)
    live = [
        d
        for d in decisions
        if (d.draft_version, d.draft_hash) == current
        and d.at <= now < d.expires_at
        and snap.is_approver(d.reviewer_id)
    ]
    if any(d.verdict is Verdict.REJECT for d in live):
        return State.REJECTED
    one = snap.people(job, now)
    approvers = {
        one.of(d.reviewer_id)
        for d in live
        if d.verdict is Verdict.APPROVE and one.of(d.reviewer_id) != one.of(job.requester_id)
    }  # distinct people: a delegator and delegate are one
    if len(approvers) >= _required(job.total_paisa):
        return State.APPROVED
    return State.AWAITING_APPROVAL


def parse_key(key: str, kind: str = EffectKind.SEND_PO) -> tuple[str, int, str]:
    """PO number, draft version and hash prefix of a send-po (or `kind`) idempotency key."""
    named, po, version, prefix = key.split(":")
    assert named == kind and version.startswith("v"), key
    return po, int(version[1:]), prefix


def is_cancellation(mail: EmailMessage) -> bool:
    """Whether the e-mail calls a PO off (a cancel-po key), rather than places it."""
    return str(mail["Idempotency-Key"]).startswith(f"{EffectKind.CANCEL_PO}:")


def roles_before(audit: list[AuditRow], event_id: int) -> dict[int, set[Role]]:
    """Who held which role just before an audit event, replayed from the grants and revokes."""
    roles: dict[int, set[Role]] = {}
    for row in audit:
        if row.id >= event_id:
            break
        if row.action == "grant_role":
            roles.setdefault(row.detail["user_id"], set()).add(Role(row.detail["role"]))
        elif row.action == "revoke_roles":
            roles[row.detail["user_id"]] = set()
    return roles


class Workflow(RuleBasedStateMachine):
    """Purchase orders under random requests, decisions, time, sends, failures and crashes."""

    def __init__(self, world: World) -> None:
        super().__init__()
        self.world = world
        self.loop = asyncio.Runner()
        self.clock = Clock()
        world.examples += 1
        url = world.fresh_url()
        # Each example mails from its own domain: a late session of an earlier example that
        # lands in the shared inbox now is told apart by its From and its Message-ID.
        self.domain = f"ex{world.examples}.{DOMAIN}"
        self.store = SqlStore(make_engine(url), Fernet.generate_key())
        self.run(self._prepare(url))
        self.sender = SmtpSender(
            SmtpServer(
                host=world.sink.host, port=world.sink.port, tls="none", timeout=CLIENT_TIMEOUT
            ),
            mail_from=f"orders@{self.domain}",
        )
        self.runner = OutboxRunner(
            self.store,
            self.sender,
            RULES,
            lease=LEASE,
            runtime=Runtime(owner="runner", now=self.clock, rand=lambda: 0.5),
        )
        self.ghosts = self.cancels = self.role_changes = 0
        self.zombies: list[Zombie] = []
        # job id -> {draft version when it was closed: e-mails of versions up to it, then}
        self.closed: dict[str, dict[int, int]] = {}
        self.snap = self.read()

    async def _prepare(self, url: str) -> None:
        if url.startswith("sqlite"):
            await upgrade(self.store.engine)
        else:
            # TRUNCATE fires no row triggers, so the append-only tables empty too.
            async with self.store.engine.begin() as conn:
                await conn.execute(text(f"TRUNCATE {_TABLES} RESTART IDENTITY CASCADE"))
        async with self.store.begin() as tx:
            await tx.grant(REQUESTER, Role.REQUESTER, "test", self.clock())
            await tx.grant(APPROVER_A, Role.APPROVER, "test", self.clock())
            await tx.grant(APPROVER_B, Role.APPROVER, "test", self.clock())

    def teardown(self) -> None:
        self.world.seen["e-mails delivered"] += len(self.mails())
        for job in self.snap.jobs.values():
            self.world.seen[f"ended {job.state.value}"] += 1
        lost = {
            r.detail.get("key")
            for r in self.snap.audit
            if r.action == "mark_unknown" and r.actor == "runner:recovery"
        }
        delivered = {m["Idempotency-Key"] for m in self.mails()}
        self.world.seen["examples recovering a delivered attempt"] += bool(lost & delivered)
        try:
            self.run(self.store.close())
        finally:
            self.loop.close()

    # -- helpers ---------------------------------------------------------------------------

    def run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        """Run a coroutine on this example's event loop."""
        return self.loop.run(coro)

    def refused(self, error: type[Exception], coro: Coroutine[Any, Any, Any]) -> None:
        """Run `coro` and insist it raises exactly `error`."""
        with pytest.raises(error) as info:
            self.run(coro)
        assert type(info.value) is error, f"expected {error.__name__}, got {info.value!r}"
        self.seen(f"refused: {error.__name__}")

    def seen(self, what: str) -> None:
        """Count a path taken, for hypothesis's statistics and the coverage check."""
        event(what)
        self.world.seen[what] += 1

    def read(self) -> Snapshot:
        """A fresh snapshot of the database."""
        return self.run(read_snapshot(self.store))

    def mails(self) -> list[EmailMessage]:
        """What reached the supplier's inbox during this example."""
        sender = f"orders@{self.domain}"
        return [m for m in list(self.world.sink.messages) if m["From"] == sender]

    def delivered(self, key: str) -> int:
        """How many e-mails with this idempotency key reached the inbox."""
        return sum(1 for m in self.mails() if m["Idempotency-Key"] == key)

    def due(self) -> bool:
        """Whether a runner pass now has an outbox row to work on."""
        return any(is_due(e, self.clock()) for e in self.snap.effects.values())

    def in_state(self, state: State) -> list[Job]:
        """Jobs in one state, by PO number."""
        jobs = (j for j in self.snap.jobs.values() if j.state is state)
        return sorted(jobs, key=lambda j: j.po_number)

    def unscript(self) -> None:
        """Forget a scripted answer the pass never used (no attempt reached that command)."""
        self.world.sink.unscript()

    # -- requests --------------------------------------------------------------------------

    @initialize(
        requests=st.lists(
            st.tuples(
                st.sampled_from(REQUESTERS),
                st.sampled_from(QUANTITIES),
                st.sampled_from(UNIT_PRICES),
                st.integers(0, len(APPROVERS)),
            ),
            min_size=2,
            max_size=len(POS),
        ),
        trouble=st.sampled_from(TROUBLE),
    )
    def first_requests(self, requests: list[tuple[int, int, int, int]], trouble: str | None):
        """Some purchase orders are already waiting when the example starts, some approved and
        passed to the runner (swarm testing may switch rules off, never the initial step)."""
        for po, (requester, quantity, price, approvals) in zip(POS, requests, strict=False):
            self.open_job(po, requester, quantity, price, same_input=True)
            for _ in range(approvals):
                self.snap = self.read()
                self.approve_waiting(po)
        self.snap = self.read()
        if self.due():
            self.run_pass(trouble)
            self.snap = self.read()

    @rule(
        po=st.sampled_from(POS),
        requester=st.sampled_from(REQUESTERS),
        quantity=st.sampled_from(QUANTITIES),
        price=st.sampled_from(UNIT_PRICES),
        same_input=st.booleans(),
    )
    def open_job(self, po: str, requester: int, quantity: int, price: int, same_input: bool):
        """A request arrives (again, or from another file with a taken PO number)."""
        existing = self.snap.jobs.get(po)
        ref = f"tg-file:{po}" if existing is None or same_input else f"tg-file:{po}:other"
        new = NewJob(job_id(po), requester, ref, {"supplier_terms": "terms-2026-11"})
        draft = make_draft(po, quantity=quantity, unit_price_paisa=price)
        call = opening.open_job(self.store, new, draft, self.clock(), RULES)
        if existing is not None and not same_input:
            return self.refused(DuplicatePurchaseOrder, call)
        job = self.run(call)
        if existing is not None:
            assert job == existing, "a repeated request must not change the job"
            return self.seen("open: repeat")
        assert job.state is State.AWAITING_APPROVAL
        assert (job.draft_version, job.draft_hash) == (1, draft_hash(draft))
        assert job.decision_deadline == self.clock() + TTL
        self.seen("open: dual" if _required(draft.total_paisa) == 2 else "open")

    @rule(
        po=st.sampled_from(TARGETS),
        quantity=st.sampled_from(QUANTITIES),
        price=st.sampled_from(UNIT_PRICES),
    )
    def revise(self, po: str, quantity: int, price: int) -> None:
        """The requester sends a new draft (or the same one again)."""
        job = self.snap.jobs.get(po)
        draft = make_draft(po, quantity=quantity, unit_price_paisa=price)
        call = opening.revise(
            self.store, po, Revision(draft), Stamp("user:1001", self.clock()), RULES
        )
        if job is None:
            return self.refused(UnknownJob, call)
        if job.draft_hash == draft_hash(draft) and job.state in _UNCHANGED_KEEPS_VERSION:
            assert self.run(call) == job, "the same draft again changes nothing"
            return self.seen("revise: same draft")
        self.check_new_version(job, call, f"revise from {job.state.value}", refuse=False)

    def check_new_version(
        self, job: Job, call: Coroutine[Any, Any, Job], what: str, refuse: bool
    ) -> None:
        """A new draft version waits for approval afresh; where the table forbids it, refused."""
        if refuse or (job.state, Action.REVISE) not in TRANSITIONS:
            return self.refused(IllegalTransition, call)
        moved = self.run(call)
        assert moved.state is State.AWAITING_APPROVAL
        assert moved.draft_version == (job.draft_version or 0) + 1
        assert moved.decision_deadline == self.clock() + TTL
        self.seen(what)

    @rule(
        po=st.sampled_from(TARGETS),
        reviewer=st.sampled_from(REVIEWERS),
        verdict=st.sampled_from(Verdict),
        stale=st.booleans(),
        anyone=st.booleans(),
    )
    def decide(self, po: str, reviewer: int, verdict: Verdict, stale: bool, anyone: bool) -> None:
        """Anyone presses approve or reject, on the current draft or an older one; or, more
        usefully, an approver who has not decided yet approves a waiting request."""
        if anyone or not self.in_state(State.AWAITING_APPROVAL):
            return self.decide_on(po, reviewer, verdict, stale)
        self.approve_waiting(po)

    def approve_waiting(self, po: str) -> None:
        """An approver who may and has not yet decided approves a waiting request (this one's
        if it waits; a fallback reviewer is refused when nobody may)."""
        awaiting = self.in_state(State.AWAITING_APPROVAL)
        if not awaiting:
            return
        job = next((j for j in awaiting if j.po_number == po), awaiting[0])
        current = (job.draft_version, job.draft_hash)
        decided = {
            d.reviewer_id
            for d in self.snap.decisions[job.id]
            if (d.draft_version, d.draft_hash) == current
        }
        unwilling = decided | {job.requester_id}
        willing = [r for r in APPROVERS if r not in unwilling and self.snap.is_approver(r)]
        self.decide_on(job.po_number, willing[0] if willing else APPROVERS[0], Verdict.APPROVE)

    def decide_on(self, po: str, reviewer: int, verdict: Verdict, stale: bool = False) -> None:
        """Decide, and check the refusal or the job's new state against the rules."""
        now, job = self.clock(), self.snap.jobs.get(po)
        version, reviewed = 1, "0" * 64
        if job is not None:
            assert job.draft_version is not None and job.draft_hash is not None
            version, reviewed = job.draft_version, job.draft_hash
            if stale and version > 1:
                version -= 1
                reviewed = self.snap.drafts[(job.id, version)][0]
        refusal = decide_refusal(self.snap, job, reviewer, version, reviewed, now)
        call = deciding.decide(
            self.store, Review(po, reviewer, verdict, version, reviewed), now, RULES
        )
        if refusal is not None:
            self.refused(refusal, call)
            if refusal is ApprovalExpired and job and job.state is State.AWAITING_APPROVAL:
                assert self.read().jobs[po].state is State.EXPIRED  # a late decision closes it
            return
        result = self.run(call)
        assert job is not None and job.total_paisa is not None
        expected = expected_after_decision(
            self.snap, job, [*self.snap.decisions[job.id], result.decision], now
        )
        assert result.job.state is expected, (result.job.state, expected)
        if expected is State.APPROVED:
            key = send_po_key(po, version, reviewed)
            assert self.read().effects[key].status is EffectStatus.PENDING
        dual = " (dual)" if _required(job.total_paisa) == 2 else ""
        self.seen(f"decided: {expected.value}{dual}")

    @rule(po=st.sampled_from(POS), line=st.integers(1, 2), keep=st.sampled_from(KEEP))
    def edit(self, po: str, line: int, keep: int) -> None:
        """An approver trims a line of a request in the Mini App (to `keep` units; 0 drops it)
        and approves what is left: checked as their approval of the draft shown, then a new
        version that the default policy's one stage counts them on."""
        awaiting = self.in_state(State.AWAITING_APPROVAL)
        job = next((j for j in awaiting if j.po_number == po), None) or self.snap.jobs.get(po)
        if job is None or job.draft_version is None or job.draft_hash is None:
            return
        now, version, shown_hash = self.clock(), job.draft_version, job.draft_hash
        editor = next(r for r in APPROVERS if r != job.requester_id)
        change = (LineChange(line, keep),)
        refusal = decide_refusal(self.snap, job, editor, version, shown_hash, now)
        if refusal is None:
            try:
                edited_draft(self.run(self.shown(job)), change)
            except EditRefused:
                refusal = EditRefused  # line 2 gone already, or the quantity unchanged or more
        call = approve_with_changes(
            self.store, Edit(po, editor, version, shown_hash, change), now, RULES
        )
        if refusal is not None:
            self.refused(refusal, call)
            if refusal is ApprovalExpired and job.state is State.AWAITING_APPROVAL:
                assert self.read().jobs[po].state is State.EXPIRED  # a late edit closes it
            return
        edited = self.run(call)
        assert edited.job.draft_version == version + 1 and edited.approval is not None
        assert edited.job.total_paisa is not None
        one = _required(edited.job.total_paisa) == 1
        assert edited.job.state is (State.APPROVED if one else State.AWAITING_APPROVAL)
        self.seen(f"edited: {edited.job.state.value}")

    async def shown(self, job: Job) -> Draft:
        """The job's current draft, as the page showed it."""
        async with self.store.reading() as tx:
            return await tx.draft(job.id, job.draft_version or 0)

    @rule(
        chore=st.sampled_from(CHORES),
        po=st.sampled_from(TARGETS),
        who=st.sampled_from(APPROVERS),
        flag=st.booleans(),
    )
    def admin(self, chore: str, po: str, who: int, flag: bool) -> None:
        """An operator reconciles, reissues, cancels, or revokes or restores an approver (the
        last two rarely: each closes many paths)."""
        if chore == "reconcile":
            action = RECONCILE_ACTIONS[(who == APPROVER_B) + flag]
            return self.reconcile_one(po, flag, action)
        if chore == "cancel" and self.cancels < MAX_CANCELS:
            self.cancels += 1
            return self.cancel(po)
        if chore == "toggle" and self.role_changes < MAX_ROLE_CHANGES:
            self.role_changes += 1
            return self.toggle_approver(who)
        self.reissue(po)

    def reissue(self, po: str) -> None:
        """An operator puts an expired or failed job's draft up for approval again."""
        closed = [j for j in self.snap.jobs.values() if j.state in _REISSUABLE]
        job = next((j for j in closed if j.po_number == po), None) or (
            closed[0] if closed else self.snap.jobs.get(po)
        )
        po = job.po_number if job else po
        call = opening.reissue(self.store, po, "again", Stamp("cli:ops", self.clock()), RULES)
        if job is None:
            return self.refused(UnknownJob, call)
        keeps = job.state in _UNCHANGED_KEEPS_VERSION  # nothing to issue again: it is current
        self.check_new_version(job, call, f"reissue from {job.state.value}", refuse=keeps)

    def cancel(self, po: str) -> None:
        """An admin withdraws a request."""
        job = self.snap.jobs.get(po)
        call = closing.cancel(self.store, po, "withdrawn", Stamp("cli:ops", self.clock()))
        if job is None:
            return self.refused(UnknownJob, call)
        if (job.state, Action.CANCEL) not in TRANSITIONS:
            return self.refused(IllegalTransition, call)
        assert self.run(call).state is State.CANCELLED
        self.seen(f"cancel from {job.state.value}")

    def toggle_approver(self, who: int) -> None:
        """An admin revokes an approver, or gives the role back."""

        async def toggle() -> None:
            async with self.store.begin() as tx:
                if self.snap.is_approver(who):
                    await tx.revoke(who, "cli:admin", self.clock())
                else:
                    await tx.grant(who, Role.APPROVER, "cli:admin", self.clock())

        self.run(toggle())
        self.seen("approver revoked" if self.snap.is_approver(who) else "approver restored")

    # -- delegation ------------------------------------------------------------------------

    @rule(
        who=st.sampled_from(REVIEWERS),
        to=st.sampled_from(REVIEWERS),
        hours=st.sampled_from((1, 30)),
    )
    def hand_over(self, who: int, to: int, hours: int) -> None:
        """Someone going away hands their approvals over (refused unless both are approvers,
        two people, and not back to one's own delegate)."""
        now = self.clock()
        back = any((d.delegator, d.delegate) == (to, who) for d in self.snap.active(now))
        refused = (
            who == to or back or not (self.snap.is_approver(who) and self.snap.is_approver(to))
        )
        call = delegating.delegate(
            self.store, who, to, now + timedelta(hours=hours), Stamp("t", now), DEFAULT_POLICY
        )
        if refused:
            return self.refused(DelegationRefused, call)
        made = self.run(call)
        assert (made.delegator, made.delegate, made.starts_at) == (who, to, now)
        self.seen("handed over")

    @rule(who=st.sampled_from(APPROVERS))
    def come_back(self, who: int) -> None:
        """Someone back from leave ends their delegation (refused if none is in force)."""
        now = self.clock()
        call = delegating.come_back(self.store, who, Stamp("t", now), DEFAULT_POLICY)
        if not any(d.delegator == who for d in self.snap.active(now)):
            return self.refused(DelegationRefused, call)
        assert self.run(call).ended_at == now
        self.seen("came back")

    # -- time ------------------------------------------------------------------------------

    @rule(step=st.sampled_from(STEPS), then=st.sampled_from(("nothing", "sweep", "pass")))
    def advance(self, step: timedelta, then: str) -> None:
        """Time passes; then maybe the expiry sweep runs on its own, or a whole runner pass."""
        now = self.clock.advance(seconds=step.total_seconds())
        if then == "pass":
            return self.clean_pass()
        if then == "nothing":
            return
        due = {
            j.id
            for j in self.in_state(State.AWAITING_APPROVAL)
            if j.decision_deadline is not None and j.decision_deadline <= now
        }
        expired = self.run(closing.expire_due(self.store, now))
        assert {j.id for j in expired} == due
        assert all(j.state is State.EXPIRED for j in expired)
        if expired:
            self.seen("expired by the sweep")

    # -- the outbox ------------------------------------------------------------------------

    @rule(trouble=st.sampled_from(TROUBLE))
    def run_pass(self, trouble: str | None) -> None:
        """One runner pass: its first attempt may meet a refusal or an answer that comes late,
        or a ghost runner claims a row instead and dies somewhere in its attempt."""
        if trouble is None or not self.due():
            return self.clean_pass()
        if trouble.startswith("ghost-"):
            stage, _, recovery = trouble.removeprefix("ghost-").partition("+")
            self.ghost(stage)
            if recovery:
                self.clock.advance(seconds=LEASE.total_seconds() + 1)
                self.clean_pass()
            return None
        command, answer, delay = FAILURES[trouble]
        self.world.sink.script(command, answer, delay=delay)
        try:
            self.run(self.runner.run_once())
        finally:
            self.unscript()
            self.world.expect_late_answers()
        self.seen(f"smtp: {trouble}")

    def clean_pass(self) -> None:
        """A pass with a healthy server leaves nothing due behind."""
        before = len(self.mails())
        self.run(self.runner.run_once())
        now = self.clock()
        effects = self.read().effects.values()
        stuck = [e.key for e in effects if is_due(e, now)]
        assert not stuck, f"a full pass left due rows behind: {stuck}"
        if any(e.status is EffectStatus.UNKNOWN for e in effects):
            self.world.expect_late_answers()  # a slow machine can time out a healthy send
        self.seen(f"pass sent {len(self.mails()) - before}")

    def ghost(self, stage: str) -> None:
        """A runner claims a row and dies: at once, after its marker, or after delivering."""
        self.ghosts += 1
        owner, now = f"ghost-{self.ghosts}", self.clock()
        claimed = self.run(dispatch.claim(self.store, now, owner, LEASE, 1))
        if not claimed or stage == "claimed":
            return self.seen("ghost: claimed" if claimed else "ghost: nothing due")
        self.run(with_document(self.store, claimed[0], now))
        order = self.run(
            dispatch.start_attempt(self.store, claimed[0].key, owner, now, LEASE, RULES)
        )
        if order is None or stage == "marked":
            return self.seen("ghost: marked" if order else "ghost: nothing to send")
        try:
            result = self.run(self.sender.send(order))
        except SendError:
            self.world.expect_late_answers()
            return self.seen("ghost: send failed")  # the sink says whether it arrived
        if stage == "zombie":
            self.zombies.append(Zombie(owner, order, result))
        self.seen(f"ghost: {stage}")

    # No rule has a precondition on what an example holds: what it holds depends on real SMTP
    # sessions and their timing, and hypothesis must draw the same rules from the same choices
    # when it replays an example (else FlakyStrategyDefinition). A rule with nothing to act on
    # does nothing, or checks that it is refused.
    @rule()
    def zombie_reports(self) -> None:
        """A ghost that was only slow records its delivery after all."""
        if not self.zombies:
            return self.seen("zombie: none waiting")
        zombie = self.zombies.pop(0)
        effect = self.snap.effects[zombie.order.effect.key]
        call = dispatch.finish_attempt(
            self.store,
            zombie.order,
            Attempted(zombie.owner, result=zombie.result),
            self.clock(),
            RULES,
            0.5,
        )
        late = effect.version != zombie.order.effect.version
        if late and effect.status is not EffectStatus.UNKNOWN:
            return self.refused(LeaseLost, call)
        cancels = zombie.order.effect.kind == EffectKind.CANCEL_PO
        assert self.run(call) is (State.CANCELLED if cancels else State.SENT)
        what = "cancellation" if cancels else "send"
        self.seen(f"zombie: late proof of a {what}" if late else f"zombie: {what} on time")

    # -- people ----------------------------------------------------------------------------

    @rule(po=st.sampled_from(TARGETS), give_up=st.booleans())
    def reconcile(self, po: str, give_up: bool) -> None:
        """A person records what really happened to an unknown outcome."""
        self.reconcile_one(po, give_up, Action.RECONCILE_SENT)

    def reconcile_one(self, po: str, give_up: bool, action: Action) -> None:
        """Reconcile truthfully if some job waits for it; otherwise expect a refusal."""
        unknown = self.in_state(State.UNKNOWN_OUTCOME)
        if not unknown:
            job = self.snap.jobs.get(po)
            call = closing.reconcile(self.store, po, action, "", Stamp("cli:ops", self.clock()))
            return self.refused(UnknownJob if job is None else ReconcileRefused, call)
        job = next((j for j in unknown if j.po_number == po), unknown[0])
        [effect] = [e for e in self.snap.effects_of(job) if e.status is EffectStatus.UNKNOWN]
        # Truthful, as the procedure demands: the person asks the supplier (the sink).
        self.world.settle()
        if self.delivered(effect.key):
            action, state = Action.RECONCILE_SENT, State.SENT
        elif give_up:
            action, state = Action.RECONCILE_FAILED, State.FAILED_FINAL
        else:
            action, state = Action.RECONCILE_NOT_SENT, State.APPROVED
        now = self.clock()
        moved = self.run(
            closing.reconcile(self.store, job.po_number, action, "", Stamp("cli:ops", now))
        )
        assert moved.state is state
        self.seen(f"reconcile: {action.value}")

    @rule(po=st.sampled_from(TARGETS), reason=st.sampled_from(CALL_OFF_REASONS))
    def call_off(self, po: str, reason: str) -> None:
        """An admin calls a PO off: a sent one (if any: this one's, else the first) e-mails
        the supplier a cancellation; one not sent yet is withdrawn; the same call-off again
        changes nothing; anything else is refused."""
        sent = self.in_state(State.SENT)
        job = next((j for j in sent if j.po_number == po), None) or (
            sent[0] if sent else self.snap.jobs.get(po)
        )
        po = job.po_number if job else po
        stamp = Stamp("cli:ops", self.clock())
        call = calling_off.call_off(self.store, CallOff(po, reason), frozenset(), stamp)
        if job is None:
            return self.refused(UnknownJob, call)
        called_off = any(
            r.action == Action.CANCEL_SENT and r.job_id == job.id for r in self.snap.audit
        )
        if job.state is State.SENT and reason:
            done = self.run(call)
            assert (done.job.state, done.after_sending, done.repeat) == (
                State.CANCELLING,
                True,
                False,
            )
            key = cancel_po_key(po, job.draft_version or 0, job.draft_hash or "")
            assert self.read().effects[key].status is EffectStatus.PENDING
            return self.seen("call off: SENT")
        if called_off and reason == "ordered twice":
            assert self.run(call).repeat
            return self.seen("call off: again")
        if job.state is State.SENT or called_off or job.state in _NOT_WITHDRAWN:
            return self.refused(CancelRefused, call)
        if (job.state, Action.CANCEL) not in TRANSITIONS:
            return self.refused(IllegalTransition, call)
        if self.cancels >= MAX_CANCELS:  # a withdrawal ends many paths: few per example
            call.close()
            return self.seen("call off: not withdrawn")
        self.cancels += 1
        assert self.run(call).job.state is State.CANCELLED
        self.seen(f"call off: withdrawn from {job.state.value}")

    @rule(po=st.sampled_from(TARGETS), give_up=st.booleans())
    def settle_call_off(self, po: str, give_up: bool) -> None:
        """A person settles a cancellation that may not have gone (truthfully: they ask the
        supplier, the sink) or that failed for good (they phone the supplier)."""
        stuck = self.in_state(State.CANCEL_UNKNOWN) + self.in_state(State.CANCEL_FAILED)
        stamp = Stamp("cli:ops", self.clock())
        if not stuck:
            job = self.snap.jobs.get(po)
            call = calling_off.reconcile(self.store, po, Action.SETTLE_CANCEL, "", stamp)
            return self.refused(UnknownJob if job is None else ReconcileRefused, call)
        job = next((j for j in stuck if j.po_number == po), stuck[0])
        if job.state is State.CANCEL_FAILED:
            action, state = Action.SETTLE_CANCEL, State.CANCELLED
        else:
            [effect] = [e for e in self.snap.effects_of(job) if e.status is EffectStatus.UNKNOWN]
            self.world.settle()
            if self.delivered(effect.key):
                action, state = Action.RECONCILE_SENT, State.CANCELLED
            elif give_up:
                action, state = Action.RECONCILE_FAILED, State.CANCEL_FAILED
            else:
                action, state = Action.RECONCILE_NOT_SENT, State.CANCELLING
        moved = self.run(calling_off.reconcile(self.store, job.po_number, action, "", stamp))
        assert moved.state is state
        self.seen(f"settle call-off: {action.value}")

    # -- invariants ------------------------------------------------------------------------

    @invariant()
    def database_and_inbox_agree(self) -> None:
        """Every promise, checked on what the database and the inbox hold after each step."""
        self.snap = snap = self.read()
        mails = self.mails()
        check_inbox(snap, mails, self.domain)
        check_audit(snap)
        check_outbox(snap)
        self.check_closed_jobs_stay_quiet(snap, mails)

    def check_closed_jobs_stay_quiet(self, snap: Snapshot, mails: list[EmailMessage]) -> None:
        """A rejected, cancelled or expired draft never reaches the supplier afterwards."""
        keys = [parse_key(m["Idempotency-Key"]) for m in mails if not is_cancellation(m)]
        for job in snap.jobs.values():
            marks = self.closed.setdefault(job.id, {})

            def sent_up_to(version: int, po: str = job.po_number) -> int:
                return sum(1 for p, v, _ in keys if p == po and v <= version)

            for version, count in marks.items():
                assert sent_up_to(version) == count, f"{job.po_number} v{version} sent after close"
            if job.state in _QUIET and job.draft_version is not None:
                marks.setdefault(job.draft_version, sent_up_to(job.draft_version))


def check_inbox(snap: Snapshot, mails: list[EmailMessage], domain: str) -> None:
    """One e-mail per key at most, each for a draft that was approved when it was sent."""
    counts = Counter(m["Idempotency-Key"] for m in mails)
    assert not [k for k, n in counts.items() if n > 1], f"duplicate e-mails: {counts}"
    for mail in mails:
        if is_cancellation(mail):
            check_cancellation_was_called_for(snap, mail, domain)
        else:
            check_mail_was_approved(snap, mail, domain)
    for effect in snap.effects.values():
        delivered = counts[effect.key]
        if effect.status is EffectStatus.SUCCEEDED:
            assert delivered == 1, f"{effect.key} succeeded but {delivered} e-mails arrived"
        elif effect.status not in (EffectStatus.UNKNOWN, EffectStatus.STARTED):
            assert delivered == 0, f"{effect.key} is {effect.status.value} yet was delivered"
    by_id = {j.id: j for j in snap.jobs.values()}
    for job_id_, decisions in snap.decisions.items():
        requester = by_id[job_id_].requester_id
        assert all(d.reviewer_id in APPROVERS for d in decisions), "a non-approver decided"
        assert all(d.reviewer_id != requester for d in decisions), "a self-approval counted"


def check_mail_was_approved(snap: Snapshot, mail: EmailMessage, domain: str) -> None:
    """The e-mail names a stored draft that enough live approvers approved when it was sent."""
    key = mail["Idempotency-Key"]
    assert mail["Message-ID"] == message_id(key, domain)
    po, version, prefix = parse_key(key)
    effect, job = snap.effects[key], snap.jobs[po]
    hash_, _total = snap.drafts[(job.id, version)]
    assert effect.job_id == job.id and effect.draft_version == version
    assert effect.draft_hash == hash_ and hash_.startswith(prefix)
    assert effect.status in (EffectStatus.SUCCEEDED, EffectStatus.UNKNOWN, EffectStatus.STARTED)
    starts = [r for r in snap.audit if r.action == "start_send" and r.detail.get("key") == key]
    assert starts and starts[-1].at == effect.started_at, key
    sent_at = starts[-1].at
    roles = roles_before(snap.audit, starts[-1].id)
    approvals = [
        d
        for d in snap.decisions[job.id]
        if d.at <= sent_at and Role.APPROVER in roles.get(d.reviewer_id, set())
    ]
    assert all(d.reviewer_id != job.requester_id for d in approvals), f"{key}: self-approved"
    route = route_of(job, RULES.approval.default_policy)
    members = {DEFAULT_GROUP: frozenset(d.reviewer_id for d in approvals)}
    on_version = [d.at for d in approvals if d.draft_version == version]
    # One person while it waited: up to its last approval on this version.
    one = snap.people(job, max(on_version, default=sent_at), closed=not on_version)
    counted = tally(route, approvals, version, hash_, sent_at, job.requester_id, members, one)
    assert counted.outcome is Outcome.APPROVED, f"{key} was sent without enough live approvals"


def check_cancellation_was_called_for(snap: Snapshot, mail: EmailMessage, domain: str) -> None:
    """A cancellation e-mail names a PO that was sent and that an admin called off before its
    attempt, threads under that PO's own e-mail, and is that PO's one cancellation row."""
    key = mail["Idempotency-Key"]
    assert mail["Message-ID"] == message_id(key, domain)
    po, version, prefix = parse_key(key, EffectKind.CANCEL_PO)
    effect, job = snap.effects[key], snap.jobs[po]
    assert effect.kind == EffectKind.CANCEL_PO and effect.job_id == job.id
    assert (effect.draft_version, job.draft_version) == (version, version)
    assert effect.draft_hash == job.draft_hash and effect.draft_hash.startswith(prefix)
    assert effect.status in (EffectStatus.SUCCEEDED, EffectStatus.UNKNOWN, EffectStatus.STARTED)
    placed = send_po_key(po, version, effect.draft_hash)
    assert snap.effects[placed].status is EffectStatus.SUCCEEDED, key
    assert mail["In-Reply-To"] == message_id(placed, domain)
    trail = [r for r in snap.audit if r.job_id == job.id]
    called = [r.id for r in trail if r.action == Action.CANCEL_SENT]
    tried = [r.id for r in trail if r.action == NOTICE_ATTEMPT and r.detail.get("key") == key]
    assert len(called) == 1 and tried and called[0] < tried[0], key


def check_audit(snap: Snapshot) -> None:
    """Every audited move is in the transition table, and each job's trail is one chain."""
    actions = {a.value: a for a in Action}
    trails: dict[str, list[AuditRow]] = {}
    for row in snap.audit:
        if row.job_id is None:
            assert row.action in {"grant_role", "revoke_roles", "delegate", "end_delegation"}, row
            assert row.source is None and row.target is None
        else:
            trails.setdefault(row.job_id, []).append(row)
    for job in snap.jobs.values():
        trail = trails.pop(job.id)
        assert (trail[0].action, trail[0].source, trail[0].target) == (
            "receive",
            None,
            State.RECEIVED,
        )
        for before, row in pairwise(trail):
            assert row.source is before.target, f"{row.action}: jumps from {before.target}"
            if row.action in _UNMOVED:  # about the job, not a move of it
                assert row.source is row.target is _UNMOVED[row.action], row
            else:
                assert row.action in actions and row.action not in _NON_TRANSITIONS, row.action
                assert row.source is not None
                allowed = TRANSITIONS.get((row.source, actions[row.action]))
                assert allowed is row.target, (row.source, row.action, row.target)
        assert trail[-1].target is job.state
    assert not trails, "audit events for jobs that do not exist"


def check_outbox(snap: Snapshot) -> None:
    """The outbox agrees with each job's state: one row in flight at most, for the current draft."""
    in_flight_statuses = OPEN_STATUSES | {EffectStatus.UNKNOWN}
    expected_by_state = {
        State.APPROVED: {EffectStatus.PENDING, EffectStatus.CLAIMED},
        State.FAILED_RETRYABLE: {EffectStatus.PENDING, EffectStatus.CLAIMED},
        State.SENDING: {EffectStatus.STARTED},
        State.UNKNOWN_OUTCOME: {EffectStatus.UNKNOWN},
        # a sent PO called off: its cancellation in flight, or maybe gone
        State.CANCELLING: {EffectStatus.PENDING, EffectStatus.CLAIMED, EffectStatus.STARTED},
        State.CANCEL_UNKNOWN: {EffectStatus.UNKNOWN},
    }
    for job in snap.jobs.values():
        assert job.draft_version is not None and job.draft_hash is not None
        assert snap.drafts[(job.id, job.draft_version)][0] == job.draft_hash
        assert (job.id, job.draft_version + 1) not in snap.drafts
        current = send_po_key(job.po_number, job.draft_version, job.draft_hash)
        cancel = cancel_po_key(job.po_number, job.draft_version, job.draft_hash)
        effects = snap.effects_of(job)
        in_flight = [e for e in effects if e.status in in_flight_statuses]
        expected = expected_by_state.get(job.state)
        flying = cancel if job.state in (State.CANCELLING, State.CANCEL_UNKNOWN) else current
        if expected:
            assert [(e.key, e.status in expected) for e in in_flight] == [(flying, True)], job
        else:
            assert in_flight == [], f"{job.po_number} is {job.state.value} with {in_flight}"
        succeeded = [e.key for e in effects if e.status is EffectStatus.SUCCEEDED]
        called_off = cancel in snap.effects
        if job.state is State.SENT or job.state in CALLING_OFF:
            assert succeeded == [current], job
        elif job.state is State.CANCELLED and called_off:  # the cancellation went, or a person
            assert succeeded in ([current, cancel], [cancel, current], [current]), job
        else:
            assert succeeded == [], job
        # A cancellation row exactly for a PO being, or once, called off.
        assert called_off >= (job.state in CALLING_OFF), job
        assert not called_off or job.state in CALLING_OFF | {State.CANCELLED}, job


SETTINGS = settings(
    max_examples=40,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


# Half a minute of random workflows: make test runs it, make test-fast leaves it out.
@pytest.mark.slow
def test_random_workflows_keep_every_promise(db_url: str, tmp_path: Path) -> None:
    with running_sink() as sink:
        world = World(db_url, sink, tmp_path)
        run_state_machine_as_test(lambda: Workflow(world), settings=SETTINGS)
    print(sorted(world.seen.items()))  # which paths this run took; shown with -s
    # Initial requests are often pre-approved, so a run that never sends is a broken test.
    assert world.seen["e-mails delivered"] > 0 and world.seen["decided: APPROVED"] > 0

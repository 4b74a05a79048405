"""The protocols the shell implements: `Tx` for core's use cases (its read half `ReadTx`),
`Views` for what the shell reads beyond them, and the stores that hand either out, read-write
(`begin`) or read-only (`reading`).

Every part of core uses these, so this module sits at core's top; the domain's types it names
come from the parts above it, for the type checker only (nothing here runs them)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Iterable
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from core.approval.delegations import Delegation
    from core.approval.policies import Decision, Policy, Role
    from core.approval.replays import ClientDecision
    from core.approval.signing import Invite
    from core.company.company import Company
    from core.drafting.drafts import Draft
    from core.drafting.intake import History
    from core.drafting.terms import Terms
    from core.jobs.answers import Answer, Outcome
    from core.jobs.jobs import AuditEvent, Document, Effect, Job, SendOrder
    from core.jobs.notices import Notice, NoticeKind
    from core.jobs.states import State
    from core.people.users import TelegramUser
    from core.purchasing.summaries import SummaryState, TypedRequest
    from core.records.audit import Logged
    from core.suppliers.replies import Cursor, FiledMail
    from core.versions import FileKind

T = TypeVar("T")


class ReadTx(Protocol):
    """A read-only transaction: what use cases and screens read. A write inside one fails
    loudly (SQLite: query_only; PostgreSQL: READ ONLY), and on SQLite it never waits for, nor
    holds up, the one writer."""

    async def job(self, job_id: str) -> Job:
        """The job with that id, or raise UnknownJob."""

    async def job_by_po(self, po_number: str) -> Job | None:
        """The job with that PO number, if any."""

    async def jobs_past_deadline(self, state: State, now: datetime, limit: int) -> list[Job]:
        """Jobs in a state whose decision deadline has passed, oldest first."""

    async def draft(self, job_id: str, version: int) -> Draft:
        """One stored draft version."""

    async def decisions(self, job_id: str) -> list[Decision]:
        """Every decision on the job, oldest first."""

    async def client_decision(self, client_id: str) -> ClientDecision | None:
        """The decision a client first sent under that id (core.approval.replays), if any."""

    async def effect(self, key: str) -> Effect:
        """The outbox row with that key."""

    async def effects_for(self, job_id: str) -> list[Effect]:
        """A job's outbox rows, oldest first."""

    async def audit(self, job_id: str) -> list[AuditEvent]:
        """A job's audit trail, oldest first (a called-off PO's reason is read from it)."""

    async def mailbox_cursor(self, folder: str) -> Cursor | None:
        """Where the reading of a mailbox folder stands; None if it was never read."""

    async def supplier_mail_filed(self, job_id: str, message_id: str) -> bool:
        """Whether a reply with that Message-ID was filed on the job already."""

    async def supplier_mail(self, mail_id: int) -> FiledMail | None:
        """A reply filed on a PO, its text opened (emptied once purged); None if unknown."""

    async def supplier_mails(self, job_id: str) -> list[FiledMail]:
        """The replies filed on a job, oldest first."""

    async def supplier_answers(self, job_id: str) -> list[Answer]:
        """What the job's supplier answered from the e-mails' links, oldest first."""

    async def jobs_sent_since(self, since: datetime) -> list[Job]:
        """The SENT jobs that became SENT at or after `since` (their last change), oldest first:
        what chasing silent suppliers reads, however many older POs there are."""

    async def latest_draft_version(self, job_id: str) -> int:
        """The highest draft version stored for the job (0 before its first), whichever the
        job stands at: a rejected proposal's version stays taken."""

    async def document(self, key: str) -> Document | None:
        """The PDF kept for an outbox row's e-mail, opened and checked against its sha256;
        None if none was made for it."""

    async def has_document(self, key: str) -> bool:
        """Whether a PDF was kept for the outbox row (not opening it)."""

    async def roles_of(self, user_ids: Collection[int]) -> dict[int, frozenset[Role]]:
        """The roles each of these users holds now, in one read."""

    async def roles(self, user_id: int) -> frozenset[Role]:
        """The roles a user holds now."""

    async def telegram_user(self, user_id: int) -> TelegramUser | None:
        """What the bot knows of a user, if it met them."""

    async def holders(self, role: Role) -> list[int]:
        """Every user holding `role` now, by id."""

    async def invite_withdrawn(self, invite_id: str) -> bool:
        """Whether the invitation was withdrawn (its admin lost the role)."""

    async def notices_for(self, job_id: str) -> list[Notice]:
        """A job's notices, oldest first."""

    async def notice_of_message(self, user_id: int, message_id: int) -> Notice | None:
        """The notice delivered to `user_id` as their chat's message `message_id` (the card
        a reply quotes, say), if any."""

    async def jobs_in_states(self, states: Collection[State]) -> list[Job]:
        """Every job in one of `states`, oldest first."""

    async def terms_version(self, *, for_update: bool = False) -> str | None:
        """The terms version in force, or None before any import."""

    async def current_terms(self) -> Terms | None:
        """The terms in force, or None if none were ever imported."""

    async def terms(self, version: str) -> Terms | None:
        """One stored terms version, or None."""

    async def terms_sha256(self, version: str) -> str | None:
        """The content hash of a stored terms version, or None if there is none."""

    async def terms_redrafts(self, actor: str) -> list[tuple[Job, dict[str, Any]]]:
        """Jobs re-drafted or cancelled by `actor` (a terms version), with the event's detail."""

    async def submission(self, requester_id: int, sha256: str) -> list[str] | None:
        """The PO numbers made from this requester's sheet with these bytes, if any."""

    async def history(
        self, pairs: Iterable[tuple[str, str]], *, excluding: str | None = None
    ) -> History:
        """For each (supplier id, SKU), the line of the last PO that was sent with it, and
        when; `excluding` one job (a sent PO is not its own last price)."""

    async def terms_record(self, version: str) -> dict[str, Any] | None:
        """When and by whom a terms version was imported, or None."""

    async def committed_spend(
        self, start: datetime, end: datetime, excluding: str | None = None
    ) -> dict[str, int]:
        """Line totals in paisa, by category (uncategorised lines left out), of the current
        drafts of the POs approved in [start, end) that are APPROVED, SENDING, SENT or
        UNKNOWN_OUTCOME (core.approval.budgets.COMMITTED); `excluding` one job."""

    async def group_members(self, groups: Collection[str]) -> dict[str, frozenset[int]]:
        """Each approver group's members who hold the approver role now."""

    async def groups_of(self, user_id: int) -> frozenset[str]:
        """The approver groups a user is in."""

    async def memberships(self) -> list[tuple[int, str]]:
        """Every (user id, group) pair, by user and group."""

    async def branch_of(self, user_id: int) -> str | None:
        """The branch of the company a user orders for, or None if none was set (the
        company's default branch applies)."""

    async def branches(self) -> dict[int, str]:
        """Every user's branch, by user id."""

    async def delegations_since(self, since: datetime) -> list[Delegation]:
        """Every delegation that did not end before `since`, oldest first."""

    async def delegations_due(self, now: datetime, limit: int) -> list[Delegation]:
        """Delegations whose `until` has come and that nobody has ended yet, oldest first."""

    async def file_version(self, kind: FileKind, *, for_update: bool = False) -> str | None:
        """The version of a kind of file in force, or None before any import (core.versions);
        FOR UPDATE (PostgreSQL, in an import): two imports at once go one after the other."""

    async def file_record(self, kind: FileKind, version: str) -> dict[str, Any] | None:
        """A stored version's file, hash, import time and importer, or None."""

    async def current_policy(self) -> Policy | None:
        """The approval policy in force, or None if none was ever imported."""

    async def policy(self, version: str) -> Policy | None:
        """One stored policy version, or None."""

    async def current_company(self) -> Company | None:
        """The buyer and its branches in force, or None if none were ever imported."""

    async def company(self, version: str) -> Company | None:
        """One stored company version, or None."""


class Tx(ReadTx, Protocol):
    """One read-write database transaction; every method runs inside it."""

    async def insert_job(self, job: Job) -> None:
        """Add a new job row; raise InsertConflict if a concurrent request took the PO number."""

    async def update_job(self, job: Job, **changes: Any) -> Job:
        """Compare-and-set on (id, state, version); bump version; raise StaleJob on a miss."""

    async def insert_draft(self, job_id: str, version: int, draft: Draft, at: datetime) -> None:
        """Append one immutable draft version."""

    async def insert_decision(self, decision: Decision) -> None:
        """Record a decision; raise AlreadyDecided if this reviewer already decided this hash."""

    async def insert_client_decision(self, decision: ClientDecision) -> None:
        """Keep a client's decision under its id; InsertConflict if that id was kept meanwhile."""

    async def append_audit(self, *events: AuditEvent) -> None:
        """Append audit events, in order."""

    async def set_mailbox_cursor(self, folder: str, cursor: Cursor, now: datetime) -> None:
        """Move a folder's cursor (never back within one UIDVALIDITY)."""

    async def insert_supplier_mail(self, reply: FiledMail) -> int:
        """Keep a reply, its sender, subject, text and attachments' names sealed; its id.
        InsertConflict if that folder's UID was filed meanwhile."""

    async def insert_supplier_answer(self, answer: Answer) -> None:
        """Keep a supplier's answer (its reason and note sealed); InsertConflict if one was kept
        for its version and round meanwhile."""

    async def decide_supplier_answer(
        self, answer: Answer, outcome: Outcome, at: datetime, proposal_version: int | None = None
    ) -> None:
        """Record what became of a supplier's answer: its proposal put to the approvers (as
        `proposal_version`, outcome STANDS), approved or rejected (at `at`)."""

    async def insert_document(self, key: str, document: Document, at: datetime) -> None:
        """Keep the PDF of an outbox row's e-mail, sealed; InsertConflict if one was kept for
        it meanwhile (that one is the row's: it is never replaced)."""

    async def insert_effect(self, effect: Effect) -> None:
        """Add an outbox row; the key is unique."""

    async def update_effect(self, effect: Effect, **changes: Any) -> Effect:
        """Compare-and-set on (key, version); bump version; raise LeaseLost on a miss."""

    async def claim_due(
        self, now: datetime, owner: str, lease_until: datetime, limit: int
    ) -> list[Effect]:
        """Lease due pending rows, and claimed rows whose lease ran out, to `owner`."""

    async def stalled(self, now: datetime, limit: int) -> list[Effect]:
        """Started rows whose lease ran out: their runner died mid-attempt."""

    async def grant(self, user_id: int, role: Role, by: str, now: datetime) -> bool:
        """Give a user a role and audit it; False if they held it already."""

    async def revoke(self, user_id: int, by: str, now: datetime) -> frozenset[Role]:
        """Take every role from a user and audit it; what they held (nothing: nothing written)."""

    async def insert_invite(
        self, invite: Invite, created_by: int, at: datetime, group: str | None = None
    ) -> None:
        """Record an invitation that has been handed out (an approver's, to `group`)."""

    async def use_invite(
        self, invite_id: str, user_id: int, at: datetime
    ) -> tuple[Role, str | None] | None:
        """Mark an unused, unexpired, not withdrawn invitation used by `user_id`; its role and
        group, or None."""

    async def withdraw_invites(self, created_by: int, at: datetime) -> list[str]:
        """Withdraw every unused invitation `created_by` made; their ids."""

    async def insert_notice(self, *notices: Notice) -> None:
        """Owe Telegram messages; a notice with the same key already owed stays as it is."""

    async def owe_notice(self, notice: Notice) -> bool:
        """insert_notice, and whether it was new: False if a notice of that key was owed."""

    async def claim_notices(
        self, now: datetime, owner: str, lease_until: datetime, limit: int, job_id: str | None
    ) -> list[Notice]:
        """Lease due pending notices (of one job, if given), and claimed ones whose lease ran
        out, to `owner`."""

    async def claim_notices_of(
        self, user_id: int, kind: NoticeKind, prefix: str, now: datetime, owner: str,
        lease_until: datetime,
    ) -> list[Notice]:  # fmt: skip
        """Lease one user's due notices of one kind whose event starts with `prefix` to
        `owner`, so that one message can settle them all."""

    async def claim_chore(
        self, name: str, owner: str, now: datetime, done_before: datetime, lease_until: datetime
    ) -> bool:
        """Lease the chore to `owner` until `lease_until` if it was last done at or before
        `done_before` and no lease on it runs at `now`; whether it was leased."""

    async def finish_chore(self, name: str, owner: str, done_at: datetime) -> None:
        """Record the chore done at `done_at` and release `owner`'s lease."""

    async def update_notice(self, notice: Notice, **changes: Any) -> Notice:
        """Compare-and-set on (key, version); bump version; raise LeaseLost on a miss."""

    async def met(self, user_id: int, first_name: str, at: datetime, *, started: bool) -> None:
        """Remember the name of someone who holds a role (never a stranger's); `started`: they
        sent /start, so the bot may write to them."""

    async def mark_blocked(self, user_id: int, at: datetime) -> None:
        """Telegram said the user blocked the bot: write to them no more until they return."""

    async def claim_update(self, update_id: int, at: datetime) -> bool:
        """True the first time an update id is seen; a redelivery gets False."""

    async def release_update(self, update_id: int) -> None:
        """Forget a claimed update id: its handler failed, so a redelivery is handled again."""

    async def insert_terms(self, terms: Terms, sha256: str, at: datetime, by: str) -> None:
        """Store a new terms version and make it the current one."""

    async def set_current_terms(self, version: str, at: datetime) -> None:
        """Put a stored terms version in force."""

    async def set_groups(
        self, user_id: int, groups: Collection[str], by: str, at: datetime
    ) -> tuple[frozenset[str], frozenset[str]]:
        """Make `groups` exactly the user's approver groups; the groups (joined, left)."""

    async def set_branch(
        self, user_id: int, branch_id: str | None, by: str, at: datetime
    ) -> str | None:
        """Make `branch_id` the branch a user orders for, or with None clear it; the branch
        before (None: none). The caller audits."""

    async def insert_delegation(
        self, delegator: int, delegate: int, starts_at: datetime, until: datetime, by: str
    ) -> Delegation:
        """Record a delegation; the caller ends the delegator's earlier one and audits."""

    async def end_delegation(self, delegation_id: int, at: datetime) -> Delegation | None:
        """End a delegation not yet ended (compare-and-set on ended_at); None if it was."""

    async def insert_file(
        self, kind: FileKind, version: str, sha256: str, source: str, at: datetime, by: str
    ) -> None:
        """Store a new version of a kind of file, as it was written, and put it in force."""

    async def set_file_in_force(self, kind: FileKind, version: str, at: datetime) -> None:
        """Put a stored version of a kind of file in force."""

    async def insert_submission(
        self, requester_id: int, sha256: str, name: str, po_numbers: list[str], at: datetime
    ) -> None:
        """Remember a sheet's POs; raise InsertConflict if the same sheet was recorded meanwhile."""

    async def next_po_serial(self, year: int) -> int:
        """The next PO serial of `year`, unique across processes."""


class Views(Protocol):
    """The read side: what screens, replies and reports read beyond what use cases need."""

    async def jobs_of(self, requester_id: int, limit: int) -> list[Job]:
        """A requester's jobs, newest first."""

    async def list_jobs(self, states: Collection[State] | None, limit: int) -> list[Job]:
        """Jobs, newest first, optionally only those in `states`."""

    async def audit_logged(self, job_id: str) -> list[Logged]:
        """A job's whole audit trail for an export (core.records.audit), by time then id."""

    def audit_between(self, start: datetime, end: datetime) -> AsyncIterator[Logged]:
        """Every audit event at or after `start` and before `end`, about jobs or people, for
        an export, by time then id; streamed, a page at a time, inside the transaction."""

    async def people(self) -> list[tuple[TelegramUser | None, int, frozenset[Role]]]:
        """Everyone holding a role, with what the bot knows of them, by user id."""

    async def open_work(self, now: datetime) -> int:
        """Outbox rows that are due now, leased, or mid-attempt."""

    async def languages(self, user_ids: Collection[int]) -> dict[int, str]:
        """The language each of `user_ids` chose with /language; those who chose none are
        left out (the shell's default applies)."""

    async def typed_request(self, request_id: str) -> TypedRequest | None:
        """The typed request with that id, if it is still kept."""


class ShellTx(Tx, Views, Protocol):
    """One transaction as the shell sees it: the use cases' port and the read side."""

    async def set_language(self, user_id: int, language: str, at: datetime) -> bool:
        """Keep the language a met user chose; False if the bot never met them."""

    async def insert_typed_request(self, request: TypedRequest) -> None:
        """Keep a typed request, its lines sealed; InsertConflict if its id is taken."""

    async def settle_typed_request(
        self, request_id: str, before: SummaryState, after: SummaryState, at: datetime
    ) -> bool:
        """Move a typed request from `before` to `after`; False if it was not in `before`."""


class ShellReadTx(ReadTx, Views, Protocol):
    """A read-only transaction as the shell sees it: every read, no write."""


class Store(Protocol):
    """Hands out transactions to core's use cases."""

    def begin(self) -> AbstractAsyncContextManager[Tx]:
        """Open a read-write transaction that commits on success and rolls back on error;
        on SQLite it holds the one write lock from its first statement, so keep it short."""

    def reading(self) -> AbstractAsyncContextManager[ReadTx]:
        """Open a read-only transaction: a consistent snapshot that takes no write lock."""


class BatchTx(ShellTx, Protocol):
    """A transaction for a burst of decisions (store.batched): what they read is read once,
    and what they only add is written at the end. An update it claims is checked against
    those claimed before the burst (prefetch); one claimed meanwhile makes the COMMIT fail
    with InsertConflict (each tap is decided alone then)."""

    async def prefetch(
        self, job_ids: Collection[str], user_ids: Collection[int], update_ids: Collection[int]
    ) -> None:
        """Read the jobs and everything their decisions read, for these people, and which of
        these updates were claimed before, at once."""

    def each(self) -> AbstractAsyncContextManager[None]:
        """One decision's part. An error before it wrote is raised, and nothing of the part
        is kept; one after it wrote is raised as BurstUndone, and the whole transaction rolls
        back."""


class ShellStore(Protocol):
    """The store as the shell's runners and handlers use it; a Store for core as well."""

    def begin(self) -> AbstractAsyncContextManager[ShellTx]:
        """Open a read-write transaction that commits on success and rolls back on error."""

    def begin_batch(self) -> AbstractAsyncContextManager[BatchTx]:
        """`begin`, for a burst of decisions made together (BatchTx)."""

    def reading(self) -> AbstractAsyncContextManager[ShellReadTx]:
        """Open a read-only transaction: a consistent snapshot that takes no write lock."""


class Offload(Protocol):
    """Runs CPU-bound work (checking and pricing a sheet) where it does not hold up the
    caller's event loop: the bot passes `asyncio.to_thread`. Core starts no threads itself."""

    def __call__(self, work: Callable[[], T], /) -> Awaitable[T]:
        """The result of `work()`, computed elsewhere."""


async def run_inline(work: Callable[[], T], /) -> T:
    """An Offload that runs the work right here: for the CLI and tests, which have no event
    loop to keep free for others."""
    return work()


class SendSession(Protocol):
    """One channel to the provider that carries consecutive sends (an SMTP connection)."""

    async def send(self, order: SendOrder) -> dict[str, Any]:
        """Deliver the order and return a small JSON-able receipt."""


class Sender(Protocol):
    """Performs one outbox effect; raises core.errors.SendError subclasses when it fails."""

    provider_idempotent: bool  # whether the provider itself drops a second copy of one key

    def session(self) -> AbstractAsyncContextManager[SendSession]:
        """A channel for several sends one after another, closed when the block ends."""

    async def send(self, order: SendOrder) -> dict[str, Any]:
        """Deliver the order over a channel of its own and return a small JSON-able receipt."""

"""The durable-state schema; Alembic migrations create it, this module describes it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    func,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator


class UtcDateTime(TypeDecorator[datetime]):
    """Aware UTC datetimes in; aware UTC datetimes out, on SQLite as on PostgreSQL."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        """Refuse naive datetimes; SQLite gets naive UTC so text comparison orders correctly."""
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to the store")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        """Attach UTC to what SQLite hands back naive."""
        if value is None:
            return None
        assert isinstance(value, datetime)
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

jobs = Table(
    "jobs",
    metadata,
    Column("id", String(36), primary_key=True),
    Column("po_number", String(64), nullable=False, unique=True),
    Column("state", String(32), nullable=False),
    Column("version", Integer, nullable=False),
    Column("requester_id", BigInteger, nullable=False),
    Column("input_ref", String(255), nullable=False),
    Column("workflow_version", String(64), nullable=False),
    Column("source_versions", JSON, nullable=False),
    Column("tool_results", JSON, nullable=False),
    Column("draft_version", Integer),
    Column("draft_hash", String(64)),
    Column("supplier_id", String(64)),
    Column("total_paisa", BigInteger),
    Column("retry_count", Integer, nullable=False),
    Column("decision_deadline", UtcDateTime),
    Column("created_at", UtcDateTime, nullable=False),
    Column("updated_at", UtcDateTime, nullable=False),
    # When core.records.retention removed the closed job's personal data (the audit says what).
    Column("purged_at", UtcDateTime),
    # The current draft's route (core.approval.routes.Route as JSON); NULL for jobs drafted before
    # routing, which follow the configured default policy.
    Column("route", JSON),
    # When the current draft was approved: the budget month it is committed in
    # (core.approval.budgets).
    Column("approved_at", UtcDateTime),
    Index(None, "state", "decision_deadline"),
    Index(None, "approved_at"),
    Index(None, "state", "updated_at"),  # chasing silent suppliers reads the recently SENT
    Index(None, "requester_id", "created_at"),  # a requester's /status
)

# Append-only: one row per version; the body is the canonical JSON, encrypted, because it
# carries the supplier's contact address.
drafts = Table(
    "drafts",
    metadata,
    Column("job_id", String(36), ForeignKey("jobs.id"), primary_key=True),
    Column("version", Integer, primary_key=True),
    Column("hash", String(64), nullable=False),
    Column("supplier_id", String(64), nullable=False),
    Column("total_paisa", BigInteger, nullable=False),
    Column("line_count", Integer, nullable=False),
    Column("body_encrypted", LargeBinary, nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
)

# Append-only; one decision per reviewer per draft version, enforced here, not by hope.
decisions = Table(
    "decisions",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("job_id", String(36), ForeignKey("jobs.id"), nullable=False),
    Column("reviewer_id", BigInteger, nullable=False),
    Column("reviewer_role", String(16), nullable=False),
    Column("verdict", String(16), nullable=False),
    Column("draft_version", Integer, nullable=False),
    Column("draft_hash", String(64), nullable=False),
    Column("at", UtcDateTime, nullable=False),
    Column("expires_at", UtcDateTime, nullable=False),
    Column("policy_basis", String(200), nullable=False),
    Column("reason", String(500)),
    # The stage of the request's route it was made in, and the policy version and rule that
    # route followed (core.approval.routes.Route); 0, "", "" for decisions before routing.
    Column("stage", Integer, nullable=False, server_default="0"),
    Column("policy_version", String(40), nullable=False, server_default=""),
    Column("rule", String(64), nullable=False, server_default=""),
    # The approver away whose delegate made it, for them (core.approval.delegations); NULL: their
    # own.
    Column("on_behalf_of", BigInteger),
    UniqueConstraint("job_id", "draft_version", "reviewer_id"),
)

# A decision a client sent under an id it generated (core.approval.replays): the id is the primary
# key, so a replay, or two at once, records one decision. Append-only, like the decisions.
client_decisions = Table(
    "client_decisions",
    metadata,
    Column("client_id", String(64), primary_key=True),
    Column("job_id", String(36), ForeignKey("jobs.id"), nullable=False),
    Column("reviewer_id", BigInteger, nullable=False),
    Column("action", String(16), nullable=False),  # core.approval.replays.ClientAction
    Column("request_sha256", String(64), nullable=False),
    Column("draft_version", Integer, nullable=False),  # decided on (an edit's: the one it made)
    Column("at", UtcDateTime, nullable=False),
)

# The outbox and the idempotency record in one: the key is the primary key, so a second
# row for the same business action cannot exist.
effects = Table(
    "effects",
    metadata,
    Column("key", String(200), primary_key=True),
    Column("job_id", String(36), ForeignKey("jobs.id"), nullable=False),
    Column("kind", String(32), nullable=False),
    Column("draft_version", Integer, nullable=False),
    Column("draft_hash", String(64), nullable=False),
    Column("status", String(16), nullable=False),
    Column("version", Integer, nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("next_attempt_at", UtcDateTime),
    Column("first_attempt_at", UtcDateTime),
    Column("lease_owner", String(100)),
    Column("lease_until", UtcDateTime),
    Column("started_at", UtcDateTime),
    Column("result", JSON),
    Column("last_error", Text),
    Column("created_at", UtcDateTime, nullable=False),
    Column("updated_at", UtcDateTime, nullable=False),
    Index(None, "status", "next_attempt_at"),
    Index(None, "job_id"),
)

# The PDF an outbox row's e-mail carries, made once before its first attempt and sealed
# (it names the supplier's address and the approvers); every attempt sends these bytes.
effect_documents = Table(
    "effect_documents",
    metadata,
    Column("key", String(200), ForeignKey("effects.key"), primary_key=True),
    Column("pdf_encrypted", LargeBinary, nullable=False),
    Column("sha256", String(64), nullable=False),
    Column("size", Integer, nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
)

# What a supplier answered from the link in a PO's e-mail (core.suppliers.pages): one row per
# draft version and round (a proposal the approvers rejected opens the next round). The reason
# and note are sealed; the purge of a closed job empties them. `lines` holds only line numbers,
# quantities and prices in paisa.
supplier_answers = Table(
    "supplier_answers",
    metadata,
    Column("job_id", String(36), ForeignKey("jobs.id"), primary_key=True),
    Column("draft_version", Integer, primary_key=True),
    Column("round", Integer, primary_key=True),
    Column("reply", String(16), nullable=False),
    Column("key", String(200), nullable=False),
    Column("answered_at", UtcDateTime, nullable=False),
    Column("delivery_date", String(10)),  # ISO date
    Column("text_encrypted", LargeBinary),  # sealed JSON: {"reason": …, "note": …}
    Column("lines", JSON, nullable=False),
    Column("outcome", String(16), nullable=False),
    Column("proposal_version", Integer),
    Column("decided_at", UtcDateTime),
)

# Suppliers' e-mail replies filed on their PO (core.suppliers.replies). Sender, subject, text
# and attachments' names are sealed in `mail_encrypted` (the purge of a closed job empties it);
# the Message-ID is kept as its SHA-256, to file a message read twice once.
supplier_mail = Table(
    "supplier_mail",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("job_id", String(36), ForeignKey("jobs.id"), nullable=False),
    Column("folder", String(200), nullable=False),
    Column("uidvalidity", BigInteger, nullable=False),
    Column("uid", BigInteger, nullable=False),
    Column("message_id_hash", String(64), nullable=False),
    Column("sent_at", UtcDateTime),  # the message's Date header
    Column("filed_at", UtcDateTime, nullable=False),
    Column("matched_by", String(16), nullable=False),
    Column("on_file", Boolean, nullable=False),
    Column("readable", Boolean, nullable=False),
    Column("size", BigInteger, nullable=False),
    Column("mail_encrypted", LargeBinary),  # sealed JSON; NULL once purged
    UniqueConstraint("folder", "uidvalidity", "uid"),
    Index(None, "job_id", "message_id_hash"),
)

# Where the reading of each mailbox folder stands: its UIDVALIDITY and the last UID read.
mailbox_cursors = Table(
    "mailbox_cursors",
    metadata,
    Column("folder", String(200), primary_key=True),
    Column("uidvalidity", BigInteger, nullable=False),
    Column("last_uid", BigInteger, nullable=False),
    Column("updated_at", UtcDateTime, nullable=False),
)

# Append-only: database triggers refuse UPDATE and DELETE (see the initial migration).
audit_events = Table(
    "audit_events",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("job_id", String(36), ForeignKey("jobs.id")),
    Column("at", UtcDateTime, nullable=False),
    Column("actor", String(100), nullable=False),
    Column("action", String(40), nullable=False),
    Column("from_state", String(32)),
    Column("to_state", String(32)),
    Column("detail", JSON, nullable=False),
    Index(None, "job_id", "id"),
)

user_roles = Table(
    "user_roles",
    metadata,
    Column("user_id", BigInteger, primary_key=True),
    Column("role", String(16), primary_key=True),
    Column("granted_by", String(100), nullable=False),
    Column("granted_at", UtcDateTime, nullable=False),
    Index(None, "role"),  # who holds a role: the people a card or an alert goes to
)

# Which approver groups of the approval policy a user is in (core.approval.policies.Policy.groups).
user_groups = Table(
    "user_groups",
    metadata,
    Column("user_id", BigInteger, primary_key=True),
    Column("group_name", String(32), primary_key=True),
    Column("granted_by", String(100), nullable=False),
    Column("granted_at", UtcDateTime, nullable=False),
)

# The branch of the company file (core.company) a requester orders for: their POs are delivered
# there unless a row of the sheet says otherwise; no row: the company's default branch.
user_branches = Table(
    "user_branches",
    metadata,
    Column("user_id", BigInteger, primary_key=True, autoincrement=False),
    Column("branch_id", String(32), nullable=False),
    Column("set_by", String(64), nullable=False),
    Column("set_at", UtcDateTime, nullable=False),
)

# Who acts for whom while an approver is away (core.approval.delegations). Kept once ended, so that
# a request remembers who were one person while it waited; `ended_at` is set by /back, or at `until`
# by the runner's sweep (the delegator's cards are then theirs again).
delegations = Table(
    "delegations",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("delegator", BigInteger, nullable=False),
    Column("delegate", BigInteger, nullable=False),
    Column("starts_at", UtcDateTime, nullable=False),
    Column("until", UtcDateTime, nullable=False),
    Column("set_by", String(100), nullable=False),
    Column("ended_at", UtcDateTime),
    Index(None, "until"),
)

# Supplier terms, version by version. A version is never changed once imported: drafts cite it.
terms_versions = Table(
    "terms_versions",
    metadata,
    Column("id", String(40), primary_key=True),
    Column("sha256", String(64), nullable=False),
    Column("imported_at", UtcDateTime, nullable=False),
    Column("imported_by", String(100), nullable=False),
    Column("supplier_count", Integer, nullable=False),
    Column("offer_count", Integer, nullable=False),
)

terms_suppliers = Table(
    "terms_suppliers",
    metadata,
    Column("terms_version", String(40), ForeignKey("terms_versions.id"), primary_key=True),
    Column("supplier_id", String(64), primary_key=True),
    Column("name", String(200), nullable=False),
    Column("email_encrypted", LargeBinary, nullable=False),  # personal data: sealed
    Column("payment_terms", String(200)),  # NULL: not said
    Column("phone_encrypted", LargeBinary),  # sealed; NULL: not given
)

terms_offers = Table(
    "terms_offers",
    metadata,
    Column("terms_version", String(40), ForeignKey("terms_versions.id"), primary_key=True),
    Column("supplier_id", String(64), primary_key=True),
    Column("sku", String(64), primary_key=True),
    Column("description", String(400), nullable=False),
    Column("unit_price_paisa", BigInteger, nullable=False),
    Column("min_qty", BigInteger, nullable=False),
    Column("max_qty", BigInteger),
    Column("category", String(64)),  # lower case; NULL: uncategorised
    Column("lead_days", Integer),  # NULL: not said
    Column("gst_basis_points", Integer),  # hundredths of a percent; NULL: the price is final
)


def _head(name: str, versions: Table) -> Table:
    """A one-row table naming the version of `versions` in force (store.versioned.set_head)."""
    return Table(
        name,
        metadata,
        Column("id", Integer, primary_key=True, autoincrement=False),
        Column("current_version", String(40), ForeignKey(versions.c.id), nullable=False),
        Column("updated_at", UtcDateTime, nullable=False),
    )


# Intake reads it FOR SHARE and an import updates it, so no sheet is priced on terms that are
# being replaced.
terms_head = _head("terms_head", terms_versions)


def _file_versions(name: str) -> Table:
    """Each imported version of a TOML file an admin writes, kept as written (store.files)."""
    return Table(
        name,
        metadata,
        Column("id", String(40), primary_key=True),
        Column("sha256", String(64), nullable=False),
        Column("source", Text, nullable=False),
        Column("imported_at", UtcDateTime, nullable=False),
        Column("imported_by", String(100), nullable=False),
    )


# The approval policy (core.approval.policy_file) and the buyer with its branches
# (core.company.company_file): versions are evidence, never changed; drafts cite them.
policy_versions = _file_versions("policy_versions")
policy_head = _head("policy_head", policy_versions)
company_versions = _file_versions("company_versions")
company_head = _head("company_head", company_versions)

# A sheet sent twice by the same requester gets the same POs back: the bytes' sha256 is the key.
submissions = Table(
    "submissions",
    metadata,
    Column("requester_id", BigInteger, primary_key=True),
    Column("sheet_sha256", String(64), primary_key=True),
    Column("sheet_name", String(255), nullable=False),
    Column("po_numbers", JSON, nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
)

# A typed request between its summary and Submit (core.purchasing.summaries): the lines are the
# requester's words, sealed; the row is deleted 7 days after it was made (store.retention).
typed_requests = Table(
    "typed_requests",
    metadata,
    Column("request_id", String(36), primary_key=True),
    Column("requester_id", BigInteger, nullable=False),
    Column("lines_encrypted", LargeBinary, nullable=False),  # sealed JSON: lines, numbers
    Column("state", String(16), nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    Column("settled_at", UtcDateTime),  # when it was submitted or cancelled
    Index(None, "created_at"),
)

# PO serials per year; UPDATE ... RETURNING on this row hands out each number once.
po_serials = Table(
    "po_serials",
    metadata,
    Column("year", Integer, primary_key=True, autoincrement=False),
    Column("last_serial", Integer, nullable=False),
)

# Every draft version's lines, in the clear: no personal data, and the price history
# ("unit price differs from the last PO") and the budgets' committed spend need them without
# opening sealed bodies.
order_lines = Table(
    "order_lines",
    metadata,
    Column("job_id", String(36), ForeignKey("jobs.id"), primary_key=True),
    Column("draft_version", Integer, primary_key=True),
    Column("sku", String(64), primary_key=True),
    Column("supplier_id", String(64), nullable=False),
    Column("quantity", BigInteger, nullable=False),
    Column("unit_price_paisa", BigInteger, nullable=False),
    # The line's category (core.drafting.drafts.DraftLine); NULL: uncategorised.
    Column("category", String(64)),
    # What the line costs with its sales tax (DraftLine.gross_paisa), which budgets count;
    # NULL on lines stored before tax existed, whose amount is quantity x price.
    Column("gross_paisa", BigInteger),
    Index(None, "supplier_id", "sku"),
)
# The last price a SKU was sent at (store.purchasing.history) matches codes without regard to
# case, as everywhere else.
Index(
    "ix_order_lines_supplier_key_sku_key",
    func.lower(order_lines.c.supplier_id),
    func.lower(order_lines.c.sku),
)

# Single-use invitations to a role: the signed code names the row; redeeming it sets used_by
# with a compare-and-set, so a code forwarded to two people registers only the first.
invites = Table(
    "invites",
    metadata,
    Column("id", String(16), primary_key=True),
    Column("role", String(16), nullable=False),
    Column("created_by", BigInteger, nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    Column("expires_at", UtcDateTime, nullable=False),
    Column("used_by", BigInteger),
    Column("used_at", UtcDateTime),
    Column("withdrawn_at", UtcDateTime),  # its admin lost the role: it can no longer be used
    Column("group_name", String(32)),  # an approver's invitation to this group; None: the first
)

# The people the bot has met: a private chat's id is the user's id, and Telegram lets a bot
# write only to users who started it. The first name is kept to say "Approved by Ali".
telegram_users = Table(
    "telegram_users",
    metadata,
    Column("user_id", BigInteger, primary_key=True),
    Column("first_name", String(64), nullable=False),
    Column("started_at", UtcDateTime),
    Column("blocked_at", UtcDateTime),
    Column("updated_at", UtcDateTime, nullable=False),
    # What /language chose (bot.words.i18n.Language's value); NULL: the default, English.
    Column("language", String(8)),
)

# Telegram may deliver an update more than once; the first delivery claims its id.
processed_updates = Table(
    "processed_updates",
    metadata,
    Column("update_id", BigInteger, primary_key=True, autoincrement=False),
    Column("processed_at", UtcDateTime, nullable=False),
)

# Telegram messages owed (core.jobs.notices): the key makes each one owed once; a lease lets
# several processes deliver them without sending one twice at the same time.
notices = Table(
    "notices",
    metadata,
    Column("key", String(200), primary_key=True),
    Column("kind", String(16), nullable=False),
    Column("user_id", BigInteger, nullable=False),
    Column("job_id", String(36), ForeignKey("jobs.id")),  # NULL: an admin's news of no job
    Column("draft_version", Integer, nullable=False),
    Column("status", String(16), nullable=False),
    Column("version", Integer, nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("next_attempt_at", UtcDateTime, nullable=False),
    Column("lease_owner", String(100)),
    Column("lease_until", UtcDateTime),
    Column("message_id", BigInteger),
    Column("last_error", Text),
    Column("created_at", UtcDateTime, nullable=False),
    Column("updated_at", UtcDateTime, nullable=False),
    # a requester's notice: the new state; an alert: what happened (core.jobs.notices)
    Column("event", String(64), nullable=False),
    Index(None, "status", "next_attempt_at"),
    Index(None, "job_id"),
    Index(None, "user_id", "message_id"),  # the card or news a reply or a tap answers
)

# Periodic work done once per period across every process (the daily purge): `done_at` says
# when it last ran, and a lease lets one process do it while the others wait.
chores = Table(
    "chores",
    metadata,
    Column("name", String(40), primary_key=True),
    Column("done_at", UtcDateTime),
    Column("lease_owner", String(100)),
    Column("lease_until", UtcDateTime),
)

APPEND_ONLY = (
    "drafts",
    "decisions",
    "client_decisions",
    "audit_events",
    "terms_versions",
    "terms_suppliers",
    "terms_offers",
    "order_lines",
)

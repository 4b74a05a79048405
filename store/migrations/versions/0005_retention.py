"""retention: purged jobs, withdrawn invitations, daily chores, redaction-only updates

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import store.schema

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

# Per append-only table: the one UPDATE the purge may make (core.records.retention), as a condition
# on the new row, and the columns that must stay exactly as they were. Anything else still fails.
_REDACTIONS = {
    "drafts": (
        "NEW.body_encrypted = {empty}",
        ("job_id", "version", "hash", "supplier_id", "total_paisa", "line_count", "created_at"),
    ),
    "decisions": (
        "NEW.reason IS NULL",
        (
            "id",
            "job_id",
            "reviewer_id",
            "reviewer_role",
            "verdict",
            "draft_version",
            "draft_hash",
            "at",
            "expires_at",
            "policy_basis",
        ),
    ),
    "audit_events": (
        "{purged_marker}",
        ("id", "job_id", "at", "actor", "action", "from_state", "to_state"),
    ),
}
_DIALECT = {
    "postgresql": {
        "empty": "''::bytea",
        "purged_marker": "(NEW.detail::jsonb -> 'purged') IS NOT NULL",
    },
    "sqlite": {
        "empty": "X''",
        "purged_marker": "json_extract(NEW.detail, '$.purged') IS NOT NULL",
    },
}


def upgrade() -> None:
    op.add_column("jobs", sa.Column("purged_at", store.schema.UtcDateTime(timezone=True)))
    op.add_column("invites", sa.Column("withdrawn_at", store.schema.UtcDateTime(timezone=True)))
    op.create_table(
        "chores",
        sa.Column("name", sa.String(length=40), nullable=False),
        sa.Column("done_at", store.schema.UtcDateTime(timezone=True), nullable=True),
        sa.Column("lease_owner", sa.String(length=100), nullable=True),
        sa.Column("lease_until", store.schema.UtcDateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_chores")),
    )
    postgres = op.get_bind().dialect.name == "postgresql"
    words = _DIALECT["postgresql" if postgres else "sqlite"]
    for table, (allowed, kept) in _REDACTIONS.items():
        same = " AND ".join(f"NEW.{c} IS NOT DISTINCT FROM OLD.{c}" for c in kept)
        if not postgres:
            same = " AND ".join(f"NEW.{c} IS OLD.{c}" for c in kept)
        redaction = f"{allowed.format(**words)} AND {same}"
        if postgres:
            _postgres_redaction_only(table, redaction)
        else:
            op.execute(f"DROP TRIGGER {table}_no_update")
            op.execute(
                f"CREATE TRIGGER {table}_no_update BEFORE UPDATE ON {table} "
                f"WHEN NOT ({redaction}) "
                f"BEGIN SELECT RAISE(ABORT, '{table} is append-only'); END"
            )


def _postgres_redaction_only(table: str, redaction: str) -> None:
    """Replace the table's append-only trigger by one that lets `redaction` through."""
    op.execute(f"DROP TRIGGER {table}_append_only ON {table}")
    op.execute(
        f"CREATE OR REPLACE FUNCTION manzoori_{table}_redact_only() RETURNS trigger AS $$ "
        f"BEGIN IF TG_OP = 'UPDATE' AND {redaction} THEN RETURN NEW; END IF; "
        "RAISE EXCEPTION '% is append-only', TG_TABLE_NAME; END; $$ LANGUAGE plpgsql"
    )
    op.execute(
        f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
        f"FOR EACH ROW EXECUTE FUNCTION manzoori_{table}_redact_only()"
    )


def downgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    for table in _REDACTIONS:
        if postgres:
            op.execute(f"DROP TRIGGER {table}_append_only ON {table}")
            op.execute(f"DROP FUNCTION manzoori_{table}_redact_only()")
            op.execute(
                f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
                "FOR EACH ROW EXECUTE FUNCTION manzoori_append_only()"
            )
        else:
            op.execute(f"DROP TRIGGER {table}_no_update")
            op.execute(
                f"CREATE TRIGGER {table}_no_update BEFORE UPDATE ON {table} "
                f"BEGIN SELECT RAISE(ABORT, '{table} is append-only'); END"
            )
    op.drop_table("chores")
    with op.batch_alter_table("invites") as batch_op:
        batch_op.drop_column("withdrawn_at")
    with op.batch_alter_table("jobs") as batch_op:
        batch_op.drop_column("purged_at")

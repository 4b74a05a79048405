"""routing: approver groups, each job's route, each decision's stage, invites to a group

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import store.schema

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

# The columns of a decision the retention purge's one UPDATE (reason := NULL) must leave as
# they were: revision 0005's, and this revision's three.
_KEPT = (
    "id", "job_id", "reviewer_id", "reviewer_role", "verdict", "draft_version", "draft_hash",
    "at", "expires_at", "policy_basis", "stage", "policy_version", "rule",
)  # fmt: skip


def upgrade() -> None:
    op.create_table(
        "user_groups",
        sa.Column("user_id", sa.BigInteger(), nullable=False),
        sa.Column("group_name", sa.String(length=32), nullable=False),
        sa.Column("granted_by", sa.String(length=100), nullable=False),
        sa.Column("granted_at", store.schema.UtcDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("user_id", "group_name", name=op.f("pk_user_groups")),
    )
    op.add_column("jobs", sa.Column("route", sa.JSON(), nullable=True))
    op.add_column("invites", sa.Column("group_name", sa.String(length=32), nullable=True))
    op.add_column("decisions", sa.Column("stage", sa.Integer(), server_default="0", nullable=False))
    op.add_column(
        "decisions",
        sa.Column("policy_version", sa.String(length=40), server_default="", nullable=False),
    )
    op.add_column(
        "decisions", sa.Column("rule", sa.String(length=64), server_default="", nullable=False)
    )
    _decisions_redaction(_KEPT)


def _decisions_redaction(kept: tuple[str, ...]) -> None:
    """Revision 0005's guard on decisions, over `kept`: only reason := NULL may change."""
    if op.get_bind().dialect.name == "postgresql":
        same = " AND ".join(f"NEW.{c} IS NOT DISTINCT FROM OLD.{c}" for c in kept)
        op.execute(
            "CREATE OR REPLACE FUNCTION manzoori_decisions_redact_only() RETURNS trigger AS $$ "
            f"BEGIN IF TG_OP = 'UPDATE' AND NEW.reason IS NULL AND {same} THEN RETURN NEW; "
            "END IF; RAISE EXCEPTION '% is append-only', TG_TABLE_NAME; END; $$ "
            "LANGUAGE plpgsql"
        )
        return
    same = " AND ".join(f"NEW.{c} IS OLD.{c}" for c in kept)
    op.execute("DROP TRIGGER decisions_no_update")
    op.execute(
        "CREATE TRIGGER decisions_no_update BEFORE UPDATE ON decisions "
        f"WHEN NOT (NEW.reason IS NULL AND {same}) "
        "BEGIN SELECT RAISE(ABORT, 'decisions is append-only'); END"
    )


def downgrade() -> None:
    _decisions_redaction(_KEPT[:10])
    with op.batch_alter_table("decisions") as batch_op:
        batch_op.drop_column("rule")
        batch_op.drop_column("policy_version")
        batch_op.drop_column("stage")
    with op.batch_alter_table("invites") as batch_op:
        batch_op.drop_column("group_name")
    with op.batch_alter_table("jobs") as batch_op:
        batch_op.drop_column("route")
    op.drop_table("user_groups")

"""delegation: who acts for whom while an approver is away, and for whom a decision was made

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import store.schema

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

# The columns of a decision the retention purge's one UPDATE (reason := NULL) must leave as
# they were: revision 0007's, and this revision's on_behalf_of.
_KEPT_BEFORE = (
    "id", "job_id", "reviewer_id", "reviewer_role", "verdict", "draft_version", "draft_hash",
    "at", "expires_at", "policy_basis", "stage", "policy_version", "rule",
)  # fmt: skip
_KEPT = (*_KEPT_BEFORE, "on_behalf_of")


def upgrade() -> None:
    op.create_table(
        "delegations",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("delegator", sa.BigInteger(), nullable=False),
        sa.Column("delegate", sa.BigInteger(), nullable=False),
        sa.Column("starts_at", store.schema.UtcDateTime(timezone=True), nullable=False),
        sa.Column("until", store.schema.UtcDateTime(timezone=True), nullable=False),
        sa.Column("set_by", sa.String(length=100), nullable=False),
        sa.Column("ended_at", store.schema.UtcDateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_delegations")),
    )
    op.create_index(op.f("ix_delegations_until"), "delegations", ["until"], unique=False)
    op.add_column("decisions", sa.Column("on_behalf_of", sa.BigInteger(), nullable=True))
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
    _decisions_redaction(_KEPT_BEFORE)
    with op.batch_alter_table("decisions") as batch_op:
        batch_op.drop_column("on_behalf_of")
    op.drop_index(op.f("ix_delegations_until"), table_name="delegations")
    op.drop_table("delegations")

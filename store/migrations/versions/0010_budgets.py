"""budgets: the terms' categories on offers and order lines, and when each job was approved

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import store.schema

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

# The states whose approval is committed spend (core.approval.budgets.COMMITTED).
_COMMITTED = "('APPROVED', 'SENDING', 'SENT', 'UNKNOWN_OUTCOME')"


def upgrade() -> None:
    op.add_column("terms_offers", sa.Column("category", sa.String(length=64), nullable=True))
    op.add_column("order_lines", sa.Column("category", sa.String(length=64), nullable=True))
    op.add_column(
        "jobs", sa.Column("approved_at", store.schema.UtcDateTime(timezone=True), nullable=True)
    )
    op.create_index(op.f("ix_jobs_approved_at"), "jobs", ["approved_at"], unique=False)
    # Jobs approved before this revision: the time of their last "approve" audit event.
    op.execute(
        "UPDATE jobs SET approved_at = (SELECT max(e.at) FROM audit_events e "  # noqa: S608
        "WHERE e.job_id = jobs.id AND e.action = 'approve') "
        f"WHERE state IN {_COMMITTED}"
    )


def downgrade() -> None:
    # ALTER TABLE … DROP COLUMN, not a batch copy: on SQLite a copy of terms_offers or
    # order_lines would lose their append-only triggers (SQLite 3.35 and PostgreSQL alike).
    op.drop_index(op.f("ix_jobs_approved_at"), table_name="jobs")
    for table, column in (
        ("jobs", "approved_at"), ("order_lines", "category"), ("terms_offers", "category")
    ):  # fmt: skip
        op.execute(f"ALTER TABLE {table} DROP COLUMN {column}")

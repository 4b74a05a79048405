"""the supplier's answers from the link in a PO's e-mail, and its phone in the terms

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import store.schema

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD COLUMN, on SQLite too: a batch copy would drop the append-only triggers.
    op.add_column("terms_suppliers", sa.Column("phone_encrypted", sa.LargeBinary()))
    op.create_index(op.f("ix_jobs_state_updated_at"), "jobs", ["state", "updated_at"])
    op.create_table(
        "supplier_answers",
        sa.Column("job_id", sa.String(length=36), nullable=False),
        sa.Column("draft_version", sa.Integer(), nullable=False),
        sa.Column("round", sa.Integer(), nullable=False),
        sa.Column("reply", sa.String(length=16), nullable=False),
        sa.Column("key", sa.String(length=200), nullable=False),
        sa.Column("answered_at", store.schema.UtcDateTime(timezone=True), nullable=False),
        sa.Column("delivery_date", sa.String(length=10)),
        sa.Column("text_encrypted", sa.LargeBinary()),
        sa.Column("lines", sa.JSON(), nullable=False),
        sa.Column("outcome", sa.String(length=16), nullable=False),
        sa.Column("proposal_version", sa.Integer()),
        sa.Column("decided_at", store.schema.UtcDateTime(timezone=True)),
        sa.ForeignKeyConstraint(
            ["job_id"], ["jobs.id"], name=op.f("fk_supplier_answers_job_id_jobs")
        ),
        sa.PrimaryKeyConstraint(
            "job_id", "draft_version", "round", name=op.f("pk_supplier_answers")
        ),
    )


def downgrade() -> None:
    op.drop_table("supplier_answers")
    op.drop_column("terms_suppliers", "phone_encrypted")
    op.drop_index(op.f("ix_jobs_state_updated_at"), table_name="jobs")

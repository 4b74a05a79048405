"""user branches: the branch of the company file each requester orders for

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import store.schema

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # One row per requester who has a branch; none: the company's default branch. Deleted with
    # their roles, as their approver groups are (core.people.people).
    op.create_table(
        "user_branches",
        sa.Column("user_id", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("branch_id", sa.String(length=32), nullable=False),
        sa.Column("set_by", sa.String(length=64), nullable=False),
        sa.Column("set_at", store.schema.UtcDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("user_id", name=op.f("pk_user_branches")),
    )


def downgrade() -> None:
    op.drop_table("user_branches")

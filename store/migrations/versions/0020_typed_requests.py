"""typed requests: the lines a requester typed, kept (sealed) between the summary and Submit

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import store.schema

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "typed_requests",
        sa.Column("request_id", sa.String(length=36), nullable=False),
        sa.Column("requester_id", sa.BigInteger(), nullable=False),
        sa.Column("lines_encrypted", sa.LargeBinary(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("created_at", store.schema.UtcDateTime(timezone=True), nullable=False),
        sa.Column("settled_at", store.schema.UtcDateTime(timezone=True)),
        sa.PrimaryKeyConstraint("request_id", name=op.f("pk_typed_requests")),
    )
    op.create_index(
        op.f("ix_typed_requests_created_at"), "typed_requests", ["created_at"], unique=False
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_typed_requests_created_at"), table_name="typed_requests")
    op.drop_table("typed_requests")

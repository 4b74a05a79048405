"""jobless alerts: an admin's notice about no job (a policy nobody can approve for yet)

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("notices") as batch_op:
        batch_op.alter_column("job_id", existing_type=sa.String(length=36), nullable=True)
        batch_op.alter_column(
            "event",
            existing_type=sa.String(length=32),
            type_=sa.String(length=64),
            existing_nullable=False,
        )


def downgrade() -> None:
    op.execute("DELETE FROM notices WHERE job_id IS NULL")
    with op.batch_alter_table("notices") as batch_op:
        batch_op.alter_column(
            "event",
            existing_type=sa.String(length=64),
            type_=sa.String(length=32),
            existing_nullable=False,
        )
        batch_op.alter_column("job_id", existing_type=sa.String(length=36), nullable=False)

"""language: the language each person chose with /language (NULL: the default, English)

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("telegram_users", sa.Column("language", sa.String(length=8), nullable=True))


def downgrade() -> None:
    # ALTER TABLE … DROP COLUMN, as 0010 does: telegram_users keeps its rows and constraints.
    op.execute("ALTER TABLE telegram_users DROP COLUMN language")

"""growth indexes: reads that answered a person stay as quick with a year of POs as with none

The bench's grown database (bench.grown: 100,000 POs, a year of audit trail) showed three reads
that visited rows in proportion to the history: a requester's /status (every job, for want of
an index on the requester), the last price a SKU was sent at, shown on every line of the Mini
App's PO and used by drafting (every line ever sent to the supplier), the people holding a
role (every grant), and the notice a reply answers (every notice of the last 30 days). Each
now finds its rows through an index.

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(
        "ix_jobs_requester_id_created_at", "jobs", ["requester_id", "created_at"], unique=False
    )
    op.create_index(
        "ix_order_lines_supplier_key_sku_key",
        "order_lines",
        [sa.text("lower(supplier_id)"), sa.text("lower(sku)")],
        unique=False,
    )
    op.create_index("ix_user_roles_role", "user_roles", ["role"], unique=False)
    op.create_index(
        "ix_notices_user_id_message_id", "notices", ["user_id", "message_id"], unique=False
    )


def downgrade() -> None:
    op.drop_index("ix_notices_user_id_message_id", table_name="notices")
    op.drop_index("ix_user_roles_role", table_name="user_roles")
    op.drop_index("ix_order_lines_supplier_key_sku_key", table_name="order_lines")
    op.drop_index("ix_jobs_requester_id_created_at", table_name="jobs")

"""the PO a supplier can act on: payment terms, lead times and sales tax in the terms, the
tax-inclusive amount of each order line, and the PDF each e-mail carries

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import store.schema

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ADD COLUMN, on SQLite too: a batch copy would drop the append-only triggers.
    op.add_column("terms_suppliers", sa.Column("payment_terms", sa.String(length=200)))
    op.add_column("terms_offers", sa.Column("lead_days", sa.Integer()))
    op.add_column("terms_offers", sa.Column("gst_basis_points", sa.Integer()))
    op.add_column("order_lines", sa.Column("gross_paisa", sa.BigInteger()))
    op.create_table(
        "effect_documents",
        sa.Column("key", sa.String(length=200), nullable=False),
        sa.Column("pdf_encrypted", sa.LargeBinary(), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("created_at", store.schema.UtcDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["key"], ["effects.key"], name=op.f("fk_effect_documents_key_effects")
        ),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_effect_documents")),
    )


def downgrade() -> None:
    op.drop_table("effect_documents")
    op.drop_column("order_lines", "gross_paisa")
    op.drop_column("terms_offers", "gst_basis_points")
    op.drop_column("terms_offers", "lead_days")
    op.drop_column("terms_suppliers", "payment_terms")

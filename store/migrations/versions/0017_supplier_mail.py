"""suppliers' e-mail replies filed on their PO, and where the reading of each folder stands

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import store.schema

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "supplier_mail",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("job_id", sa.String(length=36), nullable=False),
        sa.Column("folder", sa.String(length=200), nullable=False),
        sa.Column("uidvalidity", sa.BigInteger(), nullable=False),
        sa.Column("uid", sa.BigInteger(), nullable=False),
        sa.Column("message_id_hash", sa.String(length=64), nullable=False),
        sa.Column("sent_at", store.schema.UtcDateTime(timezone=True)),
        sa.Column("filed_at", store.schema.UtcDateTime(timezone=True), nullable=False),
        sa.Column("matched_by", sa.String(length=16), nullable=False),
        sa.Column("on_file", sa.Boolean(), nullable=False),
        sa.Column("readable", sa.Boolean(), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("mail_encrypted", sa.LargeBinary()),
        sa.ForeignKeyConstraint(["job_id"], ["jobs.id"], name=op.f("fk_supplier_mail_job_id_jobs")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_supplier_mail")),
        sa.UniqueConstraint(
            "folder", "uidvalidity", "uid", name=op.f("uq_supplier_mail_folder_uidvalidity_uid")
        ),
    )
    op.create_index(
        op.f("ix_supplier_mail_job_id_message_id_hash"),
        "supplier_mail",
        ["job_id", "message_id_hash"],
    )
    op.create_table(
        "mailbox_cursors",
        sa.Column("folder", sa.String(length=200), nullable=False),
        sa.Column("uidvalidity", sa.BigInteger(), nullable=False),
        sa.Column("last_uid", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", store.schema.UtcDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("folder", name=op.f("pk_mailbox_cursors")),
    )


def downgrade() -> None:
    op.drop_table("mailbox_cursors")
    op.drop_index(op.f("ix_supplier_mail_job_id_message_id_hash"), table_name="supplier_mail")
    op.drop_table("supplier_mail")

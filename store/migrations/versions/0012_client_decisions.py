"""client decisions: a decision the Mini App sent under an id it generated, kept once

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import store.schema

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "client_decisions",
        sa.Column("client_id", sa.String(length=64), nullable=False),
        sa.Column("job_id", sa.String(length=36), nullable=False),
        sa.Column("reviewer_id", sa.BigInteger(), nullable=False),
        sa.Column("action", sa.String(length=16), nullable=False),
        sa.Column("request_sha256", sa.String(length=64), nullable=False),
        sa.Column("draft_version", sa.Integer(), nullable=False),
        sa.Column("at", store.schema.UtcDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["job_id"], ["jobs.id"], name=op.f("fk_client_decisions_job_id_jobs")
        ),
        sa.PrimaryKeyConstraint("client_id", name=op.f("pk_client_decisions")),
    )
    # Evidence, like the decisions it stands beside: never changed once kept.
    if op.get_bind().dialect.name == "postgresql":  # manzoori_append_only() is revision 0001's
        op.execute(
            "CREATE TRIGGER client_decisions_append_only BEFORE UPDATE OR DELETE ON "
            "client_decisions FOR EACH ROW EXECUTE FUNCTION manzoori_append_only()"
        )
    else:
        for verb in ("UPDATE", "DELETE"):
            op.execute(
                f"CREATE TRIGGER client_decisions_no_{verb.lower()} BEFORE {verb} ON "
                "client_decisions BEGIN SELECT RAISE(ABORT, 'client_decisions is append-only'); "
                "END"
            )


def downgrade() -> None:
    op.drop_table("client_decisions")

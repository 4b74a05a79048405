"""the buyer and its branches: company file versions and the one in force

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import store.schema

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "company_versions",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("source", sa.Text(), nullable=False),
        sa.Column("imported_at", store.schema.UtcDateTime(timezone=True), nullable=False),
        sa.Column("imported_by", sa.String(length=100), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_company_versions")),
    )
    op.create_table(
        "company_head",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("current_version", sa.String(length=40), nullable=False),
        sa.Column("updated_at", store.schema.UtcDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["current_version"],
            ["company_versions.id"],
            name=op.f("fk_company_head_current_version_company_versions"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_company_head")),
    )
    # A draft cites the version it was made with: versions are evidence, never changed.
    if op.get_bind().dialect.name == "postgresql":  # manzoori_append_only() is revision 0001's
        op.execute(
            "CREATE TRIGGER company_versions_append_only BEFORE UPDATE OR DELETE ON "
            "company_versions FOR EACH ROW EXECUTE FUNCTION manzoori_append_only()"
        )
    else:
        for verb in ("UPDATE", "DELETE"):
            op.execute(
                f"CREATE TRIGGER company_versions_no_{verb.lower()} BEFORE {verb} ON "
                "company_versions BEGIN SELECT RAISE(ABORT, 'company_versions is append-only'); "
                "END"
            )


def downgrade() -> None:
    op.drop_table("company_head")
    op.drop_table("company_versions")

"""resealing: the sealed columns of append-only tables may be sealed again under a new key

`manzoori keys rotate` re-seals every sealed field with MANZOORI_DATA_KEY's first key. Two of
them live in append-only tables: a draft's body (which the purge may already empty) and a
supplier's address and phone in the terms. Their triggers now let through an UPDATE that
changes those columns alone, to a Fernet token (or, for a draft, to the purge's empty body);
every other column must stay exactly as it was, as before. A body sealed again must still hash
to the draft's hash: `manzoori verify` checks it.

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-05
"""

from __future__ import annotations

from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

_DRAFT_KEPT = (
    "job_id",
    "version",
    "hash",
    "supplier_id",
    "total_paisa",
    "line_count",
    "created_at",
)
_TERMS_KEPT = ("terms_version", "supplier_id", "name", "payment_terms")


def _same(columns: tuple[str, ...], postgres: bool) -> str:
    if postgres:
        return " AND ".join(f"NEW.{c} IS NOT DISTINCT FROM OLD.{c}" for c in columns)
    return " AND ".join(f"NEW.{c} IS OLD.{c}" for c in columns)


def _token(column: str, postgres: bool) -> str:
    """`column` holds a Fernet token (its version byte 0x80, base64: "gAAAAA"), or is emptied
    by the purge: the database cannot open it, but it refuses what no key could have sealed."""
    if postgres:
        return (
            f"(substring(NEW.{column} from 1 for 6) = 'gAAAAA'::bytea OR NEW.{column} = ''::bytea)"
        )
    return f"(substr(NEW.{column}, 1, 6) = CAST('gAAAAA' AS BLOB) OR NEW.{column} = X'')"


def upgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    drafts = f"{_token('body_encrypted', postgres)} AND {_same(_DRAFT_KEPT, postgres)}"
    phone = f"(NEW.phone_encrypted IS NULL OR {_token('phone_encrypted', postgres)})"
    terms = f"{_token('email_encrypted', postgres)} AND {phone} AND {_same(_TERMS_KEPT, postgres)}"
    if postgres:
        _postgres_function("drafts", "redact_only", drafts)  # its trigger calls it by name
        op.execute("DROP TRIGGER terms_suppliers_append_only ON terms_suppliers")
        _postgres_function("terms_suppliers", "reseal_only", terms)
        op.execute(
            "CREATE TRIGGER terms_suppliers_append_only BEFORE UPDATE OR DELETE ON "
            "terms_suppliers FOR EACH ROW EXECUTE FUNCTION manzoori_terms_suppliers_reseal_only()"
        )
        return
    for table, allowed in (("drafts", drafts), ("terms_suppliers", terms)):
        op.execute(f"DROP TRIGGER {table}_no_update")
        op.execute(
            f"CREATE TRIGGER {table}_no_update BEFORE UPDATE ON {table} WHEN NOT ({allowed}) "
            f"BEGIN SELECT RAISE(ABORT, '{table} is append-only'); END"
        )


def _postgres_function(table: str, name: str, allowed: str) -> None:
    op.execute(
        f"CREATE OR REPLACE FUNCTION manzoori_{table}_{name}() RETURNS trigger AS $$ "
        f"BEGIN IF TG_OP = 'UPDATE' AND {allowed} THEN RETURN NEW; END IF; "
        "RAISE EXCEPTION '% is append-only', TG_TABLE_NAME; END; $$ LANGUAGE plpgsql"
    )


def downgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    purge = "NEW.body_encrypted = {empty}".format(empty="''::bytea" if postgres else "X''")
    drafts = f"{purge} AND {_same(_DRAFT_KEPT, postgres)}"
    if postgres:
        _postgres_function("drafts", "redact_only", drafts)
        op.execute("DROP TRIGGER terms_suppliers_append_only ON terms_suppliers")
        op.execute("DROP FUNCTION manzoori_terms_suppliers_reseal_only()")
        op.execute(
            "CREATE TRIGGER terms_suppliers_append_only BEFORE UPDATE OR DELETE ON "
            "terms_suppliers FOR EACH ROW EXECUTE FUNCTION manzoori_append_only()"
        )
        return
    op.execute("DROP TRIGGER drafts_no_update")
    op.execute(
        f"CREATE TRIGGER drafts_no_update BEFORE UPDATE ON drafts WHEN NOT ({drafts}) "
        "BEGIN SELECT RAISE(ABORT, 'drafts is append-only'); END"
    )
    op.execute("DROP TRIGGER terms_suppliers_no_update")
    op.execute(
        "CREATE TRIGGER terms_suppliers_no_update BEFORE UPDATE ON terms_suppliers "
        "BEGIN SELECT RAISE(ABORT, 'terms_suppliers is append-only'); END"
    )

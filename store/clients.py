"""SqlTx's queries for decisions a client sent under its own id (core.approval.replays)."""

from __future__ import annotations

from sqlalchemy import bindparam, insert, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from core.approval.replays import ClientAction, ClientDecision
from core.errors import InsertConflict
from store import schema

_t = schema.client_decisions
_BY_ID = select(_t).where(_t.c.client_id == bindparam("client_id"))
_INSERT = insert(_t)


class ClientDecisionQueries:
    """Mixed into SqlTx: everything here runs inside its transaction."""

    conn: AsyncConnection

    async def client_decision(self, client_id: str) -> ClientDecision | None:
        """The decision a client first sent under that id, if any."""
        row = (await self.conn.execute(_BY_ID, {"client_id": client_id})).first()
        if row is None:
            return None
        return ClientDecision(
            client_id=row.client_id,
            job_id=row.job_id,
            reviewer_id=int(row.reviewer_id),
            action=ClientAction(row.action),
            request_sha256=row.request_sha256,
            draft_version=int(row.draft_version),
            at=row.at,
        )

    async def insert_client_decision(self, decision: ClientDecision) -> None:
        """Keep a client's decision under its id; a concurrent request under the same id that
        got there first raises InsertConflict (PostgreSQL makes this one wait for it), so the
        use case runs again and finds it: a replay."""
        values = {
            "client_id": decision.client_id,
            "job_id": decision.job_id,
            "reviewer_id": decision.reviewer_id,
            "action": decision.action.value,
            "request_sha256": decision.request_sha256,
            "draft_version": decision.draft_version,
            "at": decision.at,
        }
        try:
            await self.conn.execute(_INSERT, values)
        except IntegrityError as error:
            raise InsertConflict(f"decision id {decision.client_id} was kept meanwhile") from error

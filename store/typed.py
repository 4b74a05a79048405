"""SqlTx's queries for typed requests between their summary and Submit
(core.purchasing.summaries): the lines sealed, the state moved by compare-and-set."""

from __future__ import annotations

import json
from datetime import date, datetime
from typing import Any

from sqlalchemy import insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from core.errors import InsertConflict
from core.purchasing.requests import RequestLine
from core.purchasing.summaries import SummaryState, TypedRequest
from store import schema
from store.sealing import Sealer

# What a cancelled request keeps of its lines: none.
_NO_LINES = json.dumps({"lines": [], "numbers": []}).encode()


def _line(line: RequestLine) -> dict[str, Any]:
    needed = line.needed_by.isoformat() if line.needed_by else None
    return {
        "sku": line.sku,
        "quantity": line.quantity,
        "note": line.note,
        "supplier_id": line.supplier_id,
        "ship_to": line.ship_to,
        "needed_by": needed,
    }


def _request_line(item: dict[str, Any]) -> RequestLine:
    needed = item.get("needed_by")
    return RequestLine(
        item["sku"],
        int(item["quantity"]),
        note=item.get("note") or "",
        supplier_id=item.get("supplier_id"),
        ship_to=item.get("ship_to"),
        needed_by=date.fromisoformat(needed) if needed else None,
    )


class TypedRequestQueries:
    """Mixed into SqlTx: everything here runs inside its transaction."""

    conn: AsyncConnection
    _sealer: Sealer

    async def insert_typed_request(self, request: TypedRequest) -> None:
        """Keep a typed request, its lines sealed; InsertConflict if its id is taken."""
        body = {"lines": [_line(line) for line in request.lines], "numbers": request.numbers}
        sealed = self._sealer.seal(json.dumps(body, ensure_ascii=False).encode())
        try:
            await self.conn.execute(
                insert(schema.typed_requests).values(
                    request_id=request.request_id,
                    requester_id=request.requester_id,
                    lines_encrypted=sealed,
                    state=request.state.value,
                    created_at=request.created_at,
                )
            )
        except IntegrityError as error:
            raise InsertConflict(f"typed request {request.request_id} exists") from error

    async def typed_request(self, request_id: str) -> TypedRequest | None:
        """The typed request with that id, if it is still kept."""
        t = schema.typed_requests
        row = (await self.conn.execute(select(t).where(t.c.request_id == request_id))).first()
        if row is None:
            return None
        body = json.loads(self._sealer.open(row.lines_encrypted))
        return TypedRequest(
            request_id=row.request_id,
            requester_id=int(row.requester_id),
            lines=tuple(_request_line(item) for item in body["lines"]),
            numbers=tuple(int(n) for n in body["numbers"]),
            created_at=row.created_at,
            state=SummaryState(row.state),
        )

    async def settle_typed_request(
        self, request_id: str, before: SummaryState, after: SummaryState, at: datetime
    ) -> bool:
        """Move a typed request from `before` to `after`; False if it was not in `before`
        (another tap moved it first, or it is gone). A cancelled request's lines are removed
        at once: only its id, requester, state and times stay, to answer a late tap."""
        t = schema.typed_requests
        values: dict[str, Any] = {"state": after.value, "settled_at": at}
        if after is SummaryState.CANCELLED:
            values["lines_encrypted"] = self._sealer.seal(_NO_LINES)
        result = await self.conn.execute(
            update(t).where(t.c.request_id == request_id, t.c.state == before.value).values(values)
        )
        return bool(result.rowcount)

"""SqlTx's queries for the supplier's answers (core.suppliers.pages)."""

from __future__ import annotations

import json
from datetime import date, datetime
from typing import Any

from sqlalchemy import func, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from core.errors import InsertConflict
from core.jobs.answers import Answer, LineProposal, Outcome, Reply
from core.jobs.jobs import Job
from core.jobs.states import State
from store import schema
from store.rows import job_from_row
from store.sealing import Sealer


class SupplierQueries:
    """Mixed into SqlTx: everything here runs inside its transaction."""

    conn: AsyncConnection
    _sealer: Sealer

    async def supplier_answers(self, job_id: str) -> list[Answer]:
        """What the job's supplier answered, oldest first; a purged job's texts are empty."""
        t = schema.supplier_answers
        query = (
            select(t)
            .where(t.c.job_id == job_id)
            .order_by(t.c.answered_at, t.c.draft_version, t.c.round)
        )
        return [self._answer(row) for row in await self.conn.execute(query)]

    def _answer(self, row: Any) -> Answer:
        texts: dict[str, str] = {}
        if row.text_encrypted:
            texts = json.loads(self._sealer.open(row.text_encrypted))
        return Answer(
            job_id=row.job_id,
            draft_version=row.draft_version,
            round=row.round,
            reply=Reply(row.reply),
            key=row.key,
            answered_at=row.answered_at,
            delivery_date=date.fromisoformat(row.delivery_date) if row.delivery_date else None,
            reason=texts.get("reason", ""),
            note=texts.get("note", ""),
            lines=tuple(
                LineProposal(item["line"], item.get("quantity"), item.get("unit_price_paisa"))
                for item in row.lines
            ),
            outcome=Outcome(row.outcome),
            proposal_version=row.proposal_version,
            decided_at=row.decided_at,
        )

    async def insert_supplier_answer(self, answer: Answer) -> None:
        """Keep a supplier's answer, its reason and note sealed; InsertConflict if its version
        and round were taken meanwhile (two POSTs at once: the loser reads the winner's)."""
        texts = {k: v for k, v in (("reason", answer.reason), ("note", answer.note)) if v}
        lines = [
            {
                key: value
                for key, value in (
                    ("line", p.line),
                    ("quantity", p.quantity),
                    ("unit_price_paisa", p.unit_price_paisa),
                )
                if value is not None
            }
            for p in answer.lines
        ]
        values = {
            "job_id": answer.job_id,
            "draft_version": answer.draft_version,
            "round": answer.round,
            "reply": answer.reply.value,
            "key": answer.key,
            "answered_at": answer.answered_at,
            "delivery_date": answer.delivery_date.isoformat() if answer.delivery_date else None,
            "text_encrypted": self._sealer.seal(json.dumps(texts).encode()) if texts else None,
            "lines": lines,
            "outcome": answer.outcome.value,
            "proposal_version": answer.proposal_version,
            "decided_at": answer.decided_at,
        }
        try:
            await self.conn.execute(insert(schema.supplier_answers).values(values))
        except IntegrityError as error:
            raise InsertConflict(f"an answer to {answer.key} was kept meanwhile") from error

    async def decide_supplier_answer(
        self, answer: Answer, outcome: Outcome, at: datetime, proposal_version: int | None = None
    ) -> None:
        """Record what became of an answer: a proposal's version, or the approvers' decision."""
        t = schema.supplier_answers
        values: dict[str, Any] = {"outcome": outcome.value}
        if proposal_version is not None:
            values["proposal_version"] = proposal_version
        if outcome is not Outcome.STANDS:
            values["decided_at"] = at
        await self.conn.execute(
            update(t)
            .where(
                t.c.job_id == answer.job_id,
                t.c.draft_version == answer.draft_version,
                t.c.round == answer.round,
            )
            .values(values)
        )

    async def latest_draft_version(self, job_id: str) -> int:
        """The highest draft version stored for the job; 0 before its first."""
        d = schema.drafts
        query = select(func.max(d.c.version)).where(d.c.job_id == job_id)
        return int((await self.conn.execute(query)).scalar_one_or_none() or 0)

    async def jobs_sent_since(self, since: datetime) -> list[Job]:
        """SENT jobs last changed at or after `since`, oldest first (the jobs' state and
        updated_at index keeps this a range read)."""
        t = schema.jobs
        query = (
            select(t)
            .where(t.c.state == State.SENT.value, t.c.updated_at >= since)
            .order_by(t.c.updated_at, t.c.po_number)
        )
        return [job_from_row(row) for row in await self.conn.execute(query)]

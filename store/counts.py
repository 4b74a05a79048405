"""SqlTx's counts for the metrics (bot/web/metrics.py): rows by state or status, read at
scrape time so every process reports the same database."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Column, Table, func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from store import schema


@dataclass(frozen=True)
class RowCounts:
    """Jobs by state, outbox effects by status and notices by status, as the rows say."""

    jobs: dict[str, int]
    effects: dict[str, int]
    notices: dict[str, int]


class CountQueries:
    """Mixed into SqlTx: everything here runs inside its transaction."""

    conn: AsyncConnection

    async def row_counts(self) -> RowCounts:
        """Every job state, effect status and notice status with at least one row, counted."""
        return RowCounts(
            jobs=await self._grouped(schema.jobs, schema.jobs.c.state),
            effects=await self._grouped(schema.effects, schema.effects.c.status),
            notices=await self._grouped(schema.notices, schema.notices.c.status),
        )

    async def _grouped(self, table: Table, column: Column[str]) -> dict[str, int]:
        rows = await self.conn.execute(
            select(column, func.count()).select_from(table).group_by(column)
        )
        return {value: count for value, count in rows.all()}

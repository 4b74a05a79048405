"""SqlTx's queries for the approval policy: its versions, and the one in force."""

from __future__ import annotations

import functools
from dataclasses import replace
from datetime import datetime
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from core.approval.policies import Policy
from core.approval.policy_file import parse_policy
from core.errors import InsertConflict
from store import schema
from store.versioned import head_version, set_head


class PolicyQueries:
    """Mixed into SqlTx: everything here runs inside its transaction."""

    conn: AsyncConnection
    _postgres: bool
    _reading: bool

    async def policy_version(self, *, for_update: bool = False) -> str | None:
        """The policy version in force, or None before any import. An import reads it FOR
        UPDATE on PostgreSQL, so that two imports at once go one after the other."""
        locks = self._postgres and not self._reading and for_update
        return await head_version(self.conn, schema.policy_head, "update" if locks else None)

    async def current_policy(self) -> Policy | None:
        """The policy in force, or None if none was ever imported."""
        version = await self.policy_version()
        return None if version is None else await self.policy(version)

    async def policy(self, version: str) -> Policy | None:
        """One stored policy version, or None if there is no such version."""
        t = schema.policy_versions
        source = (
            await self.conn.execute(select(t.c.source).where(t.c.id == version))
        ).scalar_one_or_none()
        return None if source is None else _parsed(version, source)

    async def policy_record(self, version: str) -> dict[str, Any] | None:
        """A stored version's row (its file, hash, import time and who), or None."""
        t = schema.policy_versions
        row = (await self.conn.execute(select(t).where(t.c.id == version))).first()
        return None if row is None else dict(row._mapping)

    async def insert_policy(
        self, version: str, sha256: str, source: str, at: datetime, by: str
    ) -> None:
        """Store a new version, as its file was written, and put it in force."""
        try:
            await self.conn.execute(
                insert(schema.policy_versions).values(
                    id=version, sha256=sha256, source=source, imported_at=at, imported_by=by
                )
            )
        except IntegrityError as error:  # a concurrent import stored this version first
            raise InsertConflict("another import stored this policy version meanwhile") from error
        await self.set_current_policy(version, at)

    async def set_current_policy(self, version: str, at: datetime) -> None:
        """Put a stored version in force."""
        await set_head(self.conn, schema.policy_head, version, at)


@functools.lru_cache(maxsize=16)
def _parsed(version: str, source: str) -> Policy:
    """A stored version's policy; versions never change, so each is parsed once a process."""
    policy, problems = parse_policy(source)
    if policy is None:  # it was checked when imported: the stored text was altered
        raise ValueError(f"stored policy {version} no longer reads: {problems[0]}")
    return replace(policy, version=version)

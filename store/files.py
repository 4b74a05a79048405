"""SqlTx's queries for the TOML files an admin writes and imports, the approval policy and the
buyer with its branches: each version kept as its file was written, one in force, and each
stored version parsed once a process (versions never change)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Generic, Protocol, TypeVar

from sqlalchemy import Table, insert, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from core.approval.policies import Policy
from core.approval.policy_file import parse_policy
from core.company.company import Company
from core.company.company_file import parse_company
from core.errors import InsertConflict
from core.problems import Problem
from core.versions import FileKind
from store import schema
from store.versioned import head_version, set_head


class _Versioned(Protocol):
    """What a file parses to: a dataclass that names its stored version."""

    @property
    def version(self) -> str: ...


V = TypeVar("V", bound=_Versioned)


@dataclass(frozen=True)
class KeptFile(Generic[V]):
    """A kind of file: its tables, and its parser."""

    kind: FileKind
    versions: Table
    head: Table
    parse: Callable[[str], tuple[V | None, list[Problem]]]


POLICY: KeptFile[Policy] = KeptFile(
    FileKind.POLICY, schema.policy_versions, schema.policy_head, parse_policy
)
COMPANY: KeptFile[Company] = KeptFile(
    FileKind.COMPANY, schema.company_versions, schema.company_head, parse_company
)
_KEPT: dict[FileKind, KeptFile[Any]] = {kept.kind: kept for kept in (POLICY, COMPANY)}


class FileQueries:
    """Mixed into SqlTx: everything here runs inside its transaction."""

    conn: AsyncConnection
    _postgres: bool
    _reading: bool

    async def file_version(self, kind: FileKind, *, for_update: bool = False) -> str | None:
        """The version of a kind of file in force, or None before any import. An import reads
        it FOR UPDATE on PostgreSQL, so that two imports at once go one after the other."""
        locks = self._postgres and not self._reading and for_update
        return await head_version(self.conn, _KEPT[kind].head, "update" if locks else None)

    async def file_record(self, kind: FileKind, version: str) -> dict[str, Any] | None:
        """A stored version's row (its file, hash, import time and who), or None."""
        t = _KEPT[kind].versions
        row = (await self.conn.execute(select(t).where(t.c.id == version))).first()
        return None if row is None else dict(row._mapping)

    async def insert_file(
        self, kind: FileKind, version: str, sha256: str, source: str, at: datetime, by: str
    ) -> None:
        """Store a new version, as its file was written, and put it in force."""
        try:
            await self.conn.execute(
                insert(_KEPT[kind].versions).values(
                    id=version, sha256=sha256, source=source, imported_at=at, imported_by=by
                )
            )
        except IntegrityError as error:  # a concurrent import stored this version first
            message = f"another import stored this {kind.value} version meanwhile"
            raise InsertConflict(message) from error
        await self.set_file_in_force(kind, version, at)

    async def set_file_in_force(self, kind: FileKind, version: str, at: datetime) -> None:
        """Put a stored version in force."""
        await set_head(self.conn, _KEPT[kind].head, version, at)

    async def current_policy(self) -> Policy | None:
        """The approval policy in force, or None if none was ever imported."""
        return await self._in_force(POLICY)

    async def policy(self, version: str) -> Policy | None:
        """One stored policy version, or None if there is no such version."""
        return await self._stored(POLICY, version)

    async def current_company(self) -> Company | None:
        """The buyer and its branches in force, or None if none were ever imported."""
        return await self._in_force(COMPANY)

    async def company(self, version: str) -> Company | None:
        """One stored company version, or None if there is no such version."""
        return await self._stored(COMPANY, version)

    async def _in_force(self, kept: KeptFile[V]) -> V | None:
        version = await self.file_version(kept.kind)
        return None if version is None else await self._stored(kept, version)

    async def _stored(self, kept: KeptFile[V], version: str) -> V | None:
        """One stored version, parsed, or None if there is no such version."""
        t = _KEPT[kept.kind].versions
        source = (
            await self.conn.execute(select(t.c.source).where(t.c.id == version))
        ).scalar_one_or_none()
        return None if source is None else _parsed(kept, version, source)


@functools.lru_cache(maxsize=32)
def _parsed(kept: KeptFile[V], version: str, source: str) -> V:
    """A stored version, parsed; it was checked when imported, so a problem now means the
    stored text was altered."""
    parsed, problems = kept.parse(source)
    if parsed is None:
        raise ValueError(f"stored {kept.kind.value} {version} no longer reads: {problems[0]}")
    return replace(parsed, version=version)  # type: ignore[type-var]

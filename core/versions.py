"""The files an admin writes and imports (the approval policy, the buyer and its branches),
kept version by version: a new version for new content, the one in force, and who imported
it when. Versions are evidence and never change: a request cites the ones it was made under."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING

from core.problems import ProblemCode

if TYPE_CHECKING:  # the store's transaction, named in a signature only
    from core.ports import Tx


class FileKind(StrEnum):
    """A kind of file an admin imports; the store keeps each kind's versions apart."""

    POLICY = "policy"  # core.approval.policy_file
    COMPANY = "company"  # core.company.company_file

    @property
    def too_big(self) -> ProblemCode:
        """The problem of a file of this kind over core.toml_files.MAX_TOML_BYTES."""
        return _TOO_BIG[self]


_TOO_BIG = {
    FileKind.POLICY: ProblemCode.POLICY_TOO_BIG,
    FileKind.COMPANY: ProblemCode.COMPANY_TOO_BIG,
}


@dataclass(frozen=True)
class Kept:
    """What an import did: the version in force, and whether this import made it so."""

    version: str
    created: bool


async def keep_version(
    tx: Tx, kind: FileKind, source: str, sha256: str, version: str, now: datetime, actor: str
) -> Kept:
    """Put a checked file in force as `version`, unless the version in force has the same
    content (`sha256` of it, layout and comments aside); a version of this name stored already
    (the same content imported within the same second) is put in force again."""
    current = await tx.file_version(kind, for_update=True)
    if current is not None and (await tx.file_record(kind, current) or {}).get("sha256") == sha256:
        return Kept(current, created=False)
    if await tx.file_record(kind, version) is not None:
        await tx.set_file_in_force(kind, version, now)
    else:
        await tx.insert_file(kind, version, sha256, source, now, actor)
    return Kept(version, created=True)

"""Use cases of the company file: check it, and put it in force as a new version."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import datetime

from core.company.company import content_hash
from core.company.company_file import parse_company
from core.drafting.terms import version_id
from core.jobs.transitions import retry_on_stale
from core.ports import Offload, Store, run_inline
from core.problems import Problem
from core.versions import FileKind, Kept, keep_version


@dataclass(frozen=True)
class CompanyImport:
    """What an import did: the version in force and whether it is new; or the problems."""

    problems: tuple[Problem, ...] = ()
    version: str = ""
    created: bool = False


async def import_company(
    store: Store, text: str, now: datetime, actor: str, *, offload: Offload = run_inline
) -> CompanyImport:
    """Check a company file (through `offload`) and put it in force as a new version, unless
    the version in force says the same (layout and comments aside); stored as written, with
    who and when. Drafts made from now on cite it."""
    company, problems = await offload(functools.partial(parse_company, text))
    if company is None:
        return CompanyImport(problems=tuple(problems))  # parse_company sorts them by line
    kept = await _keep(store, text, content_hash(company), now, actor)
    return CompanyImport(version=kept.version, created=kept.created)


@retry_on_stale
async def _keep(store: Store, text: str, sha256: str, now: datetime, actor: str) -> Kept:
    async with store.begin() as tx:
        version = version_id(sha256, now)
        return await keep_version(tx, FileKind.COMPANY, text, sha256, version, now, actor)

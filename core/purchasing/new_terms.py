"""New supplier terms: a terms file checked and put in force as a new version, and each
waiting PO it reprices re-drafted (a new version to approve, or cancelled if nothing is left
to order), said in the audit trail as what superseded what."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from datetime import datetime
from typing import Any

from core.approval.opening import Revision, revise_in
from core.approval.policies import Rules
from core.drafting.drafts import Flag
from core.drafting.intake import in_file_order, redraft
from core.drafting.tables import Table
from core.drafting.terms import Terms, content_hash, parse_terms, version_id
from core.jobs import proposals
from core.jobs.jobs import AuditEvent, Job, Stamp
from core.jobs.sends import cancel_open_effects
from core.jobs.states import Action, State
from core.jobs.transitions import move, retry_on_stale
from core.ports import Store, Tx
from core.problems import Problem
from core.purchasing.submissions import dual_flag_above

# Approved but not yet (possibly) sent: a new price must be approved before it is mailed.
REDRAFTABLE = frozenset({State.AWAITING_APPROVAL, State.APPROVED, State.FAILED_RETRYABLE})


@dataclass(frozen=True)
class TermsImport:
    """What an import did: the version in force, whether it is new, or the problems."""

    problems: tuple[Problem, ...] = ()
    version: str = ""
    created: bool = False


@dataclass(frozen=True)
class Superseded:
    """A waiting PO that new terms changed: earlier approvals of it no longer count."""

    po_number: str
    previous_version: int
    job: Job  # AWAITING_APPROVAL with a new draft, or CANCELLED if nothing is left to order
    changes: tuple[Flag, ...]


async def import_terms(store: Store, table: Table, now: datetime, actor: str) -> TermsImport:
    """Check a terms file and store it as the new version, unless it equals the current one."""
    terms, problems = parse_terms(table)
    if terms is None:
        return TermsImport(problems=tuple(in_file_order(problems)))
    return await _store_terms(store, terms, content_hash(terms), now, actor)


@retry_on_stale
async def _store_terms(
    store: Store, terms: Terms, sha: str, now: datetime, actor: str
) -> TermsImport:
    async with store.begin() as tx:
        current = await tx.terms_version(for_update=True)
        if current is not None and await tx.terms_sha256(current) == sha:
            return TermsImport(version=current, created=False)
        version = version_id(sha, now)
        if await tx.terms_sha256(version) == sha:  # stored earlier within this very second
            # By a concurrent first import that committed after our first read (there was no
            # head row to lock then), or in force earlier and since replaced: read the head
            # again to tell the two apart.
            if await tx.terms_version(for_update=True) == version:
                return TermsImport(version=version, created=False)
            await tx.set_current_terms(version, now)
        else:
            await tx.insert_terms(replace(terms, version=version), sha, now, actor)
        return TermsImport(version=version, created=True)


async def apply_terms(store: Store, now: datetime, rules: Rules) -> list[Superseded]:
    """Re-check every waiting PO not yet checked against the terms in force; re-draft the
    ones they change. Runs on every runner pass, so a PO that comes back to waiting later
    (a retry, a reconciliation, a reissue) is caught too."""
    async with store.reading() as tx:  # a scan: the re-drafts write, each on its own
        version = await tx.terms_version()
        if version is None:
            return []
        stale = [
            job.po_number
            for job in await tx.jobs_in_states(REDRAFTABLE)
            # jobs not made from a sheet have no terms to compare with
            if job.source_versions.get("terms_version") not in (None, version)
        ]
    superseded = []
    for number in stale:
        result = await _redraft(store, number, version, now, rules)
        if result is not None:
            superseded.append(result)
    return superseded


@retry_on_stale
async def _redraft(
    store: Store, number: str, version: str, now: datetime, rules: Rules
) -> Superseded | None:
    async with store.begin() as tx:
        job = await tx.job_by_po(number)
        if job is None or job.state not in REDRAFTABLE or job.draft_version is None:
            return None
        checked = job.source_versions.get("terms_version")
        new, old = await tx.terms(version), await tx.terms(str(checked))
        if checked == version or new is None or old is None:
            return None
        stamp = Stamp(f"terms:{version}", now)
        sources = {**job.source_versions, "terms_version": version}
        if await proposals.proposal_of(tx, job) is not None:  # the supplier's own prices
            await _checked(tx, job, stamp, sources)
            return None
        draft = await tx.draft(job.id, job.draft_version)
        pairs = [(draft.supplier_id, line.sku) for line in draft.lines]
        history, threshold = await tx.history(pairs), await dual_flag_above(tx, rules)
        today = now.astimezone(rules.approval.zone).date()
        outcome = redraft(draft, old, new, history, threshold, today)
        if not outcome.changes:
            await _checked(tx, job, stamp, sources)
            return None
        # The changes go into the audit trail, so any process can report them (see superseded_by).
        evidence = {
            "note": f"supplier terms {version} changed this PO",
            "previous_version": job.draft_version,
            "changes": [asdict(flag) for flag in outcome.changes],
        }
        if outcome.draft is None:
            await cancel_open_effects(tx, job, now, "the supplier no longer offers its lines")
            after = await move(tx, job, Action.CANCEL, stamp, evidence, source_versions=sources)
        else:
            revision = Revision(outcome.draft, evidence, {"source_versions": sources})
            after = await revise_in(tx, job, revision, stamp, rules)
        return Superseded(job.po_number, job.draft_version, after, outcome.changes)


def superseded_from_audit(job: Job, detail: dict[str, Any]) -> Superseded:
    """A Superseded rebuilt from the audit event a re-draft wrote, by whichever process."""
    changes = tuple(
        Flag(c["code"], c["sku"], tuple(c["amounts"]), c["ref"]) for c in detail["changes"]
    )
    return Superseded(job.po_number, detail["previous_version"], job, changes)


async def superseded_by(store: Store, version: str) -> list[Superseded]:
    """Every PO that terms `version` re-drafted or cancelled, whoever applied them."""
    async with store.reading() as tx:
        return [
            superseded_from_audit(job, detail)
            for job, detail in await tx.terms_redrafts(f"terms:{version}")
        ]


async def _checked(tx: Tx, job: Job, stamp: Stamp, sources: dict[str, str]) -> None:
    """Record that new terms leave this PO as it is."""
    moved = await tx.update_job(job, source_versions=sources, updated_at=stamp.at)
    detail = {"job_version": moved.version, "terms_version": sources["terms_version"]}
    await tx.append_audit(AuditEvent.unmoved(job, stamp, "terms_checked", detail))

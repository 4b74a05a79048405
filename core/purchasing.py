"""Use cases from spreadsheet to waiting PO: import terms, check and submit sheets, re-draft.

A sheet is checked and priced outside any write transaction (on a snapshot read without the
write lock); then its POs are written in one short transaction that re-checks what the plan
rested on: either every PO of the sheet exists afterwards, with its draft, audit trail and
approval request, or none does.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from typing import Any, TypeVar

from core.budgets import month_standings, refusal
from core.drafts import Draft, Flag, canonical_bytes
from core.errors import NotARequester
from core.intake import build_draft, check_sheet, in_file_order, po_number, redraft
from core.jobs import WORKFLOW_VERSION, AuditEvent, Job, NewJob, Stamp
from core.opening import Revision, open_in, revise_in
from core.policies import BudgetMode, Role, Rules
from core.ports import Offload, ReadTx, Store, Tx
from core.problems import Problem, ProblemCode
from core.sends import cancel_open_effects
from core.standing import policy_now
from core.states import Action, State
from core.tables import Table
from core.terms import Terms, content_hash, parse_terms, version_id
from core.transitions import move, retry_on_stale

T = TypeVar("T")
# A sheet is planned at most this often: the terms changing again during the second check
# is a rare race, and the requester is told to send the sheet again (TERMS_CHANGED).
PLANS = 2
TERMS_CHANGED = Problem(0, None, ProblemCode.TERMS_CHANGED)

# Approved but not yet (possibly) sent: a new price must be approved before it is mailed.
REDRAFTABLE = frozenset({State.AWAITING_APPROVAL, State.APPROVED, State.FAILED_RETRYABLE})


@dataclass(frozen=True)
class Sheet:
    """A file as received: its name, the sha256 of its bytes, and its rows."""

    name: str
    sha256: str
    table: Table


@dataclass(frozen=True)
class Submission:
    """What a sheet became: problems (nothing made), or POs with their drafts."""

    problems: tuple[Problem, ...] = ()
    orders: tuple[tuple[Job, Draft], ...] = ()
    repeated: bool = False  # the same requester sent the same bytes before: these are its POs
    # Groups some POs wait for with nobody in them to ask: no card went out, admins alerted.
    unasked: tuple[str, ...] = ()


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
        if await tx.terms_sha256(version) == sha:  # in force earlier within this very second
            await tx.set_current_terms(version, now)
        else:
            await tx.insert_terms(replace(terms, version=version), sha, now, actor)
        return TermsImport(version=version, created=True)


async def run_inline(work: Callable[[], T], /) -> T:
    """An Offload that runs the work right here: for the CLI and tests, which have no event
    loop to keep free for others."""
    return work()


async def preview_sheet(
    store: Store,
    sheet: Sheet,
    rules: Rules,
    *,
    now: datetime | None = None,
    offload: Offload = run_inline,
) -> Submission:
    """Validate and price a sheet exactly as a submission would, and store nothing; with
    `now`, a hard budget is checked as a submission then would check it."""
    async with store.reading() as tx:
        terms = await tx.current_terms()
    drafts, problems = await _plan(store, sheet.table, terms, rules, offload)
    if not problems and now is not None:
        async with store.reading() as tx:
            problems = await hard_budget_refusal(tx, drafts, now, rules)
    if problems:
        return Submission(problems=tuple(problems))
    return Submission(orders=tuple((_unsaved(d), d) for d in drafts))


def _unsaved(draft: Draft) -> Job:
    """A stand-in job for a preview: nothing of it is stored."""
    new = NewJob(id="", requester_id=0, input_ref="")
    job = Job.received(new, draft.po_number, datetime.min)
    return replace(
        job, state=State.DRAFTED, supplier_id=draft.supplier_id, total_paisa=draft.total_paisa
    )


@dataclass(frozen=True)
class Numbering:
    """What the shell supplies to name new POs: the year of their numbers, and job ids."""

    year: int  # in MANZOORI_TIMEZONE: a PO made on 1 January at 00:30 PKT is of the new year
    new_id: Callable[[], str]


@dataclass(frozen=True)
class _Planned:
    """A sheet checked and priced outside any write transaction, on one terms version."""

    requester_id: int
    sheet: Sheet
    now: datetime
    terms_version: str
    drafts: tuple[Draft, ...]  # numbered NEW-1, NEW-2…: the real numbers come when recorded


async def submit_sheet(
    store: Store,
    requester_id: int,
    sheet: Sheet,
    now: datetime,
    rules: Rules,
    numbering: Numbering,
    *,
    offload: Offload = run_inline,
) -> Submission:
    """Turn a requester's sheet into one waiting PO per supplier, or report every problem.

    Checking and pricing run through `offload`, outside any transaction, on what a read-only
    transaction saw; the short write transaction then re-checks the requester, an earlier
    submission of the same bytes and the terms version, and writes every PO or none. If the
    terms changed meanwhile, the sheet is planned once more on the new ones."""
    for _ in range(PLANS):
        async with store.reading() as tx:
            await _require_requester(tx, requester_id)
            earlier = await tx.submission(requester_id, sheet.sha256)
            if earlier is not None:
                return Submission(orders=tuple(await _orders(tx, earlier)), repeated=True)
            terms = await tx.current_terms()
        drafts, problems = await _plan(store, sheet.table, terms, rules, offload)
        if problems or terms is None:
            return Submission(problems=tuple(problems))
        planned = _Planned(requester_id, sheet, now, terms.version, tuple(drafts))
        made = await _record(store, planned, rules, numbering)
        if made is not None:
            return made
    return Submission(problems=(TERMS_CHANGED,))


async def dual_flag_above(tx: ReadTx, rules: Rules) -> int | None:
    """The total above which a draft is flagged "two approvers needed": the configuration's,
    while no policy is imported; None under an imported one (the card shows its stages)."""
    return rules.approval.dual_above_paisa if await tx.policy_version() is None else None


async def hard_budget_refusal(
    tx: ReadTx, drafts: Sequence[Draft], now: datetime, rules: Rules
) -> list[Problem]:
    """Why a sheet is refused under a hard budget in force: each category its POs together
    take over this month, with the figures; nothing if none does (or no hard budget)."""
    policy = await policy_now(tx, rules.approval.default_policy)
    if policy.budgets is None or policy.budgets.mode is not BudgetMode.HARD:
        return []
    lines = [line for draft in drafts for line in draft.lines]
    return refusal(await month_standings(tx, policy, lines, now, rules.approval.zone))


async def _require_requester(tx: ReadTx, requester_id: int) -> None:
    if Role.REQUESTER not in await tx.roles(requester_id):
        raise NotARequester(f"user {requester_id} is not a registered requester")


async def _plan(
    store: Store, table: Table, terms: Terms | None, rules: Rules, offload: Offload
) -> tuple[list[Draft], list[Problem]]:
    """Check and price a sheet against `terms`: CPU work through `offload`, and one read-only
    transaction for the price history in between."""
    orders, problems = await offload(functools.partial(check_sheet, table, terms))
    if problems or terms is None:
        return [], problems
    pairs = [(o.supplier.supplier_id, line.offer.sku) for o in orders for line in o.lines]
    async with store.reading() as tx:
        history = await tx.history(pairs)
        threshold = await dual_flag_above(tx, rules)
    known = terms

    def price() -> list[Draft]:
        drafts = [
            build_draft(order, f"NEW-{n}", known, history, threshold)
            for n, order in enumerate(orders, start=1)
        ]
        for draft in drafts:  # their bytes made here, not in the write transaction
            canonical_bytes(draft)  # (Draft.renumbered shares them with the numbered copy)
        return drafts

    return await offload(price), []


@retry_on_stale
async def _record(
    store: Store, planned: _Planned, rules: Rules, numbering: Numbering
) -> Submission | None:
    """Write a planned sheet's POs in one transaction; None if the terms changed since."""
    requester_id, sheet, now = planned.requester_id, planned.sheet, planned.now
    async with store.begin() as tx:
        await _require_requester(tx, requester_id)  # revoked while the sheet was checked?
        earlier = await tx.submission(requester_id, sheet.sha256)
        if earlier is not None:  # the same sheet, sent twice at once: the first one won
            return Submission(orders=tuple(await _orders(tx, earlier)), repeated=True)
        if await tx.terms_version() != planned.terms_version:
            return None
        refused = await hard_budget_refusal(tx, planned.drafts, now, rules)
        if refused:
            return Submission(problems=tuple(refused))
        year = numbering.year
        numbers = [po_number(year, await tx.next_po_serial(year)) for _ in planned.drafts]
        made: list[tuple[Job, Draft]] = []
        unasked: list[str] = []
        for planned_draft, number in zip(planned.drafts, numbers, strict=True):
            draft = planned_draft.renumbered(number)
            new = NewJob(
                id=numbering.new_id(),
                requester_id=requester_id,
                input_ref=f"sheet:{sheet.sha256}:{draft.supplier_id}",
                source_versions={
                    "sheet_sha256": sheet.sha256,
                    "sheet_name": sheet.name,
                    "terms_version": planned.terms_version,
                    "workflow_version": WORKFLOW_VERSION,
                },
                tool_results={"lines": len(draft.lines), "flags": len(draft.flags)},
            )
            opened = await open_in(tx, new, draft, now, rules)
            made.append((opened.job, draft))
            if opened.unasked is not None and opened.unasked not in unasked:
                unasked.append(opened.unasked)  # its admins were alerted by ask_approvers
        await tx.insert_submission(requester_id, sheet.sha256, sheet.name, numbers, now)
        return Submission(orders=tuple(made), unasked=tuple(unasked))


async def _orders(tx: ReadTx, po_numbers: list[str]) -> list[tuple[Job, Draft]]:
    found = []
    for number in po_numbers:
        job = await tx.job_by_po(number)
        if job is not None and job.draft_version is not None:
            found.append((job, await tx.draft(job.id, job.draft_version)))
    return found


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
        draft = await tx.draft(job.id, job.draft_version)
        pairs = [(draft.supplier_id, line.sku) for line in draft.lines]
        history, threshold = await tx.history(pairs), await dual_flag_above(tx, rules)
        outcome = redraft(draft, old, new, history, threshold)
        stamp = Stamp(f"terms:{version}", now)
        sources = {**job.source_versions, "terms_version": version}
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
    states = (job.state, job.state)
    await tx.append_audit(
        AuditEvent.stamped(stamp, "terms_checked", detail, job_id=job.id, states=states)
    )

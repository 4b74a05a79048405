"""A requester's sheet, from spreadsheet to waiting POs. A sheet is checked and priced outside
any write transaction (on a snapshot read without the write lock); then its POs are written
in one short transaction that re-checks what the plan rested on: either every PO of the
sheet exists afterwards, with its draft, audit trail and approval request, or none does."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from core.approval.budgets import month_standings, refusal
from core.approval.opening import open_in
from core.approval.policies import BudgetMode, Role, Rules
from core.approval.standing import policy_now
from core.company.company import Company
from core.drafting.drafts import Draft, canonical_bytes
from core.drafting.intake import Branches, build_draft, check_sheet, po_number
from core.drafting.tables import Table
from core.drafting.terms import Terms
from core.errors import NotARequester
from core.jobs.jobs import WORKFLOW_VERSION, Job, NewJob
from core.jobs.states import State
from core.jobs.transitions import retry_on_stale
from core.ports import Offload, ReadTx, Store, run_inline
from core.problems import Problem, ProblemCode
from core.versions import FileKind

# A sheet is planned at most this often: the terms changing again during the second check
# is a rare race, and the requester is told to send the sheet again (TERMS_CHANGED).
PLANS = 2

TERMS_CHANGED = Problem(0, None, ProblemCode.TERMS_CHANGED)


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
        company = await tx.current_company()
    branches = branches_for(company, None)
    drafts, problems = await _plan(
        store, sheet.table, terms, company, branches, rules, offload, now
    )
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
    admin: bool  # vouched for by the shell (submit_sheet)
    sheet: Sheet
    now: datetime
    terms_version: str
    company_version: str  # "" without a company file
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
    admin: bool = False,
) -> Submission:
    """Turn a requester's sheet into one waiting PO per supplier and delivery branch, or
    report every problem. `admin`: the shell vouches that the sender is an admin (one of
    MANZOORI_ADMIN_IDS, which the store does not hold), who may order as a requester does.

    Checking and pricing run through `offload`, outside any transaction, on what a read-only
    transaction saw; the short write transaction then re-checks the requester, an earlier
    submission of the same bytes and the terms and company versions, and writes every PO or
    none. If either changed meanwhile, the sheet is planned once more on the new ones."""
    for _ in range(PLANS):
        async with store.reading() as tx:
            await _require_orderer(tx, requester_id, admin)
            earlier = await tx.submission(requester_id, sheet.sha256)
            if earlier is not None:
                return Submission(orders=tuple(await _orders(tx, earlier)), repeated=True)
            terms = await tx.current_terms()
            company = await tx.current_company()
            branches = branches_for(company, await tx.branch_of(requester_id))
        drafts, problems = await _plan(
            store, sheet.table, terms, company, branches, rules, offload, now
        )
        if problems or terms is None:
            return Submission(problems=tuple(problems))
        cited = company.version if company is not None else ""
        planned = _Planned(requester_id, admin, sheet, now, terms.version, cited, tuple(drafts))
        made = await _record(store, planned, rules, numbering)
        if made is not None:
            return made
    return Submission(problems=(TERMS_CHANGED,))


async def dual_flag_above(tx: ReadTx, rules: Rules) -> int | None:
    """The total above which a draft is flagged "two approvers needed": the configuration's,
    while no policy is imported; None under an imported one (the card shows its stages)."""
    return (
        rules.approval.dual_above_paisa if await tx.file_version(FileKind.POLICY) is None else None
    )


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


def branches_for(company: Company | None, requester_branch: str | None) -> Branches:
    """Where a requester's sheet may deliver: the company's branches, and by default the
    requester's own branch (one the company file still has), else the company's default."""
    if company is None:
        return Branches()
    ids = tuple(b.branch_id for b in company.branches)
    home = requester_branch if requester_branch in ids else company.default_branch
    return Branches(ids, home)


async def _require_orderer(tx: ReadTx, requester_id: int, admin: bool) -> None:
    """Requesters order; so may admins (granted in the store, or vouched for by the shell)."""
    if not admin and not await tx.roles(requester_id) & {Role.REQUESTER, Role.ADMIN}:
        raise NotARequester(f"user {requester_id} is not a registered requester")


async def _plan(
    store: Store,
    table: Table,
    terms: Terms | None,
    company: Company | None,
    branches: Branches,
    rules: Rules,
    offload: Offload,
    now: datetime | None,
) -> tuple[list[Draft], list[Problem]]:
    """Check and price a sheet against `terms` and the company's branches: CPU work through
    `offload`, and one read-only transaction for the price history in between. `now` dates
    the deliveries (in the buyer's time zone)."""
    orders, problems = await offload(functools.partial(check_sheet, table, terms, branches))
    if problems or terms is None:
        return [], problems
    pairs = [(o.supplier.supplier_id, line.offer.sku) for o in orders for line in o.lines]
    async with store.reading() as tx:
        history = await tx.history(pairs)
        threshold = await dual_flag_above(tx, rules)
    known = terms
    today = now.astimezone(rules.approval.zone).date() if now is not None else None
    cited = company.version if company is not None else ""

    def price() -> list[Draft]:
        drafts = [
            build_draft(
                order, f"NEW-{n}", known, history, threshold, today=today, company_version=cited
            )
            for n, order in enumerate(orders, start=1)
        ]
        for draft in drafts:  # their bytes and totals made here, not in the write transaction
            canonical_bytes(draft)  # (Draft.renumbered shares them with the numbered copy)
            draft.total_paisa  # noqa: B018 - a cached property, computed here to be kept
        return drafts

    return await offload(price), []


@retry_on_stale
async def _record(
    store: Store, planned: _Planned, rules: Rules, numbering: Numbering
) -> Submission | None:
    """Write a planned sheet's POs in one transaction; None if the terms changed since."""
    requester_id, sheet, now = planned.requester_id, planned.sheet, planned.now
    async with store.begin() as tx:
        await _require_orderer(tx, requester_id, planned.admin)  # revoked meanwhile?
        earlier = await tx.submission(requester_id, sheet.sha256)
        if earlier is not None:  # the same sheet, sent twice at once: the first one won
            return Submission(orders=tuple(await _orders(tx, earlier)), repeated=True)
        if await tx.terms_version() != planned.terms_version:
            return None
        if (await tx.file_version(FileKind.COMPANY) or "") != planned.company_version:
            return None  # a new company file meanwhile: its branches are read again
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
                input_ref=":".join(
                    ["sheet", sheet.sha256, draft.supplier_id]
                    + ([draft.branch_id] if draft.branch_id else [])
                ),
                source_versions={
                    "sheet_sha256": sheet.sha256,
                    "sheet_name": sheet.name,
                    "terms_version": planned.terms_version,
                    "workflow_version": WORKFLOW_VERSION,
                    **(
                        {"company_version": planned.company_version}
                        if planned.company_version
                        else {}
                    ),
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

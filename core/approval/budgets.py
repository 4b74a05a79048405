"""Monthly budgets per category: what a PO uses of its categories' months, what is committed
already, what is left, and whether it goes over.

A budget (core.approval.policies.Budgets) holds for a calendar month in the configured time zone
(MANZOORI_TIMEZONE, Pakistan time by default). What is committed of a month is the line
totals, by the terms' category of each line, of the POs approved within it that are approved,
sending, sent or of unknown outcome (COMMITTED): the shell sums them (ReadTx.committed_spend)
and everything else here is worked out from those figures. A line without a category, or of a
category without a budget, counts against nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, tzinfo

from babel.dates import format_date

from core.approval.policies import Budgets, Policy
from core.approval.routes import Route
from core.drafting.drafts import DraftLine
from core.drafting.money import format_pkr
from core.jobs.jobs import Job
from core.jobs.states import State
from core.ports import ReadTx
from core.problems import Problem, ProblemCode

# POs whose money is spent, or as good as: approved, and not (yet) known to be unsent.
COMMITTED = frozenset({State.APPROVED, State.SENDING, State.SENT, State.UNKNOWN_OUTCOME})


@dataclass(frozen=True)
class Month:
    """One calendar month in a time zone, as the UTC instants it runs between."""

    year: int
    month: int
    start: datetime  # UTC, the first instant of the month
    end: datetime  # UTC, the first instant of the next month (not in this one)

    @property
    def name(self) -> str:
        """ "December", as cards say it."""
        return format_date(date(self.year, self.month, 1), "MMMM", locale="en")

    @property
    def title(self) -> str:
        """ "December 2026"."""
        return f"{self.name} {self.year}"


def month_of(at: datetime, zone: tzinfo) -> Month:
    """The calendar month in `zone` that the instant `at` falls in."""
    local = at.astimezone(zone)
    year, month = local.year, local.month
    after = (year + 1, 1) if month == 12 else (year, month + 1)
    start = datetime(year, month, 1, tzinfo=zone).astimezone(UTC)
    end = datetime(*after, 1, tzinfo=zone).astimezone(UTC)
    return Month(year, month, start, end)


def uses(lines: Iterable[DraftLine], budgets: Budgets) -> dict[str, int]:
    """What these lines spend of each category that has a budget, in paisa."""
    spent: dict[str, int] = {}
    for line in lines:
        if line.category in budgets.monthly_paisa:
            spent[line.category] = spent.get(line.category, 0) + line.gross_paisa
    return spent


@dataclass(frozen=True)
class CategoryMonth:
    """One category's month as a PO (or a sheet's POs together) finds it."""

    category: str
    month: Month
    budget_paisa: int
    committed_paisa: int  # approved within the month already (COMMITTED)
    uses_paisa: int  # what this PO, or this sheet, spends of it

    @property
    def left_paisa(self) -> int:
        """What is left of the month before this PO; below 0 once it is already over."""
        return self.budget_paisa - self.committed_paisa

    @property
    def over_paisa(self) -> int:
        """How far this PO takes the month over its budget; 0 if it stays within it."""
        return max(0, self.committed_paisa + self.uses_paisa - self.budget_paisa)

    @property
    def over(self) -> bool:
        """Whether this PO takes the category over its month's budget."""
        return self.over_paisa > 0


def standings(
    budgets: Budgets, month: Month, committed: Mapping[str, int], used: Mapping[str, int]
) -> tuple[CategoryMonth, ...]:
    """Each budgeted category `used` touches, by name: its budget, what `committed` has of it
    already, and what this PO uses."""
    return tuple(
        CategoryMonth(c, month, budgets.monthly_paisa[c], committed.get(c, 0), used[c])
        for c in sorted(used)
    )


def over_budget(found: Iterable[CategoryMonth]) -> bool:
    """Whether any category goes over its month."""
    return any(c.over for c in found)


async def month_standings(
    tx: ReadTx,
    policy: Policy | None,
    lines: Iterable[DraftLine],
    at: datetime,
    zone: tzinfo,
    *,
    excluding: str | None = None,
) -> tuple[CategoryMonth, ...]:
    """The months, at `at`, of the budgeted categories these lines touch under `policy`'s
    budgets (none without budgets). `excluding`: a job whose own approval is not to count
    (a PO approved once and re-drafted)."""
    if policy is None or policy.budgets is None:
        return ()
    used = uses(lines, policy.budgets)
    if not used:
        return ()
    month = month_of(at, zone)
    committed = await tx.committed_spend(month.start, month.end, excluding)
    return standings(policy.budgets, month, committed, used)


async def route_policy(tx: ReadTx, job: Job) -> Policy | None:
    """The imported policy version the job's current route follows; None for the configured
    default, which has no budgets."""
    if job.route is None:
        return None
    version = Route.from_plain(job.route).policy_version
    return await tx.policy(version) if version else None


async def needs_reason(tx: ReadTx, job: Job, now: datetime, zone: tzinfo) -> bool:
    """Whether approving the job's current draft now takes a category over its month, under
    the budgets of the policy its route follows: such an approval needs a reason (soft mode,
    and hard mode for a PO that went over only after its sheet was accepted)."""
    policy = await route_policy(tx, job)
    if policy is None or policy.budgets is None or job.draft_version is None:
        return False
    draft = await tx.draft(job.id, job.draft_version)
    return over_budget(await month_standings(tx, policy, draft.lines, now, zone))


def refusal(found: Iterable[CategoryMonth]) -> list[Problem]:
    """Why a sheet is refused in hard mode: each category it takes over, with the figures."""
    return [
        Problem(
            0,
            None,
            ProblemCode.OVER_BUDGET,
            {
                "month": c.month.title,
                "category": c.category,
                "budget": format_pkr(c.budget_paisa),
                "committed": format_pkr(c.committed_paisa),
                "uses": format_pkr(c.uses_paisa),
                "over": format_pkr(c.over_paisa),
            },
        )
        for c in found
        if c.over
    ]

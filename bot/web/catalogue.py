"""The catalogue page's one read: what the terms in force offer, where the requester may have it
delivered, what is left of this month's budgets, and their recent POs to order again, as one
compact JSON document the page keeps and searches on the phone.

Each offer is an array, not an object (5,000 SKUs are a few hundred kilobytes before gzip,
and the keys would be most of it):

    items:     [sku, description, category, supplier index, unit price in paisa, min, max,
                lead days, GST in basis points]   (max and lead days null when not said)
    suppliers: [[id, name], …]                    (an item's supplier index points here)
    branches:  [[id, name], …], home: the requester's own (the company's default)
    budgets:   [[category, left in paisa, budget in paisa], …] for this month, if budgeted
    recent:    [{po, supplier, total, when, lines: [[sku, supplier id, quantity, note], …]}, …]

Every text the page shows comes in `labels`, in the viewer's language (bot.web.words).
"""

from __future__ import annotations

from typing import Any

from bot.clock import utcnow
from bot.config import Settings
from bot.web.words import CATALOGUE_LABELS
from bot.words.i18n import Translator
from bot.words.texts import DAY_MONTH, local_time
from core.approval.budgets import month_of
from core.approval.standing import policy_now
from core.drafting.drafts import Draft
from core.drafting.money import format_pkr
from core.drafting.terms import Terms, match_key
from core.errors import DraftPurged
from core.jobs.jobs import Job
from core.ports import ReadTx, ShellReadTx, ShellStore
from core.purchasing.submissions import branches_for
from core.texts import flatten

# The POs "Order again" offers: a phone screen's worth, as /status lists.
RECENT = 10


async def catalogue_json(
    store: ShellStore, settings: Settings, user_id: int, tr: Translator
) -> dict[str, Any]:
    """The catalogue as this requester's page reads it."""
    now = utcnow()
    async with store.reading() as tx:
        terms = await tx.current_terms()
        company = await tx.current_company()
        home = branches_for(company, await tx.branch_of(user_id)).home or None
        budgets = await _budgets(tx, settings, now)
        recent = await _recent(tx, user_id)
    suppliers, items = _offers(terms)
    branches = [[b.branch_id, flatten(b.name)] for b in company.branches] if company else []
    return {
        "lang": tr.language.value,
        "dir": "rtl" if tr.rtl else "ltr",
        "terms": terms.version if terms is not None else None,
        "today": now.astimezone(settings.tz).date().isoformat(),
        "suppliers": suppliers,
        "items": items,
        "branches": branches,
        "home": home,
        "budgets": budgets,
        "recent": [_po(job, draft, settings, tr) for job, draft in recent],
        "labels": _labels(tr),
    }


def _offers(terms: Terms | None) -> tuple[list[list[str]], list[list[Any]]]:
    """The suppliers, and every offer by SKU (then supplier, cheapest first)."""
    if terms is None:
        return [], []
    ids = sorted(terms.suppliers, key=match_key)
    index = {supplier_id: n for n, supplier_id in enumerate(ids)}
    suppliers = [[supplier_id, flatten(terms.suppliers[supplier_id].name)] for supplier_id in ids]
    offers = sorted(
        terms.offers, key=lambda o: (match_key(o.sku), o.unit_price_paisa, o.supplier_id)
    )
    items = [
        [
            o.sku,
            flatten(o.description),
            o.category,
            index[o.supplier_id],
            o.unit_price_paisa,
            o.min_qty,
            o.max_qty,
            o.lead_days,
            o.gst_basis_points,
        ]
        for o in offers
    ]
    return suppliers, items


async def _budgets(tx: ReadTx, settings: Settings, now: Any) -> list[list[Any]]:
    """This month's budgets under the policy in force: [category, left, budget] each."""
    rules = settings.rules().approval
    policy = await policy_now(tx, rules.default_policy)
    if policy.budgets is None:
        return []
    month = month_of(now, rules.zone)
    committed = await tx.committed_spend(month.start, month.end)
    return [
        [category, budget - committed.get(category, 0), budget]
        for category, budget in sorted(policy.budgets.monthly_paisa.items())
    ]


async def _recent(tx: ShellReadTx, user_id: int) -> list[tuple[Job, Draft]]:
    """The requester's recent POs with their current drafts (a purged one left out)."""
    found = []
    for job in await tx.jobs_of(user_id, RECENT):
        if job.draft_version is None:
            continue
        try:
            found.append((job, await tx.draft(job.id, job.draft_version)))
        except DraftPurged:
            continue
    return found


def _po(job: Job, draft: Draft, settings: Settings, tr: Translator) -> dict[str, Any]:
    """A recent PO as "Order again" lists it."""
    return {
        "po": job.po_number,
        "supplier": flatten(draft.supplier_name),
        "total": format_pkr(draft.total_paisa),
        "when": local_time(job.created_at, settings.tz, DAY_MONTH),
        "lines": [[line.sku, draft.supplier_id, line.quantity, line.note] for line in draft.lines],
    }


def _labels(tr: Translator) -> dict[str, str]:
    """The page's words; a placeholder stays for the page to fill (isolated in Urdu)."""
    labels = {}
    for name, (text, placeholders) in CATALOGUE_LABELS.items():
        labels[name] = tr(text, **{p: "{" + p + "}" for p in placeholders})
    return labels

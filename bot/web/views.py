"""The Mini App's view of a PO as JSON (core.purchasing.po_view rendered): every text already in the
viewer's language, from the bot's own catalogues, so the page has none of its own. Values
that read left to right (SKUs, amounts, PO numbers) come isolated inside Urdu sentences, as
on a card (bot.words.i18n); the page puts them in <bdi> where it shows them bare.
"""

from __future__ import annotations

from datetime import datetime, tzinfo
from decimal import Decimal
from typing import Any

from bot.clock import utcnow
from bot.config import Settings
from bot.documents.copies import PREVIEW_LINES, approver_copy
from bot.telegram.cards import budget_line, delivery_line
from bot.telegram.texts import supplier_line
from bot.web.decisions import refusal
from bot.web.words import LABELS, NOT_FOUND, PDF_SENT
from bot.words.flags import flag_text
from bot.words.i18n import Translator
from bot.words.texts import DATE_AND_TIME, DAY_MONTH, NO_PDF_PREVIEW, evidence_source, local_time
from core.approval.policies import Role, Verdict
from core.drafting.money import format_pkr
from core.errors import DraftPurged, ReadRefused, UnknownJob
from core.jobs.jobs import Job
from core.ports import ReadTx, Store
from core.purchasing.po_view import ChainStage, PoLine, PoView, may_read, po_view
from core.suppliers.pages import supplier_status
from core.texts import flatten


async def po_json(
    store: Store,
    settings: Settings,
    po: str,
    viewer: tuple[int, frozenset[Role]],
    tr: Translator,
) -> tuple[int, dict[str, Any]]:
    """The HTTP status and JSON of `po` as the viewer (id, roles) sees it; 404 alike for no
    such PO, one they may not read, and one whose draft the retention purge removed."""
    user_id, roles = viewer
    try:
        async with store.reading() as tx:
            view = await po_view(tx, po, user_id, utcnow(), settings.rules(), roles=roles)
            supplier = await _supplier_text(tx, view.job, settings.tz, tr)
    except (UnknownJob, ReadRefused, DraftPurged):  # a purged PO has nothing left to show
        return 404, {"error": tr(NOT_FOUND, po=flatten(po)[:40])}
    why = None
    if view.refusal is not None:
        why = await refusal(store, settings, view.job, user_id, view.refusal, tr)
    return 200, {**render(view, settings, tr, why), "supplier_text": supplier}


async def _supplier_text(tx: ReadTx, job: Job, tz: tzinfo, tr: Translator) -> str | None:
    """Where a sent PO stands with its supplier (core.suppliers.pages), in words; None for a
    PO that has not gone out."""
    standing = await supplier_status(tx, job)
    if standing is None:
        return None
    status, since = standing
    answers = [a for a in await tx.supplier_answers(job.id) if a.status is status]
    return supplier_line(status, since, answers[-1] if answers else None, tz, tr=tr)


def render(view: PoView, settings: Settings, tr: Translator, why: str | None) -> dict[str, Any]:
    """The view as the page reads it."""
    job, tz = view.job, settings.tz
    labels = {name: tr(text) for name, text in LABELS.items()}
    labels["new_total"] = tr("New total: {amount}", amount="{amount}")
    labels["expires_in"] = tr("Expires in {time}", time="{time}")
    return {
        "lang": tr.language.value,
        "dir": "rtl" if tr.rtl else "ltr",
        "po": job.po_number,
        "state": job.state.value,
        "version": view.draft_version,
        "hash": view.draft_hash,
        "heading": f"🧾 {job.po_number}",
        "supplier": f"{flatten(view.supplier_name)} ({tr.ltr(view.supplier_email)})",
        "version_text": tr(
            "Draft v{version} · {hash}", version=view.draft_version, hash=view.short_hash
        ),
        "total_text": _total(view, tr),
        "delivery_text": delivery_line(
            view.branch_id, view.delivery_date, view.payment_terms, tr=tr
        )
        or None,
        "deadline": view.deadline.isoformat() if view.deadline else None,
        "lines_heading": tr.plural("{count} line", "{count} lines", len(view.lines)),
        "lines": [_line(line, tz, tr) for line in view.lines],
        "flags": [f"⚠️ {flatten(flag_text(flag, tr=tr))}" for flag in view.flags],
        "budgets": [budget_line(month, tr=tr) for month in view.budgets],
        "evidence": _evidence(view, tz, tr),
        "chain": [_stage(stage, i, len(view.chain), tz, tr) for i, stage in enumerate(view.chain)],
        "decision": {"allowed": view.may_decide, "why": why, "needs_reason": view.needs_reason},
        "labels": labels,
    }


def _line(line: PoLine, tz: tzinfo, tr: Translator) -> dict[str, Any]:
    """One line: what it orders, at what price, against the last PO sent to its supplier."""
    last = drift = None
    if line.last is not None:
        price, ref = format_pkr(line.last.unit_price_paisa), line.last.po_number
        change = "" if line.drift_percent is None else f" ({_signed(line.drift_percent)})"
        if line.last.sent_at is None:
            last = tr("Last sent PO {ref}: {price} each", ref=ref, price=price) + change
        else:
            when = local_time(line.last.sent_at, tz, DAY_MONTH)
            last = tr("Last sent PO {ref}, {when}: {price} each", ref=ref, when=when, price=price)
            last += change
    if line.drifted and line.drift_percent is not None:
        drift = tr("▲ {rise} above the last PO: past the drift tolerance",
                   rise=f"{line.drift_percent}%")  # fmt: skip
    return {
        "line": line.number,
        "sku": flatten(line.sku),
        "description": flatten(line.description),
        "quantity": line.quantity,
        "unit_price_paisa": line.unit_price_paisa,
        "unit_price": format_pkr(line.unit_price_paisa),
        "amount": format_pkr(line.amount_paisa),
        "last": last,
        "drift": drift,
        "note": flatten(line.note)[:200] or None,  # the requester's, as typed: text only
        "category": flatten(line.category) or None,
        "gst_basis_points": line.gst_basis_points,
    }


def _total(view: PoView, tr: Translator) -> str:
    """The total; with sales tax, the tax inside it said too."""
    if not view.gst_paisa:
        return tr("Total: {amount}", amount=format_pkr(view.total_paisa))
    return tr(
        "Total with GST: {amount} (GST {tax})",
        amount=format_pkr(view.total_paisa),
        tax=format_pkr(view.gst_paisa),
    )


def _signed(percent: Decimal) -> str:
    """A price change as "+4.2%" or "-3.0%"."""
    return f"{percent:+}%"


def _evidence(view: PoView, tz: tzinfo, tr: Translator) -> list[str]:
    """Where the draft comes from: the terms, the sheet, the requester, the policy."""
    at = view.terms_imported_at
    source = evidence_source(
        flatten(view.terms_version),
        local_time(at, tz) if at is not None else None,
        view.sheet_name,
        lambda name: flatten(name)[:60],
        tr=tr,
    )
    policy = tr(
        "Policy {version}, rule {rule}",
        version=flatten(view.policy_version or "default"),
        rule=flatten(view.rule),
    )
    return [source, tr("Requested by {name}", name=flatten(view.requester)), policy]


def _stage(
    stage: ChainStage, index: int, stages: int, tz: tzinfo, tr: Translator
) -> dict[str, Any]:
    """One stage of the approval chain and who decided in it."""
    text = tr.plural(
        "Stage {stage} of {stages}: {group}, {count} approval",
        "Stage {stage} of {stages}: {group}, {count} approvals",
        stage.approvals,
        stage=index + 1,
        stages=stages,
        group=flatten(stage.title),
    )
    decided = []
    for decision in stage.decisions:
        who = flatten(decision.reviewer)
        if decision.on_behalf_of is not None:
            who = tr("{name} for {delegator}", name=who, delegator=flatten(decision.on_behalf_of))
        at = _when(decision.at, tz)
        if decision.verdict is Verdict.APPROVE:
            decided.append(tr("✅ {name} at {at}", name=who, at=at))
        else:
            decided.append(tr("❌ {name} at {at}", name=who, at=at))
    return {"text": f"⏳ {text}" if stage.waiting else text, "waiting": stage.waiting,
            "decided": decided}  # fmt: skip


def _when(moment: datetime, tz: tzinfo) -> str:
    """A decision's time as cards show it."""
    return local_time(moment, tz, DATE_AND_TIME)


async def pdf_copy(
    store: Store,
    settings: Settings,
    po: str,
    user_id: int,
    roles: frozenset[Role],
    tr: Translator,
) -> tuple[int, dict[str, Any], tuple[str, bytes] | None]:
    """The PDF of the PO's current version for a viewer who may read it: (status, the answer,
    (file name, bytes)); no PDF for a PO they may not read, or one too long to preview."""
    now, default = utcnow(), settings.rules().approval.default_policy
    async with store.reading() as tx:
        job = await tx.job_by_po(po)
        readable = job is not None and await may_read(tx, job, user_id, roles, now, default)
    if job is None or not readable or job.draft_version is None:
        return 404, {"error": tr(NOT_FOUND, po=flatten(po)[:40])}, None
    try:
        async with store.reading() as tx:
            lines = len((await tx.draft(job.id, job.draft_version)).lines)
        if lines > PREVIEW_LINES:
            return 413, {"error": tr(NO_PDF_PREVIEW, count=f"{lines:,}")}, None
        pdf = await approver_copy(store, job, job.draft_version, settings.tz, now)
    except DraftPurged:
        return 404, {"error": tr(NOT_FOUND, po=flatten(po)[:40])}, None
    name = f"{job.po_number}-v{job.draft_version}.pdf"
    return 200, {"status": tr(PDF_SENT)}, (name, pdf)

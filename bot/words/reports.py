"""What the CLI prints about jobs, and /history says in its reader's language: JSON-ready
dictionaries and plain-text renderings.

A reason is typed in Telegram and an error is a server's reply: in the text rendering each goes
through core.texts.flatten, so neither can add a line to /history or `jobs show`."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, tzinfo
from typing import Any

from bot.words.i18n import ENGLISH, N_, Translator
from bot.words.texts import TIMESTAMP, local_time
from core.approval.policies import Decision, Verdict
from core.drafting.money import format_pkr
from core.jobs.answers import Answer
from core.jobs.effects import EffectKind, message_id
from core.jobs.jobs import AuditEvent, Effect, Job
from core.jobs.states import Action
from core.messaging.pending import COMMENT, COMMENT_TEXT
from core.people.users import name_of
from core.ports import ShellReadTx
from core.records.retention import JOBS, PURGED, STRANGER_NAMES, Removed, Stale
from core.suppliers.pages import supplier_status
from core.suppliers.replies import FiledMail
from core.texts import flatten


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def job_summary(job: Job) -> dict[str, Any]:
    """One line's worth of a job."""
    return {
        "po_number": job.po_number,
        "state": job.state.value,
        "draft_version": job.draft_version,
        "supplier_id": job.supplier_id,
        "total_paisa": job.total_paisa,
        "requester_id": job.requester_id,
        "updated_at": _iso(job.updated_at),
    }


def _decided(a: dict[str, Any], tr: Translator) -> str:
    """ "approved by Bilal (202) for Ali (101)"."""
    who = {"name": flatten(a["reviewer"]), "id": a["reviewer_id"]}
    if a["decision"] == Verdict.APPROVE.value:
        said = tr("approved by {name} ({id})", **who)
    elif a["decision"] == Verdict.REJECT.value:
        said = tr("rejected by {name} ({id})", **who)
    else:  # a verdict this version does not know: its stored word
        said = tr("{decision} by {name} ({id})", decision=a["decision"], **who)
    if a["for_id"] is None:
        return said
    return said + tr(" for {name} ({id})", name=flatten(a["for"]), id=a["for_id"])


async def job_detail(tx: ShellReadTx, job: Job, mail_domain: str) -> dict[str, Any]:
    """Everything an admin needs to judge a job: approvals, sends and the audit trail.

    Each send shows its Message-ID, which the supplier or the mail server's log can be
    searched for when an outcome has to be reconciled. A purged job says when it was purged
    and what went (core.records.retention); nothing here needs its draft body.
    """
    trail, effects = await tx.audit(job.id), await tx.effects_for(job.id)
    purged = next((a for a in trail if a.action == PURGED), None)
    return {
        **job_summary(job),
        "job_id": job.id,
        "draft_hash": job.draft_hash,
        "workflow_version": job.workflow_version,
        "source_versions": job.source_versions,
        "retry_count": job.retry_count,
        "decision_deadline": _iso(job.decision_deadline),
        "created_at": _iso(job.created_at),
        "approvals": [await _approval(tx, d) for d in await tx.decisions(job.id)],
        "effects": [_send(e, mail_domain) for e in effects],
        "cancellation": _cancellation(job, trail, effects, mail_domain),
        "supplier": await _supplier(tx, job),
        "audit": [_event(a) for a in trail],
        "purged_at": _iso(purged.at) if purged else None,
        "purged": purged.detail.get("removed", {}) if purged else None,
    }


async def _approval(tx: ShellReadTx, d: Decision) -> dict[str, Any]:
    """A decision as an admin reads it: who, by name, and for whom when a delegate made it."""
    return {
        "reviewer_id": d.reviewer_id,
        "reviewer": await name_of(tx, d.reviewer_id),
        "for_id": d.on_behalf_of,
        "for": None if d.on_behalf_of is None else await name_of(tx, d.on_behalf_of),
        "role": d.reviewer_role.value,
        "decision": d.verdict.value,
        "draft_version": d.draft_version,
        "draft_hash": d.draft_hash,
        "at": _iso(d.at),
        "expires_at": _iso(d.expires_at),
        "policy_basis": d.policy_basis,
        "policy_version": d.policy_version,
        "rule": d.rule,
        "stage": d.stage + 1,
        "reason": d.reason,
    }


def _cancellation(
    job: Job, trail: list[AuditEvent], effects: list[Effect], mail_domain: str
) -> dict[str, Any] | None:
    """A sent PO called off (core.outbox.calling_off): where it stands, why, by whom and when,
    and its cancellation e-mail; None for a PO never called off after it was sent."""
    called = [a for a in trail if a.action == Action.CANCEL_SENT.value]
    if not called:
        return None
    sends = [e for e in effects if e.kind == EffectKind.CANCEL_PO]
    return {
        "state": job.state.value,
        "reason": called[-1].detail.get("reason"),
        "by": called[-1].actor,
        "at": _iso(called[-1].at),
        "effect": _send(sends[-1], mail_domain) if sends else None,
    }


async def _supplier(tx: ShellReadTx, job: Job) -> dict[str, Any] | None:
    """Where a sent PO stands with its supplier (core.suppliers.pages.supplier_status), since
    when, and every answer the supplier gave from the e-mails' links; None for a PO that never
    went out."""
    standing = await supplier_status(tx, job)
    if standing is None:
        return None
    status, since = standing
    return {
        "status": status.value,
        "at": _iso(since),
        "answers": [_answer(a) for a in await tx.supplier_answers(job.id)],
        "replies": [_reply(r) for r in await tx.supplier_mails(job.id)],
    }


def _reply(r: FiledMail) -> dict[str, Any]:
    """An e-mail reply filed on the PO (core.suppliers.replies): who, when, how it was matched;
    its text stays in the database, sealed."""
    mail = r.mail
    return {
        "at": _iso(mail.date or r.filed_at),
        "filed_at": _iso(r.filed_at),
        "from": mail.sender or None,
        "on_file": r.on_file,
        "subject": mail.subject or None,
        "matched_by": r.matched_by,
        "attachments": [{"name": a.name, "size": a.size} for a in mail.attachments],
        "size": mail.size,
        "readable": mail.readable,
    }


def _answer(a: Answer) -> dict[str, Any]:
    return {
        "draft_version": a.draft_version,
        "round": a.round,
        "answer": a.status.value,
        "at": _iso(a.answered_at),
        "key": a.key,
        "delivery_date": a.delivery_date.isoformat() if a.delivery_date else None,
        "reason": a.reason or None,
        "note": a.note or None,
        "lines": [
            {"line": p.line, "quantity": p.quantity, "unit_price_paisa": p.unit_price_paisa}
            for p in a.lines
        ],
        "outcome": a.outcome.value,
    }


def _send(e: Effect, mail_domain: str) -> dict[str, Any]:
    return {
        "kind": e.kind,
        "idempotency_key": e.key,
        "message_id": message_id(e.key, mail_domain),
        "status": e.status.value,
        "attempts": e.attempts,
        "next_attempt_at": _iso(e.next_attempt_at),
        "started_at": _iso(e.started_at),
        "last_error": e.last_error,
        "result": e.result,
    }


def _event(a: AuditEvent) -> dict[str, Any]:
    return {
        "at": _iso(a.at),
        "actor": a.actor,
        "action": a.action,
        "from_state": a.from_state and a.from_state.value,
        "to_state": a.to_state and a.to_state.value,
        "detail": a.detail,
    }


def table(rows: list[dict[str, Any]]) -> str:
    """Jobs as aligned columns."""
    if not rows:
        return "no jobs"
    header = ("PO", "STATE", "V", "SUPPLIER", "TOTAL", "UPDATED")
    lines = [header] + [
        (
            r["po_number"],
            r["state"],
            str(r["draft_version"] or "-"),
            r["supplier_id"] or "-",
            format_pkr(r["total_paisa"]) if r["total_paisa"] is not None else "-",
            (r["updated_at"] or "")[:19],
        )
        for r in rows
    ]
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip()
        for line in lines
    )


def _local(iso: str | None, tz: tzinfo) -> str:
    """An ISO timestamp as a person in `tz` reads it."""
    return "-" if iso is None else local_time(datetime.fromisoformat(iso), tz, TIMESTAMP)


def text(
    detail: dict[str, Any], tz: tzinfo, *, send_errors: bool = True, tr: Translator = ENGLISH
) -> str:
    """One job for a person to read, times in `tz` (MANZOORI_TIMEZONE), in `tr`'s language
    (states, actions and keys are codes, shown as they are); `send_errors`: with the
    provider's replies to its sends (which may name an address: admins only)."""
    total = detail["total_paisa"]
    out = [
        f"{tr.ltr(detail['po_number'])}  {tr.ltr(detail['state'])}",
        "  "
        + tr(
            "draft v{version}  {hash}", version=detail["draft_version"], hash=detail["draft_hash"]
        ),
        "  "
        + tr(
            "supplier {supplier}  total {total}",
            supplier=detail["supplier_id"],
            total=format_pkr(total) if total is not None else "-",
        ),
        *_purge_line(detail, tz, tr),
        tr("approvals:"),
        *(_approval_line(a, tz, tr) for a in detail["approvals"]),
        tr("sends:"),
        *(_send_line(e, send_errors, tr) for e in detail["effects"]),
        *_supplier_lines(detail, tz, tr),
        tr("audit:"),
        *(
            f"  {tr.ltr(_local(a['at'], tz))}  {tr.ltr(flatten(a['actor']))}  "
            f"{tr.ltr(a['action'])}  "
            + tr.ltr(f"{a['from_state'] or '-'} -> {a['to_state'] or '-'}")
            + _comment(a, tr)
            for a in detail["audit"]
        ),
    ]
    return "\n".join(out)


def _supplier_lines(detail: dict[str, Any], tz: tzinfo, tr: Translator) -> list[str]:
    """Where a sent PO stands with its supplier, and since when; nothing for one not sent."""
    supplier = detail.get("supplier")
    if not supplier:
        return []
    at = tr.ltr(_local(supplier["at"], tz))
    lines = [tr("supplier: {status} since {at}", status=tr.ltr(supplier["status"]), at=at)]
    for reply in supplier.get("replies", ()):
        when, sender = tr.ltr(_local(reply["at"], tz)), tr.ltr(flatten(reply["from"] or "?"))
        lines.append(tr("  e-mail reply from {sender} at {at}", sender=sender, at=when))
    return lines


def _approval_line(a: dict[str, Any], tz: tzinfo, tr: Translator) -> str:
    """A decision on /history: when, who (for whom), the version, stage, expiry and reason."""
    line = f"  {tr.ltr(_local(a['at'], tz))}  {_decided(a, tr)}  " + tr(
        "v{version}  stage {stage}  expires {expires}",
        version=a["draft_version"],
        stage=a["stage"],
        expires=_local(a["expires_at"], tz),
    )
    return line + (tr("  reason: {reason}", reason=flatten(a["reason"])) if a["reason"] else "")


def _send_line(e: dict[str, Any], send_errors: bool, tr: Translator) -> str:
    """A send on /history: its key, status, attempts, Message-ID and (admins) its last error."""
    line = f"  {tr.ltr(e['idempotency_key'])}  {tr.ltr(e['status'])}  " + tr(
        "attempts={attempts}", attempts=e["attempts"]
    )
    line += f"  {tr.ltr(e['message_id'])}"
    if e["last_error"] and send_errors:
        line += tr("  last error: {error}", error=flatten(e["last_error"]))
    return line


def _comment(event: dict[str, Any], tr: Translator) -> str:
    """A comment's text, quoted on its audit line (gone once the purge removed it)."""
    said = event["detail"].get(COMMENT_TEXT) if event["action"] == COMMENT else None
    return "  " + tr.ltr(f'"{flatten(str(said))}"') if said else ""


def _purge_line(detail: dict[str, Any], tz: tzinfo, tr: Translator) -> list[str]:
    """What the retention purge removed from this job, and when; nothing if it was not purged."""
    if detail["purged_at"] is None:
        return []
    removed = tr(", ").join(
        tr("{kind} {count}", kind=tr(_KIND_NAMES[kind]) if kind in _KIND_NAMES else kind, count=n)
        for kind, n in detail["purged"].items()
    )
    at = _local(detail["purged_at"], tz)
    return ["  " + tr("purged {at} (retention): {removed}", at=at, removed=removed)]


# How the kinds of purged data read in a report.
_KIND_NAMES = {
    Stale.PROCESSED_UPDATES.value: N_("processed update ids"),
    Stale.DELIVERED_NOTICES.value: N_("delivered notices"),
    Stale.SUBMISSIONS.value: N_("sheet records"),
    Stale.EXPIRED_INVITES.value: N_("expired invitations"),
    Stale.TYPED_REQUESTS.value: N_("typed requests"),
    STRANGER_NAMES: N_("names of people without a role"),
    JOBS: N_("closed jobs purged"),
    Removed.DRAFT_BODIES.value: N_("draft bodies"),
    Removed.DECISION_REASONS.value: N_("decision reasons"),
    Removed.AUDIT_TEXTS.value: N_("audit notes"),
    Removed.EFFECT_PAYLOADS.value: N_("send receipts"),
    Removed.DOCUMENTS.value: N_("PO documents"),
    Removed.SUPPLIER_TEXTS.value: N_("supplier notes"),
    Removed.SUPPLIER_MAIL.value: N_("supplier e-mail replies"),
}


def purge_counts(counts: Mapping[str, int], *, dry_run: bool) -> str:
    """`manzoori purge`'s report: one line per kind of data, with its count."""
    head = "would remove (dry run; nothing was changed):" if dry_run else "removed:"
    width = max(len(name) for name in _KIND_NAMES.values())
    lines = [f"  {_KIND_NAMES.get(kind, kind).ljust(width)}  {n}" for kind, n in counts.items()]
    return "\n".join([head, *lines])

"""The approval card an approver reads on a phone: Telegram HTML, every value escaped.

A card must fit one Telegram message (4,096 characters after entities), so long texts are cut
and only the first lines are listed; "Details" sends the whole PO as a CSV document.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, tzinfo

from bot.texts import local_time
from core.drafts import Draft, mask_email
from core.flags import describe
from core.jobs import Job
from core.money import format_pkr
from core.policies import Decision, Verdict
from core.signing import HASH_PREFIX, Button, ButtonAction, sign_button
from core.states import State

# A phone screen shows about this many lines before the buttons scroll away.
LINES_SHOWN = 15
# Cut points for one line's text; card_html shows fewer lines when 15 would not fit.
_DESCRIPTION_CUT = 60
_NOTE_CUT = 80
_FLAGS_SHOWN = 12
MESSAGE_LIMIT = 4096  # characters Telegram takes in one message, after entity parsing

APPROVE_TEXT, REJECT_TEXT, DETAILS_TEXT = "✅ Approve", "❌ Reject", "📄 Details"


@dataclass(frozen=True)
class CardFacts:
    """Everything a card shows, gathered by the caller from the store."""

    job: Job
    draft: Draft
    requester: str  # the requester's name as Telegram gave it, or their id
    sheet_name: str
    terms_imported_at: datetime | None
    approvals: int  # standing approvals of this draft version so far
    required: int  # approvals the policy needs for this total


def _e(text: object) -> str:
    return html.escape(str(text), quote=False)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def card_html(facts: CardFacts, tz: tzinfo) -> str:
    """The full card for a waiting PO: as many of its lines and flags as fit one message."""
    for lines, flags in _SHOWN:
        text = _card(facts, tz, lines, flags)
        if visible_length(text) < MESSAGE_LIMIT:
            return text
    raise AssertionError("a card with no lines and no flags always fits")  # pragma: no cover


# (lines, flags) shown, most first: escaping and long notes can make 15 lines too many.
_SHOWN = ((LINES_SHOWN, _FLAGS_SHOWN), (10, 8), (5, 4), (2, 2), (0, 0))
_TAG = re.compile(r"<[^>]*>")


def visible_length(text_html: str) -> int:
    """Characters Telegram counts against its limit: after the HTML is parsed away."""
    return len(html.unescape(_TAG.sub("", text_html)))


def _card(facts: CardFacts, tz: tzinfo, lines: int, flags: int) -> str:
    job, draft = facts.job, facts.draft
    parts = [
        f"🧾 <b>{_e(job.po_number)}</b> — approval needed",
        f"<b>{_e(draft.supplier_name)}</b> ({_e(mask_email(draft.recipient_email))})",
        "",
        *_lines(draft, lines),
        "",
        f"<b>Total: {_e(format_pkr(draft.total_paisa))}</b>",
    ]
    if draft.flags:
        shown = [f"⚠️ {_e(describe(flag))}" for flag in draft.flags[:flags]]
        hidden = len(draft.flags) - len(shown)
        parts += ["", *shown, *([f"… and {hidden} more flags (see Details)"] if hidden else [])]
    parts += ["", *_evidence(facts, tz)]
    if facts.required > 1:
        parts.append(f"👥 {facts.approvals} of {facts.required} approvals")
    parts.append(f"On approval: e-mails this PO to {_e(mask_email(draft.recipient_email))}")
    return "\n".join(parts)


def _lines(draft: Draft, limit: int) -> list[str]:
    shown = []
    for line in draft.lines[:limit]:
        row = (
            f"• <code>{_e(line.sku)}</code> {_e(_cut(line.description, _DESCRIPTION_CUT))} — "
            f"{line.quantity:,} × {_e(format_pkr(line.unit_price_paisa))} = "
            f"{_e(format_pkr(line.total_paisa))}"
        )
        if line.note:
            row += f"\n  <i>{_e(_cut(line.note, _NOTE_CUT))}</i>"
        shown.append(row)
    hidden = len(draft.lines) - len(shown)
    if hidden:
        shown.append(f"… and {hidden:,} more lines (📄 Details has them all)")
    return shown


def _evidence(facts: CardFacts, tz: tzinfo) -> list[str]:
    job, draft = facts.job, facts.draft
    terms = f"Terms {_e(draft.terms_version)}"
    if facts.terms_imported_at is not None:
        terms += f" (imported {_e(local_time(facts.terms_imported_at, tz))})"
    deadline = job.decision_deadline
    return [
        f"📎 {terms}; sheet {_e(_cut(facts.sheet_name, 60))}",
        f"Requested by {_e(facts.requester)}",
        f"Draft v{job.draft_version} · {_e((job.draft_hash or '')[:HASH_PREFIX])}"
        + (f" · expires {_e(local_time(deadline, tz))}" if deadline else ""),
    ]


def outcome_html(facts: CardFacts, version: int, headline_html: str) -> str:
    """A decided, expired or superseded card of draft `version`: what happened on top (HTML
    the caller escaped), the PO summary below."""
    draft = facts.draft
    return "\n".join(
        [
            headline_html,
            f"🧾 <b>{_e(facts.job.po_number)}</b> v{version} · "
            f"{_e(draft.supplier_name)} · {_e(format_pkr(draft.total_paisa))}",
        ]
    )


def headline_html(
    job: Job,
    version: int,
    decisions: list[Decision],
    names: Mapping[int, str],
    mine: list[Decision],
    tz: tzinfo,
    tally: tuple[int, int],
) -> str:
    """What happened, for the top of a card of draft `version` that can no longer be tapped;
    `mine` are the card holder's decisions on that version, `tally` the approvals so far and
    those needed while the draft still waits."""
    if job.draft_version != version:
        follows = ": a new card follows" if job.state is State.AWAITING_APPROVAL else ""
        return f"🔁 <b>Superseded</b> by v{job.draft_version}{follows}"
    on_this = [d for d in decisions if d.draft_version == version]
    approvals = [d for d in on_this if d.verdict is Verdict.APPROVE]
    rejections = [d for d in on_this if d.verdict is Verdict.REJECT]
    if job.state is State.REJECTED and rejections:
        who = _e(names.get(rejections[-1].reviewer_id, "someone"))
        return f"❌ <b>Rejected</b> by {who} at {_e(local_time(rejections[-1].at, tz))}"
    if job.state is State.EXPIRED:
        deadline = job.decision_deadline
        when = f" at {_e(local_time(deadline, tz))}" if deadline else ""
        return f"⌛ <b>Expired</b>{when}: no decision in time, nothing was sent"
    if job.state is State.CANCELLED:
        return "🚫 <b>Cancelled</b>: nothing was sent"
    if job.state is State.AWAITING_APPROVAL and mine:
        so_far, needed = tally
        return (
            f"🕓 You approved at {_e(local_time(mine[-1].at, tz))}: "
            f"👥 {so_far} of {needed} approvals, waiting for another approver"
        )
    if approvals and job.state is not State.AWAITING_APPROVAL:
        by = ", ".join(_e(names.get(d.reviewer_id, "someone")) for d in approvals[-2:])
        return f"✅ <b>Approved</b> by {by} at {_e(local_time(approvals[-1].at, tz))}"
    return f"ℹ️ <b>{_e(job.state.value.replace('_', ' ').capitalize())}</b>"


def card_buttons(secret: bytes, job: Job) -> list[list[tuple[str, str]]]:
    """Approve and Reject on one row, Details below; each carries signed callback data."""
    assert job.draft_version is not None and job.draft_hash is not None
    prefix = job.draft_hash[:HASH_PREFIX]

    def data(action: ButtonAction) -> str:
        return sign_button(secret, Button(action, job.id, job.draft_version or 0, prefix))

    return [
        [(APPROVE_TEXT, data(ButtonAction.APPROVE)), (REJECT_TEXT, data(ButtonAction.REJECT))],
        [(DETAILS_TEXT, data(ButtonAction.DETAILS))],
    ]

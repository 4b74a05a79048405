"""The approval card an approver reads on a phone: Telegram HTML, every value flattened to one
line (core.texts) and escaped, so no name, file name or description can add a line to a card.

A card must fit one Telegram message (4,096 characters after entities), so long texts are cut
and only the first lines are listed; "Details" sends the whole PO as a CSV document.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping
from datetime import tzinfo

from telegram import InlineKeyboardButton, InlineKeyboardMarkup

from bot.texts import DAY_MONTH, local_time
from core.budgets import CategoryMonth
from core.delivery import CardFacts, CardOutcome
from core.drafts import Draft, mask_email, short_hash
from core.flags import describe
from core.jobs import Job
from core.money import format_pkr
from core.policies import Decision, Verdict
from core.signing import Button, ButtonAction, sign_button
from core.states import State
from core.texts import flatten

# A phone screen shows about this many lines before the buttons scroll away.
LINES_SHOWN = 15
# Cut points for one line's text; card_html shows fewer lines when 15 would not fit.
_DESCRIPTION_CUT = 60
_NOTE_CUT = 80
_FLAGS_SHOWN = 12
MESSAGE_LIMIT = 4096  # characters Telegram takes in one message, after entity parsing

APPROVE_TEXT, REJECT_TEXT, DETAILS_TEXT = "✅ Approve", "❌ Reject", "📄 Details"


# The button of a list (/pending, a reminder's or digest's) that sends a request's card again.
RESEND_TEXT = "🔁 {po}"


def escaped(value: object) -> str:
    """A value for a Telegram HTML message: on one line, without bidi controls or zero-width
    characters (core.texts.flatten), and escaped."""
    return html.escape(flatten(str(value)), quote=False)


def _cut(text: str, limit: int) -> str:
    text = flatten(text)  # first: the limit counts what will be shown
    return text if len(text) <= limit else text[: limit - 1] + "…"


def card_html(facts: CardFacts, tz: tzinfo, holder: int | None = None, above: str = "") -> str:
    """The full card for a waiting PO, as its `holder` sees it, under `above` (a reminder's
    words, say): as many of its lines and flags as fit one message."""
    for lines, flags in _SHOWN:
        text = above + _card(facts, tz, lines, flags, holder)
        if visible_length(text) < MESSAGE_LIMIT:
            return text
    raise AssertionError("a card with no lines and no flags always fits")  # pragma: no cover


# (lines, flags) shown, most first: escaping and long notes can make 15 lines too many.
_SHOWN = ((LINES_SHOWN, _FLAGS_SHOWN), (10, 8), (5, 4), (2, 2), (0, 0))
_TAG = re.compile(r"<[^>]*>")


def visible_length(text_html: str) -> int:
    """Characters Telegram counts against its limit: after the HTML is parsed away."""
    return len(html.unescape(_TAG.sub("", text_html)))


def _card(facts: CardFacts, tz: tzinfo, lines: int, flags: int, holder: int | None) -> str:
    job, draft = facts.job, facts.draft
    away = facts.holding_for.get(holder) if holder is not None else None
    parts = [
        f"🧾 <b>{escaped(job.po_number)}</b> — approval needed"
        + (f" <b>for {escaped(away)}</b>" if away else ""),
        f"<b>{escaped(draft.supplier_name)}</b> ({escaped(mask_email(draft.recipient_email))})",
        "",
        *_lines(draft, lines),
        "",
        f"<b>Total: {escaped(format_pkr(draft.total_paisa))}</b>",
    ]
    drifted = _drifts(facts, tz, flags)
    parts += ["", *drifted] if drifted else []
    others = tuple(f for f in draft.flags if f not in {d.flag for d in facts.drifts})
    if others:  # a drifted line's price change is its ▲ line above
        shown = [f"⚠️ {escaped(describe(flag))}" for flag in others[:flags]]
        hidden = len(others) - len(shown)
        parts += ["", *shown, *([f"… and {hidden} more flags (see Details)"] if hidden else [])]
    parts += _budget_lines(facts)
    parts += ["", *_evidence(facts, tz)]
    if away:  # a delegate's card: whose approval a tap gives
        parts.append(f"🤝 {escaped(away)} is away: your decision counts as theirs")
    if facts.stages > 1:  # a chain: whose turn it is
        parts.append(f"🪜 {_stage_of(facts)}")
    if facts.stage > 0:  # the stages before are complete: the holder's group is next
        done = "Stage 1 is" if facts.stage == 1 else f"Stages 1 to {facts.stage} are"
        parts.append(f"👉 It's your turn: {done} complete.")
    if facts.required > 1:
        parts.append(f"👥 {facts.approvals} of {facts.required} approvals")
    parts.append(f"On approval: e-mails this PO to {escaped(mask_email(draft.recipient_email))}")
    return "\n".join(parts)


def _drifts(facts: CardFacts, tz: tzinfo, limit: int) -> list[str]:
    """ "▲ CHG-65W: 5.0% vs last PO PO-2026-0031, 12 Sep (Rs 6,825.53, was Rs 6,500.50)": each
    line priced above the policy's drift tolerance, which added a stage to the route."""
    shown = []
    for line in facts.drifts[:limit]:
        before, after = line.flag.amounts[0], line.flag.amounts[1]
        rise = "was free" if line.percent is None else f"{line.percent}%"
        when = "" if line.sent_at is None else f", {local_time(line.sent_at, tz, DAY_MONTH)}"
        shown.append(
            f"▲ <code>{escaped(line.flag.sku)}</code>: {rise} vs last PO "
            f"{escaped(line.flag.ref)}{escaped(when)} "
            f"({escaped(format_pkr(after))}, was {escaped(format_pkr(before))})"
        )
    hidden = len(facts.drifts) - len(shown)
    return [*shown, *([f"… and {hidden} more lines above the drift tolerance"] if hidden else [])]


def _budget_lines(facts: CardFacts) -> list[str]:
    """One line per budgeted category the PO touches, after a blank line: "💰 Accessories:
    Rs 320,000.00 left of Rs 1,000,000.00 in December; this PO uses Rs 110,000.00"."""
    return ["", *(escaped(budget_line(month)) for month in facts.budgets)] if facts.budgets else []


def budget_line(found: CategoryMonth) -> str:
    """A category's month as a card says it, ⚠️ and by how much when this PO goes over."""
    name = found.category[:1].upper() + found.category[1:]
    line = (
        f"{name}: {format_pkr(max(0, found.left_paisa))} left of "
        f"{format_pkr(found.budget_paisa)} in {found.month.name}; "
        f"this PO uses {format_pkr(found.uses_paisa)}"
    )
    return f"⚠️ {line}, over by {format_pkr(found.over_paisa)}" if found.over else f"💰 {line}"


def _stage_of(facts: CardFacts) -> str:
    """ "Stage 2 of 2: waiting for Owners"."""
    return f"Stage {facts.stage + 1} of {facts.stages}: waiting for {escaped(facts.group)}"


def _lines(draft: Draft, limit: int) -> list[str]:
    shown = []
    for line in draft.lines[:limit]:
        row = (
            f"• <code>{escaped(line.sku)}</code> "
            f"{escaped(_cut(line.description, _DESCRIPTION_CUT))} — "
            f"{line.quantity:,} × {escaped(format_pkr(line.unit_price_paisa))} = "
            f"{escaped(format_pkr(line.total_paisa))}"
        )
        if line.note:
            row += f"\n  <i>{escaped(_cut(line.note, _NOTE_CUT))}</i>"
        shown.append(row)
    hidden = len(draft.lines) - len(shown)
    if hidden:
        shown.append(f"… and {hidden:,} more lines (📄 Details has them all)")
    return shown


def _evidence(facts: CardFacts, tz: tzinfo) -> list[str]:
    job, draft = facts.job, facts.draft
    terms = f"Terms {escaped(draft.terms_version)}"
    if facts.terms_imported_at is not None:
        terms += f" (imported {escaped(local_time(facts.terms_imported_at, tz))})"
    deadline = job.decision_deadline
    return [
        f"📎 {terms}; sheet {escaped(_cut(facts.sheet_name, 60))}",
        f"Requested by {escaped(facts.requester)}",
        f"Draft v{job.draft_version} · {escaped(short_hash(job.draft_hash or ''))}"
        + (f" · expires {escaped(local_time(deadline, tz))}" if deadline else ""),
    ]


def outcome_html(outcome: CardOutcome, tz: tzinfo) -> str:
    """A decided, expired or superseded card: what happened on top, the PO summary below."""
    draft = outcome.draft
    return "\n".join(
        [
            headline_html(outcome, tz),
            f"🧾 <b>{escaped(outcome.job.po_number)}</b> v{outcome.version} · "
            f"{escaped(draft.supplier_name)} · {escaped(format_pkr(draft.total_paisa))}",
        ]
    )


def headline_html(outcome: CardOutcome, tz: tzinfo) -> str:
    """What happened, for the top of a card that can no longer be tapped."""
    job, version, names = outcome.job, outcome.version, outcome.names
    if job.draft_version != version:
        follows = ": a new card follows" if job.state is State.AWAITING_APPROVAL else ""
        return f"🔁 <b>Superseded</b> by v{job.draft_version}{follows}"
    on_this = [d for d in outcome.decisions if d.draft_version == version]
    approvals = [d for d in on_this if d.verdict is Verdict.APPROVE]
    rejections = [d for d in on_this if d.verdict is Verdict.REJECT]
    if job.state is State.REJECTED and rejections:
        who = decided_by(rejections[-1], names)
        return f"❌ <b>Rejected</b> by {who} at {escaped(local_time(rejections[-1].at, tz))}"
    if job.state is State.EXPIRED:
        deadline = job.decision_deadline
        when = f" at {escaped(local_time(deadline, tz))}" if deadline else ""
        return f"⌛ <b>Expired</b>{when}: no decision in time, nothing was sent"
    if job.state is State.CANCELLED:
        return "🚫 <b>Cancelled</b>: nothing was sent"
    chain = outcome.waiting if outcome.waiting and outcome.waiting.stages > 1 else None
    if job.state is State.AWAITING_APPROVAL and outcome.mine:
        when = escaped(local_time(outcome.mine[-1].at, tz))
        if outcome.mine[-1].on_behalf_of == outcome.holder:  # their delegate's, for them
            return f"🕓 {decided_by(outcome.mine[-1], names)} approved at {when}"
        if chain is not None:
            return f"🕓 You approved at {when}: 🪜 {_stage_of(chain)}"
        so_far, needed = outcome.tally
        return (
            f"🕓 You approved at {when}: 👥 {so_far} of {needed} approvals, "
            "waiting for another approver"
        )
    if job.state is State.AWAITING_APPROVAL and chain is not None:  # not this stage's group
        return f"🪜 {_stage_of(chain)}: not your group's turn"
    if approvals and job.state is not State.AWAITING_APPROVAL:
        by = ", ".join(decided_by(d, names) for d in approvals[-2:])
        return f"✅ <b>Approved</b> by {by} at {escaped(local_time(approvals[-1].at, tz))}"
    return f"ℹ️ <b>{escaped(job.state.value.replace('_', ' ').capitalize())}</b>"


def decided_by(decision: Decision, names: Mapping[int, str]) -> str:
    """ "Bilal", or "Bilal for Ali" when Bilal decided as Ali's delegate, escaped."""
    who = escaped(names.get(decision.reviewer_id, "someone"))
    if decision.on_behalf_of is None:
        return who
    return f"{who} for {escaped(names.get(decision.on_behalf_of, 'someone'))}"


def resend_markup(secret: bytes, jobs: Iterable[Job]) -> InlineKeyboardMarkup:
    """One row per request: its 🔁 button, signed for its current draft version and hash, that
    sends its card again (on_resend_tap): /pending's lists, and the ladder's."""
    rows: list[tuple[InlineKeyboardButton, ...]] = []
    for job in jobs:
        made = signed_markup(
            secret, job, [[(RESEND_TEXT.format(po=job.po_number), ButtonAction.RESEND)]]
        )
        rows.extend(made.inline_keyboard)
    return InlineKeyboardMarkup(rows)


def signed_markup(
    secret: bytes, job: Job, rows: list[list[tuple[str, ButtonAction]]]
) -> InlineKeyboardMarkup:
    """Buttons by row, each carrying signed callback data for its action on the job's current
    draft version and hash."""
    assert job.draft_version is not None and job.draft_hash is not None
    prefix = short_hash(job.draft_hash)

    def button(text: str, action: ButtonAction) -> InlineKeyboardButton:
        signed = Button(action, job.id, job.draft_version or 0, prefix)
        return InlineKeyboardButton(text, callback_data=sign_button(secret, signed))

    return InlineKeyboardMarkup([[button(text, action) for text, action in row] for row in rows])


def card_markup(secret: bytes, job: Job) -> InlineKeyboardMarkup:
    """A card's Approve and Reject on one row, Details below."""
    rows = [
        [(APPROVE_TEXT, ButtonAction.APPROVE), (REJECT_TEXT, ButtonAction.REJECT)],
        [(DETAILS_TEXT, ButtonAction.DETAILS)],
    ]
    return signed_markup(secret, job, rows)

"""The approval card an approver reads on a phone: Telegram HTML, every value flattened to one
line (core.texts) and escaped, so no name, file name or description can add a line to a card.

A card must fit one Telegram message (4,096 characters after entities), so long texts are cut
and only the first lines are listed; "Details" sends the whole PO as a CSV document.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping
from datetime import date, tzinfo

from telegram import InlineKeyboardButton, InlineKeyboardMarkup, WebAppInfo

from bot.telegram.texts import supplier_notice
from bot.web.urls import page_url
from bot.words.flags import day_text, flag_text
from bot.words.i18n import ENGLISH, N_, Translator
from bot.words.texts import DAY_MONTH, evidence_source, local_time
from core.approval.budgets import CategoryMonth
from core.approval.policies import Decision, Verdict
from core.approval.signing import Button, ButtonAction, sign_button
from core.drafting.drafts import Draft, mask_email, short_hash
from core.drafting.money import format_pkr
from core.jobs.jobs import Job
from core.jobs.states import State
from core.messaging.cards import CardFacts, CardOutcome
from core.texts import flatten

# A phone screen shows about this many lines before the buttons scroll away.
LINES_SHOWN = 15
# Cut points for one line's text; card_html shows fewer lines when 15 would not fit.
_DESCRIPTION_CUT = 60
_NOTE_CUT = 80
_FLAGS_SHOWN = 12
MESSAGE_LIMIT = 4096  # characters Telegram takes in one message, after entity parsing

# The buttons' words are translated; their marks are not, so a card reads the same at a glance
# in every language, and their callback data never changes with it.
APPROVE_TEXT, REJECT_TEXT, DETAILS_TEXT = N_("✅ Approve"), N_("❌ Reject"), N_("📄 Details")
# The button that opens the PO in the Mini App (bot/web), where the whole of it can be read,
# trimmed and decided.
REVIEW_TEXT = N_("🔍 Review")


# The button of a list (/pending, a reminder's or digest's) that sends a request's card again.
RESEND_TEXT = "🔁 {po}"


def escaped(value: object) -> str:
    """A value for a Telegram HTML message: on one line, without bidi controls or zero-width
    characters (core.texts.flatten), and escaped."""
    return html.escape(flatten(str(value)), quote=False)


def cut(text: str, limit: int) -> str:
    """`text` on one line (core.texts.flatten), cut to `limit` characters with "…"."""
    text = flatten(text)  # first: the limit counts what will be shown
    return text if len(text) <= limit else text[: limit - 1] + "…"


def card_html(
    facts: CardFacts,
    tz: tzinfo,
    holder: int | None = None,
    above: str = "",
    *,
    tr: Translator = ENGLISH,
) -> str:
    """The full card for a waiting PO, as its `holder` sees it in their language, under
    `above` (a reminder's words, say): as many of its lines and flags as fit one message."""
    for lines, flags in _SHOWN:
        text = above + _card(facts, tz, (lines, flags), holder, tr)
        if visible_length(text) < MESSAGE_LIMIT:
            return text
    raise AssertionError("a card with no lines and no flags always fits")  # pragma: no cover


# (lines, flags) shown, most first: escaping and long notes can make 15 lines too many.
_SHOWN = ((LINES_SHOWN, _FLAGS_SHOWN), (10, 8), (5, 4), (2, 2), (0, 0))
_TAG = re.compile(r"<[^>]*>")


def visible_length(text_html: str) -> int:
    """Characters Telegram counts against its limit: after the HTML is parsed away."""
    return len(html.unescape(_TAG.sub("", text_html)))


def _proposed(facts: CardFacts, tr: Translator) -> list[str]:
    """A supplier's proposal: whose, to which version, and what it changes; nothing else."""
    if facts.proposal is None or facts.answered is None:
        return []
    said = supplier_notice(facts.proposal, facts.answered, tr=tr).splitlines()
    return [
        "",
        tr(
            "✏️ <b>Supplier proposes</b> changes to v{version}, which it has:",
            version=facts.proposal.draft_version,
        ),
        *(escaped(line) for line in said[1:]),
    ]


def _card(
    facts: CardFacts, tz: tzinfo, shown: tuple[int, int], holder: int | None, tr: Translator
) -> str:
    job, draft = facts.job, facts.draft
    (lines, flags), email = shown, escaped(mask_email(draft.recipient_email))
    away = facts.holding_for.get(holder) if holder is not None else None
    po = f"<b>{escaped(job.po_number)}</b>"
    parts = [
        tr("🧾 {po} — approval needed <b>for {name}</b>", po=po, name=escaped(away))
        if away
        else tr("🧾 {po} — approval needed", po=po),
        f"<b>{tr.ltr(escaped(draft.supplier_name))}</b> ({tr.ltr(email)})",  # outside text
        *_proposed(facts, tr),
        "",
        *_lines(draft, lines, tr),
        "",
        *_totals(draft, tr),
        *_delivery(draft, tr),
    ]
    drifted = _drifts(facts, tz, flags, tr)
    parts += ["", *drifted] if drifted else []
    others = tuple(f for f in draft.flags if f not in {d.flag for d in facts.drifts})
    if others:  # a drifted line's price change is its ▲ line above
        # A flag's values are codes and amounts, never HTML: only its sentence is escaped.
        said = [html.escape(flag_text(flag, tr=tr), quote=False) for flag in others[:flags]]
        shown_flags = [f"⚠️ {sentence}" for sentence in said]
        hidden = len(others) - len(shown_flags)
        more = [
            tr.plural(
                "… and {count} more flag (see Details)",
                "… and {count} more flags (see Details)",
                hidden,
            )
        ]
        parts += ["", *shown_flags, *(more if hidden else [])]
    parts += _budget_lines(facts, tr)
    parts += ["", *_evidence(facts, tz, tr)]
    if away:  # a delegate's card: whose approval a tap gives
        parts.append(tr("🤝 {name} is away: your decision counts as theirs", name=escaped(away)))
    if facts.stages > 1:  # a chain: whose turn it is
        parts.append(f"🪜 {_stage_of(facts, tr)}")
    if facts.stage > 0:  # the stages before are complete: the holder's group is next
        done = (
            tr("👉 It's your turn: Stage 1 is complete.")
            if facts.stage == 1
            else tr("👉 It's your turn: Stages 1 to {stage} are complete.", stage=facts.stage)
        )
        parts.append(done)
    if facts.required > 1:
        parts.append(
            tr(
                "👥 {approvals} of {required} approvals",
                approvals=facts.approvals,
                required=facts.required,
            )
        )
    parts.append(tr("On approval: e-mails this PO to {email}", email=email))
    return "\n".join(parts)


def _totals(draft: Draft, tr: Translator) -> list[str]:
    """The total in bold; with sales tax, the subtotal and the tax above it."""
    if not draft.gst_paisa:
        return [
            "<b>" + tr("Total: {amount}", amount=escaped(format_pkr(draft.total_paisa))) + "</b>"
        ]
    subtotal = escaped(format_pkr(draft.subtotal_paisa))
    tax = escaped(format_pkr(draft.gst_paisa))
    total = escaped(format_pkr(draft.total_paisa))
    return [
        tr("Subtotal: {amount} · GST: {tax}", amount=subtotal, tax=tax),
        "<b>" + tr("Total with GST: {amount}", amount=total) + "</b>",
    ]


def _delivery(draft: Draft, tr: Translator) -> list[str]:
    """Where, by when and on what terms the PO is delivered, when the draft says so."""
    said = delivery_line(
        draft.branch_id, draft.delivery_date, draft.payment_terms, tr=tr, html=True
    )
    return [said] if said else []


def delivery_line(
    branch_id: str,
    delivery: date | None,
    payment_terms: str,
    *,
    tr: Translator = ENGLISH,
    html: bool = False,
) -> str:
    """ "📦 Deliver to liberty · 🗓 Delivery by 12 Dec 2026 · 💳 Payment: 30 days credit", as
    much of it as a draft says ("" for none); `html`: escaped for a card."""
    show = escaped if html else flatten
    said = []
    if branch_id:
        branch = f"<code>{escaped(branch_id)}</code>" if html else flatten(branch_id)
        said.append(tr("📦 Deliver to {branch}", branch=branch))
    if delivery is not None:
        said.append(tr("🗓 Delivery by {date}", date=show(day_text(delivery))))
    if payment_terms:
        said.append(tr("💳 Payment: {terms}", terms=show(payment_terms)))
    return " · ".join(said)


def _drifts(facts: CardFacts, tz: tzinfo, limit: int, tr: Translator) -> list[str]:
    """ "▲ CHG-65W: 5.0% vs last PO PO-2026-0031, 12 Sep (Rs 6,825.53, was Rs 6,500.50)": each
    line priced above the policy's drift tolerance, which added a stage to the route."""
    shown = []
    for line in facts.drifts[:limit]:
        before, after = line.flag.amounts[0], line.flag.amounts[1]
        rise = tr("was free") if line.percent is None else f"{line.percent}%"
        sku, ref = f"<code>{escaped(line.flag.sku)}</code>", escaped(line.flag.ref)
        now, was = escaped(format_pkr(after)), escaped(format_pkr(before))
        if line.sent_at is None:
            text = tr(
                "▲ {sku}: {rise} vs last PO {ref} ({now}, was {was})",
                sku=sku,
                rise=rise,
                ref=ref,
                now=now,
                was=was,
            )
        else:
            when = escaped(local_time(line.sent_at, tz, DAY_MONTH))
            text = tr(
                "▲ {sku}: {rise} vs last PO {ref}, {when} ({now}, was {was})",
                sku=sku, rise=rise, ref=ref, when=when, now=now, was=was,
            )  # fmt: skip
        shown.append(text)
    hidden = len(facts.drifts) - len(shown)
    more = tr.plural(
        "… and {count} more line above the drift tolerance",
        "… and {count} more lines above the drift tolerance",
        hidden,
    )
    return [*shown, *([more] if hidden else [])]


def _budget_lines(facts: CardFacts, tr: Translator) -> list[str]:
    """One line per budgeted category the PO touches, after a blank line: "💰 Accessories:
    Rs 320,000.00 left of Rs 1,000,000.00 in December; this PO uses Rs 110,000.00"."""
    if not facts.budgets:
        return []
    return ["", *(budget_line(month, tr=tr, html=True) for month in facts.budgets)]


def budget_line(found: CategoryMonth, *, tr: Translator = ENGLISH, html: bool = False) -> str:
    """A category's month as a card says it, ⚠️ and by how much when this PO goes over
    (`html`: its values escaped for a card)."""
    show = escaped if html else flatten
    name = show(found.category[:1].upper() + found.category[1:])
    amounts = {
        "left": show(format_pkr(max(0, found.left_paisa))),
        "budget": show(format_pkr(found.budget_paisa)),
        "uses": show(format_pkr(found.uses_paisa)),
    }
    month = show(found.month.name)
    if found.over:
        over = show(format_pkr(found.over_paisa))
        return tr(
            "⚠️ {category}: {left} left of {budget} in {month}; this PO uses {uses}, "
            "over by {over}",
            category=name, month=month, over=over, **amounts,
        )  # fmt: skip
    return tr(
        "💰 {category}: {left} left of {budget} in {month}; this PO uses {uses}",
        category=name, month=month, **amounts,
    )  # fmt: skip


def _stage_of(facts: CardFacts, tr: Translator) -> str:
    """ "Stage 2 of 2: waiting for Owners"."""
    return tr(
        "Stage {stage} of {stages}: waiting for {group}",
        stage=facts.stage + 1, stages=facts.stages, group=escaped(facts.group),
    )  # fmt: skip


def _lines(draft: Draft, limit: int, tr: Translator) -> list[str]:
    shown = []
    for line in draft.lines[:limit]:
        amounts = (
            f"{line.quantity:,} × {escaped(format_pkr(line.unit_price_paisa))} = "
            f"{escaped(format_pkr(line.total_paisa))}"
        )
        row = (
            f"• {tr.ltr(f'<code>{escaped(line.sku)}</code>')} "
            f"{tr.ltr(escaped(cut(line.description, _DESCRIPTION_CUT)))} — {tr.ltr(amounts)}"
        )
        if line.note:
            row += f"\n  <i>{escaped(cut(line.note, _NOTE_CUT))}</i>"
        shown.append(row)
    hidden = len(draft.lines) - len(shown)
    if hidden:
        shown.append(
            tr.plural(
                "… and {count} more line (📄 Details has them all)",
                "… and {count} more lines (📄 Details has them all)",
                hidden,
            )
        )
    return shown


def _evidence(facts: CardFacts, tz: tzinfo, tr: Translator) -> list[str]:
    job, draft = facts.job, facts.draft
    at = facts.terms_imported_at
    source = evidence_source(
        escaped(draft.terms_version),
        escaped(local_time(at, tz)) if at is not None else None,
        facts.sheet_name,
        lambda name: escaped(cut(name, 60)),
        tr=tr,
    )
    deadline = job.decision_deadline
    draft_line = tr(
        "Draft v{version} · {hash}",
        version=job.draft_version,
        hash=escaped(short_hash(job.draft_hash or "")),
    )
    if deadline:
        draft_line += " · " + tr("expires {at}", at=escaped(local_time(deadline, tz)))
    return [source, tr("Requested by {name}", name=escaped(facts.requester)), draft_line]


def outcome_html(outcome: CardOutcome, tz: tzinfo, *, tr: Translator = ENGLISH) -> str:
    """A decided, expired or superseded card: what happened on top, the PO summary below."""
    draft = outcome.draft
    summary = (
        f"<b>{escaped(outcome.job.po_number)}</b> v{outcome.version} · "
        f"{escaped(draft.supplier_name)} · {escaped(format_pkr(draft.total_paisa))}"
    )
    return "\n".join([headline_html(outcome, tz, tr=tr), f"🧾 {tr.ltr(summary)}"])


def headline_html(outcome: CardOutcome, tz: tzinfo, *, tr: Translator = ENGLISH) -> str:
    """What happened, for the top of a card that can no longer be tapped."""
    job, version, names = outcome.job, outcome.version, outcome.names
    if job.draft_version != version:
        if job.state is State.AWAITING_APPROVAL:
            return tr(
                "🔁 <b>Superseded</b> by v{version}: a new card follows", version=job.draft_version
            )
        return tr("🔁 <b>Superseded</b> by v{version}", version=job.draft_version)
    on_this = [d for d in outcome.decisions if d.draft_version == version]
    approvals = [d for d in on_this if d.verdict is Verdict.APPROVE]
    rejections = [d for d in on_this if d.verdict is Verdict.REJECT]
    if job.state is State.REJECTED and rejections:
        who = decided_by(rejections[-1], names, tr=tr)
        at = escaped(local_time(rejections[-1].at, tz))
        return tr("❌ <b>Rejected</b> by {name} at {at}", name=who, at=at)
    if job.state is State.EXPIRED:
        deadline = job.decision_deadline
        if deadline:
            at = escaped(local_time(deadline, tz))
            return tr("⌛ <b>Expired</b> at {at}: no decision in time, nothing was sent", at=at)
        return tr("⌛ <b>Expired</b>: no decision in time, nothing was sent")
    if job.state is State.CANCELLED:
        return tr("🚫 <b>Cancelled</b>: nothing was sent")
    chain = outcome.waiting if outcome.waiting and outcome.waiting.stages > 1 else None
    if job.state is State.AWAITING_APPROVAL and outcome.mine:
        when = escaped(local_time(outcome.mine[-1].at, tz))
        if outcome.mine[-1].on_behalf_of == outcome.holder:  # their delegate's, for them
            return tr(
                "🕓 {name} approved at {at}",
                name=decided_by(outcome.mine[-1], names, tr=tr),
                at=when,
            )
        if chain is not None:
            return tr("🕓 You approved at {at}: 🪜 {stage}", at=when, stage=_stage_of(chain, tr))
        so_far, needed = outcome.tally
        return tr(
            "🕓 You approved at {at}: 👥 {approvals} of {required} approvals, "
            "waiting for another approver",
            at=when, approvals=so_far, required=needed,
        )  # fmt: skip
    if job.state is State.AWAITING_APPROVAL and chain is not None:  # not this stage's group
        return tr("🪜 {stage}: not your group's turn", stage=_stage_of(chain, tr))
    if approvals and job.state is not State.AWAITING_APPROVAL:
        by = ", ".join(decided_by(d, names, tr=tr) for d in approvals[-2:])
        at = escaped(local_time(approvals[-1].at, tz))
        return tr("✅ <b>Approved</b> by {names} at {at}", names=by, at=at)
    return f"ℹ️ <b>{escaped(job.state.value.replace('_', ' ').capitalize())}</b>"


def decided_by(decision: Decision, names: Mapping[int, str], *, tr: Translator = ENGLISH) -> str:
    """ "Bilal", or "Bilal for Ali" when Bilal decided as Ali's delegate, escaped."""
    who = escaped(names.get(decision.reviewer_id, tr("someone")))
    if decision.on_behalf_of is None:
        return who
    return tr(
        "{name} for {delegator}",
        name=who,
        delegator=escaped(names.get(decision.on_behalf_of, tr("someone"))),
    )


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


def po_markup(
    secret: bytes, job: Job, *, tr: Translator = ENGLISH, public_url: str | None = None
) -> InlineKeyboardMarkup:
    """A PO's Details (its PDF and CSV) and, with a public URL, Review (the Mini App), for news
    about it that is not a card."""
    signed = signed_markup(secret, job, [[(tr(DETAILS_TEXT), ButtonAction.DETAILS)]])
    if public_url is None:
        return signed
    review = InlineKeyboardButton(
        tr(REVIEW_TEXT), web_app=WebAppInfo(page_url(public_url, job.po_number))
    )
    return InlineKeyboardMarkup([[*signed.inline_keyboard[0], review]])


def card_markup(
    secret: bytes, job: Job, *, tr: Translator = ENGLISH, public_url: str | None = None
) -> InlineKeyboardMarkup:
    """A card's Approve and Reject on one row, Details below, in the approver's language;
    beside Details, Review opens the Mini App when the web front door has a public URL (cards
    go to private chats only, where Telegram allows web_app buttons)."""
    rows = [
        [(tr(APPROVE_TEXT), ButtonAction.APPROVE), (tr(REJECT_TEXT), ButtonAction.REJECT)],
        [(tr(DETAILS_TEXT), ButtonAction.DETAILS)],
    ]
    signed = signed_markup(secret, job, rows)
    if public_url is None:
        return signed
    review = InlineKeyboardButton(
        tr(REVIEW_TEXT), web_app=WebAppInfo(page_url(public_url, job.po_number))
    )
    first, details = signed.inline_keyboard
    return InlineKeyboardMarkup([first, [*details, review]])

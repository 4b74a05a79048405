"""What waits for whom, in Telegram: an approver's /pending (each request with a button that
sends its card again), the admins' /pending all, and the answer to free text, which is never a
decision: an approver is shown the buttons of the request it refers to, and the text is kept
as a comment on its trail (core.messaging.pending); anyone else gets the help for their role.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo
from functools import partial

from telegram import Message, Update
from telegram.ext import ContextTypes

from bot.clock import utcnow
from bot.telegram.cards import MESSAGE_LIMIT, card_markup, cut, resend_markup
from bot.telegram.context import Deps, answer_tap, deps_of, held_roles, reply
from bot.telegram.decisions import checked_tap, deliver_now, refusal
from bot.telegram.language import speaking
from bot.telegram.people import help_command
from bot.words.i18n import ENGLISH, N_, Translator
from bot.words.texts import local_time
from core.approval.decisions import Review
from core.approval.policies import Policy, Role, Verdict
from core.approval.signing import ButtonAction
from core.drafting.drafts import Draft
from core.drafting.money import format_pkr
from core.jobs.jobs import Job
from core.jobs.states import State
from core.messaging import pending
from core.messaging.pending import Referred, Waiting
from core.ports import ShellReadTx
from core.suppliers import chasing
from core.texts import flatten

# Requests one /pending lists, each with its button: a phone screen's worth of buttons.
MINE_LIMIT = 10
# Requests one /pending all lists (a few messages at most); the oldest come first.
ALL_LIMIT = 30
# Other requests named under the answer to free text.
OTHERS_NAMED = 5
_SUPPLIER_CUT = 60

# What it says (translated where it is sent).
USAGE = N_("Usage: /pending, or for an admin /pending all")
NOT_AN_APPROVER = N_(
    "/pending lists the requests waiting for an approver's decision; you are not one."
)
ADMIN_HINT = N_("/pending all lists every waiting request.")  # after NOT_AN_APPROVER, for admins
ONLY_ADMINS = N_("Only admins can list every waiting request.")
NOTHING_MINE = N_("Nothing waits for your decision.")
NOTHING_AT_ALL = N_("No request waits for a decision.")
CARD_AGAIN = N_("Here is its card again; the one you had still works.")
# A request's state, where the answer to free text says what became of it.
_STATE_NAMES = {
    State.APPROVED: N_("approved"),
    State.SENDING: N_("sending"),
    State.SENT: N_("sent"),
    State.REJECTED: N_("rejected"),
    State.EXPIRED: N_("expired"),
    State.CANCELLED: N_("cancelled"),
    State.FAILED_RETRYABLE: N_("failed retryable"),
    State.FAILED_FINAL: N_("failed final"),
    State.UNKNOWN_OUTCOME: N_("unknown outcome"),
    State.CANCELLING: N_("being cancelled"),
    State.CANCEL_UNKNOWN: N_("being cancelled"),
    State.CANCEL_FAILED: N_("being cancelled"),
}


def age(delta: timedelta, *, tr: Translator = ENGLISH) -> str:
    """ "45 min", "3 h", "2 d 4 h": how long a request has waited."""
    minutes = max(int(delta.total_seconds() // 60), 0)
    if minutes < 60:
        return tr("{minutes} min", minutes=minutes)
    hours = minutes // 60
    if hours < 24:
        return tr("{hours} h", hours=hours)
    return tr("{days} d {hours} h", days=hours // 24, hours=hours % 24)


def _amount(job: Job) -> str:
    return format_pkr(job.total_paisa or 0)


@dataclass(frozen=True)
class Listed:
    """A waiting request as a list shows it: with its supplier and everyone's names."""

    waiting: Waiting
    supplier: str
    names: dict[int, str]  # the requester and everyone it waits for, by id

    def name(self, user_id: int, *, with_id: bool = False, tr: Translator = ENGLISH) -> str:
        """What to call someone: their name (and id), or their id."""
        known = self.names.get(user_id)
        if known is None:
            return tr("user {id}", id=user_id)
        return f"{flatten(known)} ({user_id})" if with_id else flatten(known)


def _stage(w: Waiting, tr: Translator) -> str:
    """ "stage 2 of 2 (owners), 1 of 2 approvals", or "" for one stage of one approval."""
    parts = []
    if w.stages > 1:
        parts.append(
            tr(
                "stage {stage} of {stages} ({group})",
                stage=w.stage + 1,
                stages=w.stages,
                group=w.group,
            )
        )
    if w.required > 1:
        parts.append(
            tr("{approvals} of {required} approvals", approvals=w.approvals, required=w.required)
        )
    return tr(", ").join(parts)


def _when(w: Waiting, now: datetime, tz: tzinfo, tr: Translator) -> str:
    """ "waiting 3 h · expires 30 Nov 2026, 14:00 PKT"."""
    deadline = w.job.decision_deadline
    text = tr("waiting {age}", age=age(now - w.job.created_at, tr=tr))
    return text + (" · " + tr("expires {at}", at=local_time(deadline, tz)) if deadline else "")


def _listed_line(item: Listed, tr: Translator, *, with_id: bool = False) -> str:
    """ "PO-2026-0001 · Rs 450,000.00 · Hall Road · from Bilal"."""
    job = item.waiting.job
    return tr(
        "{po} · {amount} · {supplier} · from {name}",
        po=job.po_number,
        amount=_amount(job),
        supplier=item.supplier,
        name=item.name(job.requester_id, with_id=with_id, tr=tr),
    )


def mine_text(
    listed: list[Listed],
    more: int,
    person: int,
    now: datetime,
    tz: tzinfo,
    *,
    tr: Translator = ENGLISH,
) -> str:
    """/pending: the requests waiting for `person`, oldest first, each in two or three lines."""
    lines = [
        tr.plural(
            "Waiting for your decision: {count} request, oldest first. 🔁 sends a card again.",
            "Waiting for your decision: {count} requests, oldest first. 🔁 sends a card again.",
            len(listed) + more,
        )
    ]
    for number, item in enumerate(listed, 1):
        w = item.waiting
        lines.append(f"{number}. {_listed_line(item, tr)}")
        lines.append(f"   {_when(w, now, tz, tr)}")
        whom = w.held_for(person)
        away = tr("for {name}, who is away", name=item.name(whom, tr=tr)) if whom else ""
        extra = [_stage(w, tr), away]
        if any(extra):
            lines.append("   " + " · ".join(part for part in extra if part))
    if more:
        lines.append(
            tr.plural(
                "… and {count} more: decide these, then send /pending again.",
                "… and {count} more: decide these, then send /pending again.",
                more,
            )
        )
    return "\n".join(lines)


def fitted(
    listed: list[Listed], more: int, render: Callable[[list[Listed], int], str]
) -> tuple[str, list[Listed]]:
    """A list's text, `render(shown, more)`, and the requests it shows, with their buttons:
    as many as fit one message (long names make fewer fit), the rest counted in `more`.
    /pending's is `mine_text` (its person, time, zone and language bound)."""
    while len(text := render(listed, more)) > MESSAGE_LIMIT:
        listed, more = listed[:-1], more + 1
    return text, listed


def _waits_for(item: Listed, tr: Translator) -> str:
    """Whom a request waits for, by name and id, and who holds the card of someone away."""
    w = item.waiting
    if not w.waiting_for:
        return tr("nobody in group {group} can approve it: /group ID {group}", group=w.group)
    held_by = {whom: holder for holder, whom in w.cards_to.items() if whom is not None}
    people = []
    for person in sorted(w.waiting_for):
        who = item.name(person, with_id=True, tr=tr)
        if person in held_by:
            holder = item.name(held_by[person], with_id=True, tr=tr)
            who = tr("{name}, away: {holder} holds the card", name=who, holder=holder)
        people.append(who)
    return tr("; ").join(people)


def all_text(
    listed: list[Listed], more: int, now: datetime, tz: tzinfo, *, tr: Translator = ENGLISH
) -> str:
    """/pending all: every waiting request, oldest first, and whom it waits for."""
    lines = [
        tr.plural(
            "Waiting for a decision: {count} request, oldest first.",
            "Waiting for a decision: {count} requests, oldest first.",
            len(listed) + more,
        )
    ]
    for item in listed:
        w = item.waiting
        lines.append(_listed_line(item, tr, with_id=True))
        lines.append("  " + " · ".join(p for p in (_when(w, now, tz, tr), _stage(w, tr)) if p))
        lines.append("  " + tr("waits for: {people}", people=_waits_for(item, tr)))
    if more:
        lines.append(
            tr.plural(
                "… and {count} more, younger than these.",
                "… and {count} more, younger than these.",
                more,
            )
        )
    return "\n".join(lines)


def suppliers_text(
    silent: list[tuple[chasing.Awaiting, Draft]],
    more: int,
    now: datetime,
    *,
    tr: Translator = ENGLISH,
) -> str:
    """/pending all, after the requests: the POs waiting for their supplier's answer from the
    link in the e-mail, oldest first, with how long each has waited."""
    lines = [
        tr.plural(
            "Waiting for the supplier's answer: {count} PO, oldest first.",
            "Waiting for the supplier's answer: {count} POs, oldest first.",
            len(silent) + more,
        )
    ]
    for waiting, draft in silent:
        lines.append(
            tr(
                "{po} · {amount} · {supplier} · e-mailed {age} ago",
                po=tr.ltr(draft.po_number),
                amount=tr.ltr(format_pkr(draft.total_paisa)),
                supplier=flatten(draft.supplier_name),
                age=age(now - waiting.sent.updated_at, tr=tr),
            )
        )
    if more:
        lines.append(tr.plural("… and {count} more.", "… and {count} more.", more))
    return "\n".join(lines)


def _first_line(found: Referred, tr: Translator) -> str:
    """That a message decides nothing, and what the buttons under it decide, if any."""
    job = found.job
    po = f"{job.po_number} ({_amount(job)})"
    if found.decidable and found.others and not found.replied:
        return tr(
            "A message never approves a purchase order. To decide {po}, the oldest waiting "
            "for you, tap a button:",
            po=po,
        )
    if found.decidable:
        return tr("A message never approves a purchase order. To decide {po}, tap a button:", po=po)
    if job.state is State.AWAITING_APPROVAL:  # another stage's turn, or counted already
        return tr(
            "A message never approves a purchase order. {po} no longer waits for your decision.",
            po=po,
        )
    name = _STATE_NAMES.get(job.state)
    return tr(
        "A message never approves a purchase order. {po} no longer waits for your decision: "
        "it is {state}.",
        po=po,
        state=tr(name) if name else job.state.value.lower().replace("_", " "),
    )


def text_answer(found: Referred, *, tr: Translator = ENGLISH) -> str:
    """The answer to an approver's free text: it decides nothing; the buttons that do, the
    comment it became, and what else waits for them."""
    lines = [
        _first_line(found, tr),
        tr(
            "💬 Your message is kept as a comment on {po} for the other approvers.",
            po=found.job.po_number,
        ),
    ]
    if found.others:
        named = ", ".join(
            f"{w.job.po_number} ({_amount(w.job)})" for w in found.others[:OTHERS_NAMED]
        )
        hidden = len(found.others) - OTHERS_NAMED
        lines.append(
            tr.plural(
                "Also waiting for you: {named} and {count} more. /pending sends their cards again.",
                "Also waiting for you: {named} and {count} more. /pending sends their cards again.",
                hidden,
                named=named,
            )
            if hidden > 0
            else tr("Also waiting for you: {named}. /pending sends their cards again.", named=named)
        )
    return "\n".join(lines)


async def _listed(tx: ShellReadTx, waiting: list[Waiting], people: bool) -> list[Listed]:
    """The shown requests with their suppliers and names (`people`: everyone they wait for)."""
    listed = []
    for w in waiting:
        assert w.job.draft_version is not None
        draft = await tx.draft(w.job.id, w.job.draft_version)
        wanted = {w.job.requester_id} | (set(w.waiting_for) | set(w.cards_to) if people else set())
        wanted |= {whom for whom in w.cards_to.values() if whom is not None}
        names = {}
        for user_id in wanted:
            known = await tx.telegram_user(user_id)
            if known is not None and known.first_name:
                names[user_id] = known.first_name
        listed.append(Listed(w, cut(draft.supplier_name, _SUPPLIER_CUT), names))
    return listed


async def pending_command(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    """/pending: the requests waiting for your decision; /pending all: every one, for admins."""
    deps, user, message = deps_of(context), update.effective_user, update.effective_message
    assert user is not None and message is not None
    args = [arg.lower() for arg in context.args or []]
    if args not in ([], ["all"]):
        await reply(update, (await speaking(deps, user.id))(USAGE))
        return
    now, default = utcnow(), _default(deps)
    async with deps.store.reading() as tx:
        roles = held_roles(deps, user.id, await tx.roles(user.id))
        everyone = bool(args)
        allowed = Role.ADMIN in roles if everyone else Role.APPROVER in roles
        silent: list[chasing.Awaiting] = []
        if allowed and everyone:
            waiting = await pending.waiting_requests(tx, now, default)
            silent = await chasing.awaiting_suppliers(tx, now)
        else:
            waiting = await pending.waiting_for_person(tx, user.id, now, default) if allowed else []
        limit = ALL_LIMIT if everyone else MINE_LIMIT
        listed = await _listed(tx, waiting[:limit], everyone)
        suppliers = [(w, await tx.draft(w.job.id, w.sent.draft_version)) for w in silent[:limit]]
    more, tz, tr = len(waiting) - len(listed), deps.settings.tz, await speaking(deps, user.id)
    if not allowed:
        hint = " " + tr(ADMIN_HINT) if Role.ADMIN in roles else ""
        await reply(update, tr(ONLY_ADMINS) if everyone else tr(NOT_AN_APPROVER) + hint)
    elif everyone and (listed or suppliers):
        text = all_text(listed, more, now, tz, tr=tr) if listed else tr(NOTHING_AT_ALL)
        if suppliers:
            text += "\n\n" + suppliers_text(suppliers, len(silent) - len(suppliers), now, tr=tr)
        await reply(update, text)
    elif not listed:
        await reply(update, tr(NOTHING_AT_ALL) if everyone else tr(NOTHING_MINE))
    else:
        mine = partial(mine_text, person=user.id, now=now, tz=tz, tr=tr)
        text, listed = fitted(listed, more, mine)
        await message.reply_text(
            text,
            reply_markup=resend_markup(deps.settings.secret, [item.waiting.job for item in listed]),
        )


def _default(deps: Deps) -> Policy:
    return deps.settings.rules().approval.default_policy


async def on_resend_tap(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    """🔁 on /pending: the request's card again, while the tapper may still decide it."""
    tap = await checked_tap(update, context)
    if tap is None:
        return
    # Routed here by its action letter (app: "^p\\."), which the verified tag covers.
    assert tap.button.action is ButtonAction.RESEND
    deps, job, user = tap.deps, tap.job, tap.user
    review = Review(
        job.po_number, user.id, Verdict.APPROVE, tap.button.draft_version, tap.signed_for
    )
    refused = await refusal(deps, job, review, reading=False, tr=tap.tr)
    if refused is not None:
        await answer_tap(tap.query, refused)
        return
    listing = tap.query.message  # one card per /pending message and request, however many taps
    because = f"again{listing.message_id}" if listing else f"again-u{update.update_id}"
    await pending.card_again(deps.store, job, user.id, because, utcnow())
    await answer_tap(tap.query, tap.tr(CARD_AGAIN))
    deliver_now(context, deps, job.id)


def _bots_message(message: Message) -> int | None:
    """The id of the bot's message this one replies to, if it replies to one."""
    quoted = message.reply_to_message
    if quoted is None or quoted.from_user is None or quoted.from_user.id != message.get_bot().id:
        return None
    return quoted.message_id


async def on_text(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    """Free text: an approver with a request to refer to is shown its buttons, and the text is
    kept as a comment on it; anyone else gets the help for their role."""
    deps, user, message = deps_of(context), update.effective_user, update.effective_message
    assert user is not None and message is not None
    async with deps.store.reading() as tx:  # one read, then the answer, then the comment
        roles = held_roles(deps, user.id, await tx.roles(user.id))
        replied, now = _bots_message(message), utcnow()
        found = None
        if Role.APPROVER in roles:
            found = await pending.referred_by_text(tx, user.id, replied, now, _default(deps))
    if found is None:
        await help_command(update, context)
        return
    tr = await speaking(deps, user.id)
    public_url = deps.settings.manzoori_public_url
    markup = (
        card_markup(deps.settings.secret, found.job, tr=tr, public_url=public_url)
        if found.decidable
        else None
    )
    await message.reply_text(text_answer(found, tr=tr), reply_markup=markup)
    await pending.comment(deps.store, found.job, user.id, message.text or "", utcnow())

"""What waits for whom, in Telegram: an approver's /pending (each request with a button that
sends its card again), the admins' /pending all, and the answer to free text, which is never a
decision: an approver is shown the buttons of the request it refers to, and the text is kept
as a comment on its trail (core.pending); anyone else gets the help for their role.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo

from telegram import Message, Update
from telegram.ext import ContextTypes

from bot.clock import utcnow
from bot.telegram.cards import MESSAGE_LIMIT, card_markup, resend_markup
from bot.telegram.context import Deps, answer_tap, deps_of, held_roles, reply
from bot.telegram.decisions import checked_tap, deliver_now, refusal
from bot.telegram.people import help_command
from bot.texts import local_time
from core import pending
from core.jobs import Job
from core.money import format_pkr
from core.pending import Referred, Waiting
from core.policies import Policy, Role, Verdict
from core.ports import ShellReadTx
from core.service import Review
from core.signing import ButtonAction
from core.states import State
from core.texts import flatten

# Requests one /pending lists, each with its button: a phone screen's worth of buttons.
MINE_LIMIT = 10
# Requests one /pending all lists (a few messages at most); the oldest come first.
ALL_LIMIT = 30
# Other requests named under the answer to free text.
OTHERS_NAMED = 5
_SUPPLIER_CUT = 60

# What it says.
USAGE = "Usage: /pending, or for an admin /pending all"
NOT_AN_APPROVER = "/pending lists the requests waiting for an approver's decision; you are not one."
ADMIN_HINT = " /pending all lists every waiting request."
ONLY_ADMINS = "Only admins can list every waiting request."
NOTHING_MINE = "Nothing waits for your decision."
NOTHING_AT_ALL = "No request waits for a decision."
CARD_AGAIN = "Here is its card again; the one you had still works."
NEVER = "A message never approves a purchase order."


def age(delta: timedelta) -> str:
    """ "45 min", "3 h", "2 d 4 h": how long a request has waited."""
    minutes = max(int(delta.total_seconds() // 60), 0)
    if minutes < 60:
        return f"{minutes} min"
    hours = minutes // 60
    return f"{hours} h" if hours < 24 else f"{hours // 24} d {hours % 24} h"


def _amount(job: Job) -> str:
    return format_pkr(job.total_paisa or 0)


def _cut(text: str) -> str:
    text = flatten(text)
    return text if len(text) <= _SUPPLIER_CUT else text[: _SUPPLIER_CUT - 1] + "…"


@dataclass(frozen=True)
class Listed:
    """A waiting request as a list shows it: with its supplier and everyone's names."""

    waiting: Waiting
    supplier: str
    names: dict[int, str]  # the requester and everyone it waits for, by id

    def name(self, user_id: int, *, with_id: bool = False) -> str:
        """What to call someone: their name (and id), or their id."""
        known = self.names.get(user_id)
        if known is None:
            return f"user {user_id}"
        return f"{flatten(known)} ({user_id})" if with_id else flatten(known)


def _stage(w: Waiting) -> str:
    """ "stage 2 of 2 (owners), 1 of 2 approvals", or "" for one stage of one approval."""
    parts = [f"stage {w.stage + 1} of {w.stages} ({w.group})"] if w.stages > 1 else []
    if w.required > 1:
        parts.append(f"{w.approvals} of {w.required} approvals")
    return ", ".join(parts)


def _when(w: Waiting, now: datetime, tz: tzinfo) -> str:
    """ "waiting 3 h · expires 30 Nov 2026, 14:00 PKT"."""
    deadline = w.job.decision_deadline
    due = f" · expires {local_time(deadline, tz)}" if deadline else ""
    return f"waiting {age(now - w.job.created_at)}{due}"


def mine_text(listed: list[Listed], more: int, person: int, now: datetime, tz: tzinfo) -> str:
    """/pending: the requests waiting for `person`, oldest first, each in two or three lines."""
    total = len(listed) + more
    lines = [
        f"Waiting for your decision: {total} request{'' if total == 1 else 's'}, oldest first. "
        "🔁 sends a card again."
    ]
    for number, item in enumerate(listed, 1):
        w = item.waiting
        lines.append(
            f"{number}. {w.job.po_number} · {_amount(w.job)} · {item.supplier} · "
            f"from {item.name(w.job.requester_id)}"
        )
        lines.append(f"   {_when(w, now, tz)}")
        whom = w.held_for(person)
        extra = [_stage(w), f"for {item.name(whom)}, who is away" if whom else ""]
        if any(extra):
            lines.append("   " + " · ".join(part for part in extra if part))
    if more:
        lines.append(f"… and {more} more: decide these, then send /pending again.")
    return "\n".join(lines)


def fitted(
    listed: list[Listed], more: int, person: int, now: datetime, tz: tzinfo
) -> tuple[str, list[Listed]]:
    """/pending's text and the requests it shows, with their buttons: as many as fit one
    message (long names make fewer fit), the rest counted in "… and N more"."""
    while len(text := mine_text(listed, more, person, now, tz)) > MESSAGE_LIMIT:
        listed, more = listed[:-1], more + 1
    return text, listed


def _waits_for(item: Listed) -> str:
    """Whom a request waits for, by name and id, and who holds the card of someone away."""
    w = item.waiting
    if not w.waiting_for:
        return f"nobody in group {w.group} can approve it: /group ID {w.group}"
    held_by = {whom: holder for holder, whom in w.cards_to.items() if whom is not None}
    people = []
    for person in sorted(w.waiting_for):
        who = item.name(person, with_id=True)
        if person in held_by:
            who += f", away: {item.name(held_by[person], with_id=True)} holds the card"
        people.append(who)
    return "; ".join(people)


def all_text(listed: list[Listed], more: int, now: datetime, tz: tzinfo) -> str:
    """/pending all: every waiting request, oldest first, and whom it waits for."""
    total = len(listed) + more
    lines = [f"Waiting for a decision: {total} request{'' if total == 1 else 's'}, oldest first."]
    for item in listed:
        w = item.waiting
        lines.append(
            f"{w.job.po_number} · {_amount(w.job)} · {item.supplier} · "
            f"from {item.name(w.job.requester_id, with_id=True)}"
        )
        lines.append("  " + " · ".join(p for p in (_when(w, now, tz), _stage(w)) if p))
        lines.append(f"  waits for: {_waits_for(item)}")
    if more:
        lines.append(f"… and {more} more, younger than these.")
    return "\n".join(lines)


def text_answer(found: Referred) -> str:
    """The answer to an approver's free text: it decides nothing; the buttons that do, the
    comment it became, and what else waits for them."""
    job = found.job
    po = f"{job.po_number} ({_amount(job)})"
    if found.decidable:
        oldest = " the oldest waiting for you," if found.others and not found.replied else ""
        lines = [f"{NEVER} To decide {po},{oldest} tap a button:"]
    elif job.state is State.AWAITING_APPROVAL:  # another stage's turn, or counted already
        lines = [f"{NEVER} {po} no longer waits for your decision."]
    else:
        state = job.state.value.lower().replace("_", " ")
        lines = [f"{NEVER} {po} no longer waits for your decision: it is {state}."]
    lines.append(
        f"💬 Your message is kept as a comment on {job.po_number} for the other approvers."
    )
    if found.others:
        named = ", ".join(
            f"{w.job.po_number} ({_amount(w.job)})" for w in found.others[:OTHERS_NAMED]
        )
        hidden = len(found.others) - OTHERS_NAMED
        named += f" and {hidden} more" if hidden > 0 else ""
        lines.append(f"Also waiting for you: {named}. /pending sends their cards again.")
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
        listed.append(Listed(w, _cut(draft.supplier_name), names))
    return listed


async def pending_command(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    """/pending: the requests waiting for your decision; /pending all: every one, for admins."""
    deps, user, message = deps_of(context), update.effective_user, update.effective_message
    assert user is not None and message is not None
    args = [arg.lower() for arg in context.args or []]
    if args not in ([], ["all"]):
        await reply(update, USAGE)
        return
    now, default = utcnow(), _default(deps)
    async with deps.store.reading() as tx:
        roles = held_roles(deps, user.id, await tx.roles(user.id))
        everyone = bool(args)
        allowed = Role.ADMIN in roles if everyone else Role.APPROVER in roles
        if allowed and everyone:
            waiting = await pending.waiting_requests(tx, now, default)
        else:
            waiting = await pending.waiting_for_person(tx, user.id, now, default) if allowed else []
        limit = ALL_LIMIT if everyone else MINE_LIMIT
        listed = await _listed(tx, waiting[:limit], everyone)
    more, tz = len(waiting) - len(listed), deps.settings.tz
    if not allowed:
        hint = ADMIN_HINT if Role.ADMIN in roles else ""
        await reply(update, ONLY_ADMINS if everyone else NOT_AN_APPROVER + hint)
    elif not listed:
        await reply(update, NOTHING_AT_ALL if everyone else NOTHING_MINE)
    elif everyone:
        await reply(update, all_text(listed, more, now, tz))
    else:
        text, listed = fitted(listed, more, user.id, now, tz)
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
    refused = await refusal(deps, job, review, reading=False)
    if refused is not None:
        await answer_tap(tap.query, refused)
        return
    listing = tap.query.message  # one card per /pending message and request, however many taps
    because = f"again{listing.message_id}" if listing else f"again-u{update.update_id}"
    await pending.card_again(deps.store, job, user.id, because, utcnow())
    await answer_tap(tap.query, CARD_AGAIN)
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
    markup = card_markup(deps.settings.secret, found.job) if found.decidable else None
    await message.reply_text(text_answer(found), reply_markup=markup)
    await pending.comment(deps.store, found.job, user.id, message.text or "", utcnow())

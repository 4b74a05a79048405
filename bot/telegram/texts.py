"""What the bot says in Telegram: to people about their roles, to requesters about their POs,
to admins about what needs them. Plain text; the cards' HTML is in bot.telegram.cards.

Names come from Telegram profiles, which anyone can fill with line breaks and bidi controls:
each goes through core.texts.flatten where it enters a sentence, so it cannot forge a line."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, tzinfo

from bot.texts import local_time
from core.jobs import Job
from core.money import format_pkr
from core.notices import NOBODY_TO_ASK, UNREACHABLE
from core.people import GroupChange
from core.policies import DEFAULT_GROUP, Policy, Role
from core.states import State
from core.texts import flatten
from core.users import TelegramUser

_ROLE_HELP = {
    Role.REQUESTER: [
        "Send a restock sheet (CSV or Excel .xlsx, columns sku, quantity and optionally "
        "supplier_id, notes) and I draft one purchase order per supplier.",
        "/status: your recent purchase orders.",
    ],
    Role.APPROVER: [
        "Approval cards come to this chat: tap Approve or Reject; 📄 Details sends the whole PO.",
        "/away UNTIL DELEGATE_ID: while you are away (until a date, 2026-12-24, or for 3d or "
        "12h), another approver gets your cards and decides for you.  /back ends it.",
        "/pending: what waits for your decision, each with its card again.  /history PO-…: the "
        "trail of a request you were asked to decide. A message never approves: tap a button.",
    ],
    Role.ADMIN: [
        "/invite approver [GROUP] or /invite requester: a single-use link (72 hours).",
        "/users: everyone and their roles.  /revoke ID: take someone's roles away at once.",
        "/promote ID: make someone with a role an admin.",
        "/groups: the approval policy's groups and who is in them.  "
        "/group ID GROUP…: set an approver's groups.",
        "/queue: purchase orders that need a person.  /history PO-…: a PO's audit trail.",
        "/pending all: every request waiting for a decision, and whom it waits for.",
        "/away ID UNTIL DELEGATE_ID, /back ID: set or end someone's delegation.",
        "/export PO-…: a PO's audit trail as a CSV file.",
        "/policy: the approval policy in force; send a .toml policy file to check and import it.",
    ],
}


def roles_text(roles: Iterable[Role]) -> str:
    """ "approver and requester"."""
    names = sorted(role.value for role in roles)
    return " and ".join(names) if names else "no role"


def stranger(first_name: str, user_id: int) -> str:
    """The polite refusal for someone without a role: their id, so an admin can act."""
    return (
        f"Hello {flatten(first_name)}. This bot is for registered staff only, and you are "
        "not registered. "
        f"Your Telegram id is {user_id}: send it to your admin, who can invite you."
    )


def greeting(first_name: str, roles: frozenset[Role]) -> str:
    """/start without a code, for someone registered."""
    return (
        f"Hello {flatten(first_name)}. You are registered as {roles_text(roles)}. "
        "/help shows what you can do."
    )


def help_text(roles: frozenset[Role]) -> str:
    """What each of the sender's roles lets them do."""
    lines = [f"You are registered as {roles_text(roles)}."]
    for role in (Role.REQUESTER, Role.APPROVER, Role.ADMIN):
        if role in roles:
            lines += _ROLE_HELP[role]
    return "\n".join(lines)


def promoted(by: str) -> str:
    """What someone just made an admin is told."""
    return (
        f"{flatten(by)} made you an admin. You can invite people, manage roles and work the review "
        "queue; /help lists the commands."
    )


def promotion(user_id: int, first_name: str, *, promoted: bool) -> str:
    """The reply to /promote ID for someone the bot has met."""
    who = f"User {user_id} ({flatten(first_name)})"
    if promoted:
        return f"{who} is now an admin. /revoke {user_id} takes it back."
    return f"{who} is already an admin."


def registered(role: Role) -> str:
    """After an invitation was redeemed."""
    return f"Welcome! You are now registered as {role.value}. /help shows what you can do."


def invite_link(
    bot_username: str,
    code: str,
    role: Role,
    expires_at: datetime,
    tz: tzinfo,
    group: str | None = None,
) -> str:
    """The reply to /invite: the link to forward, and when it stops working."""
    whom = f"new {role.value}" + (f" of group {group}" if group else "")
    return (
        f"Forward this link to the {whom}. It works once, until "
        f"{local_time(expires_at, tz)}:\nhttps://t.me/{bot_username}?start={code}"
    )


def people_list(
    rows: Iterable[tuple[TelegramUser | None, int, frozenset[Role]]],
    groups: Mapping[int, Iterable[str]] | None = None,
    away: Mapping[int, tuple[int, str]] | None = None,
) -> str:
    """/users: one line per person: id, name, roles, an approver's groups, who decides for
    them while they are away (delegate id, until when), and whether the bot can reach them."""
    lines = []
    for known, user_id, roles in rows:
        name = flatten(known.first_name) if known else "(never wrote to the bot)"
        line = f"{user_id}  {name}  {roles_text(roles)}"
        if Role.APPROVER in roles and groups is not None:
            line += f"  groups: {', '.join(sorted(groups.get(user_id, ()))) or DEFAULT_GROUP}"
        if away and user_id in away:
            delegate, until = away[user_id]
            line += f"  away until {until}: {delegate} decides"
        reach = "" if known and known.reachable else "  ⚠️ cannot receive messages yet"
        lines.append(line + reach)
    return "\n".join(lines) if lines else "Nobody holds a role yet."


# What a requester reads for each state of their PO.
_STATE_WORDS = {
    State.AWAITING_APPROVAL: "waiting for approval",
    State.APPROVED: "approved, e-mail going out",
    State.SENDING: "e-mail going out",
    State.SENT: "sent to the supplier",
    State.REJECTED: "rejected",
    State.EXPIRED: "expired without a decision",
    State.CANCELLED: "cancelled",
    State.FAILED_RETRYABLE: "e-mail delayed; retrying",
    State.FAILED_FINAL: "needs manual review",
    State.UNKNOWN_OUTCOME: "needs manual review",
}


def status_list(jobs: Iterable[Job], tz: tzinfo) -> str:
    """/status: a requester's recent POs, newest first."""
    lines = [
        f"{job.po_number}  {format_pkr(job.total_paisa or 0)}  "
        f"{_STATE_WORDS.get(job.state, job.state.value)}  ({local_time(job.updated_at, tz)})"
        for job in jobs
    ]
    return (
        "Your recent purchase orders:\n" + "\n".join(lines)
        if lines
        else ("You have no purchase orders yet. Send a restock sheet to start one.")
    )


def requester_notice(po_number: str, state: State, reason: str | None) -> str:
    """What a requester is told when their PO moves on."""
    match state:
        case State.APPROVED:
            return f"{po_number} was approved; the e-mail to the supplier goes out now."
        case State.SENT:
            return f"{po_number} was e-mailed to the supplier."
        case State.REJECTED:
            return f"{po_number} was rejected: {reason or 'no reason given'}"
        case State.EXPIRED:
            return f"{po_number} expired without a decision. Send the sheet again to ask again."
        case State.CANCELLED:
            return f"{po_number} was cancelled{f': {reason}' if reason else '.'}"
        case _:
            return (
                f"{po_number} needs a person to check it ({_STATE_WORDS.get(state, state.value)}); "
                "an admin has it in the review queue."
            )


def policy_alert(version: str, unstaffed: Iterable[tuple[str, str]]) -> str:
    """What the admins are told when a policy is in force with groups (name, title) nobody
    the bot can write to is in."""
    lines = [f"⚠️ Policy {flatten(version)} is in force."]
    for name, title in unstaffed:
        lines.append(
            f"Nobody can approve for {flatten(title)} yet: add someone with "
            f"/group ID {flatten(name)}."
        )
    return "\n".join(lines)


def admin_alert(po_number: str, event: str, approver: str | None, group: str | None = None) -> str:
    """What the admins are told: a PO needs them (`event`: the state it entered), an
    approver's card could not go out (`event`: UNREACHABLE or UNDELIVERED), or a PO waits for a
    group with nobody in it to ask (`event`: NOBODY_TO_ASK, `group`)."""
    if event == NOBODY_TO_ASK:
        if group in (None, DEFAULT_GROUP):
            return (
                f"⚠️ {po_number} is waiting for approval, but no approver is registered. "
                "Invite one with /invite approver; its card goes out as soon as they join."
            )
        return (
            f"⚠️ {po_number} is waiting for group {flatten(group)}, which has nobody in it "
            f"who can approve it. Put an approver in it with /group ID {flatten(group)}; its "
            "card goes out as soon as they are."
        )
    approver = None if approver is None else flatten(approver)
    if approver is not None and event == UNREACHABLE:
        return (
            f"⚠️ {approver} could not be sent the approval card for {po_number}: they have not "
            "started the bot or have blocked it. Ask them to open the bot and press Start; "
            "the other approvers have their cards."
        )
    if approver is not None:
        return (
            f"⚠️ {approver} could not be sent the approval card for {po_number}: Telegram kept "
            "failing and the retries ran out. The other approvers have their cards; check the "
            "bot's connection to Telegram."
        )
    why = {
        State.UNKNOWN_OUTCOME: "the e-mail may or may not have reached the supplier",
        State.FAILED_FINAL: "it could not be sent",
    }.get(State(event), State(event).value)
    return f"⚠️ {po_number} needs you: {why}. /queue shows it with what you can do."


def groups_list(
    policy: Policy, members: Mapping[str, frozenset[int]], names: Mapping[int, str]
) -> str:
    """/groups: each group of the policy in force, with its members by name and id."""
    lines = []
    for group, title in policy.groups.items():
        people = sorted(members.get(group, frozenset()))
        who = ", ".join(f"{flatten(names.get(p, str(p)))} ({p})" for p in people)
        everyone = " (every approver)" if group == DEFAULT_GROUP else ""
        lines.append(f"{group}: {flatten(title)}{everyone}: {who or 'nobody yet'}")
    return "\n".join(lines)


def group_change(user_id: int, change: GroupChange) -> str:
    """The reply to /group ID GROUP…."""
    now = ", ".join(sorted(change.groups)) or "approvers only"
    moved = [
        *([f"joined {', '.join(sorted(change.joined))}"] if change.joined else []),
        *([f"left {', '.join(sorted(change.left))}"] if change.left else []),
    ]
    return f"User {user_id} is in: {now}." + (f" ({'; '.join(moved)})" if moved else "")


def away_set(delegator: str, delegate: str, until: str, *, mine: bool) -> str:
    """/away's answer: who decides for whom, until when."""
    who = "You are" if mine else f"{flatten(delegator)} is"
    whose = "your" if mine else "their"
    return (
        f"{who} away until {until}. {flatten(delegate)} gets {whose} approval cards, waiting "
        f"and new, and decides for {'you' if mine else 'them'}. /back ends it sooner."
    )


def acting_for(delegator: str, until: str) -> str:
    """What a delegate is told when someone hands over to them."""
    return (
        f"{flatten(delegator)} is away until {until}: their approval cards come to you, marked "
        "for them, and your decision on them counts as theirs."
    )


def back(delegator: str, delegate: str) -> str:
    """/back's answer."""
    return (
        f"Delegation ended: {flatten(delegator)} decides again, and gets the cards still "
        f"waiting; {flatten(delegate)}'s cards for them no longer decide."
    )

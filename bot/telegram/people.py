"""People and roles in Telegram: /start with an invitation, /help, an approver's /away and
/back, and the admins' /invite, /users, /promote, /revoke, /groups and /group. Each command
calls one use case of core.people.people, which checks the admin inside the transaction that
writes."""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence

from telegram import Update
from telegram.error import TelegramError
from telegram.ext import ContextTypes

from bot.clock import utcnow
from bot.telegram import texts
from bot.telegram.context import Deps, deps_of, holding, reply, roles_of
from bot.telegram.language import speaking
from bot.words.arguments import parse_user_id
from bot.words.i18n import N_
from bot.words.refusals import refusal_text
from bot.words.texts import local_time
from core.approval.delegations import parse_until
from core.approval.policies import Role
from core.approval.standing import policy_now
from core.errors import DelegationRefused, GroupRefused, InviteRefused, NotAnAdmin
from core.jobs.jobs import Stamp
from core.people import delegating, people

log = logging.getLogger(__name__)

# The bot keeps no record of people without a role (bot.telegram.app.claim), so only someone
# who holds one can be promoted: a mistyped id cannot become an admin.
NOT_MET = N_(
    "I do not know user {target}: only someone with a role can be promoted. "
    "Invite them first (/invite requester), then promote them."
)


async def start(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    """/start CODE registers with an invitation; a plain /start greets by role."""
    deps, user = deps_of(context), update.effective_user
    assert user is not None
    if context.args:
        try:
            role = await people.redeem_invite(
                deps.store,
                deps.settings.secret,
                context.args[0],
                user.id,
                utcnow(),
                deps.settings.rules().approval.default_policy,
            )
        except InviteRefused as refused:
            await reply(update, refusal_text(refused, tr=await speaking(deps, user.id)))
            return
        async with deps.store.begin() as tx:  # they hold a role now: their name may be kept
            await tx.met(user.id, user.first_name, utcnow(), started=True)
        await reply(update, texts.registered(role, tr=await speaking(deps, user.id)))
        return
    roles, tr = await roles_of(deps, user.id), await speaking(deps, user.id)
    text = texts.greeting(user.first_name, roles, tr=tr) if roles else None
    await reply(update, text or texts.stranger(user.first_name, user.id))


async def help_command(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    """/help, and any message no other handler takes: what the sender's roles let them do, or
    the refusal with their id for someone without a role."""
    user = update.effective_user
    if user is None:
        return  # a channel post, say: nobody to answer
    deps = deps_of(context)
    roles = await roles_of(deps, user.id)
    if not roles:
        await reply(update, texts.stranger(user.first_name, user.id))
        return
    await reply(update, texts.help_text(roles, tr=await speaking(deps, user.id)))


async def invite(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    """/invite approver|requester: a single-use link, for admins only."""
    deps, user = deps_of(context), update.effective_user
    assert user is not None
    args, tr = [arg.lower() for arg in context.args or []], await speaking(deps, user.id)
    wanted = args[0] if args else ""
    group = args[1] if len(args) > 1 else None
    if wanted not in (Role.APPROVER.value, Role.REQUESTER.value) or len(args) > 2:
        usage = "/invite approver [GROUP]  or  /invite requester"
        await reply(update, tr("Usage: {command}", command=usage))
        return
    now = utcnow()
    try:
        key = people.InviteKey(deps.settings.secret, os.urandom(9))
        code = await people.create_invite(
            deps.store,
            user.id,
            Role(wanted),
            now,
            key,
            deps.settings.manzoori_admin_ids,
            group=group,
            default=deps.settings.rules().approval.default_policy,
        )
    except NotAnAdmin:
        await reply(update, tr("Only admins can invite people."))
        return
    except GroupRefused as refused:
        await reply(update, tr("No invitation made: {why}.", why=refusal_text(refused, tr=tr)))
        return
    expires = now + people.INVITE_TTL
    link = texts.invite_link(
        context.bot.username, code, Role(wanted), expires, deps.settings.tz, group, tr=tr
    )
    await reply(update, link)


async def users(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    """/users: everyone with a role, for admins only."""
    allowed = await holding(update, context, Role.ADMIN, N_("Only admins can list users."))
    if allowed is None:
        return
    deps, user = allowed
    now, tr = utcnow(), await speaking(deps, user.id)
    async with deps.store.reading() as tx:
        rows = await tx.people()
        groups: dict[int, list[str]] = {}
        for user_id, group_name in await tx.memberships():
            groups.setdefault(user_id, []).append(group_name)
        delegations = await tx.delegations_since(now)
    tz = deps.settings.tz
    away = {
        d.delegator: (d.delegate, local_time(d.ends_at, tz)) for d in delegations if d.active(now)
    }
    await reply(update, texts.people_list(rows, groups, away, tr=tr))


def _user_id_arg(context: ContextTypes.DEFAULT_TYPE) -> int | None:
    """The command's Telegram user id argument, or None if it is missing or malformed."""
    return parse_user_id((context.args or [""])[0])


async def promote(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    """/promote ID: make someone the bot has met an admin, for admins only."""
    deps, user, target = deps_of(context), update.effective_user, _user_id_arg(context)
    assert user is not None
    tr = await speaking(deps, user.id)
    if target is None:
        usage = "/promote TELEGRAM_ID"
        await reply(update, tr("Usage: {command}  (/start tells anyone their id)", command=usage))
        return
    admins = deps.settings.manzoori_admin_ids
    try:
        done = await people.promote(deps.store, user.id, target, utcnow(), admins)
    except NotAnAdmin:
        await reply(update, tr("Only admins can promote people."))
        return
    if done.user is None:
        text = tr(NOT_MET, target=target)
    else:
        text = texts.promotion(target, done.user.first_name, promoted=done.promoted, tr=tr)
    await reply(update, text)
    if done.promoted:  # best effort: /help says the same whenever they ask
        try:
            told = texts.promoted(user.first_name, tr=await speaking(deps, target))
            await context.bot.send_message(target, told)
        except TelegramError as error:
            log.info("user %s not told of their promotion: %s", target, error)


async def revoke(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    """/revoke ID: take every role from a user at once, for admins only."""
    deps, user, target = deps_of(context), update.effective_user, _user_id_arg(context)
    assert user is not None
    tr = await speaking(deps, user.id)
    if target is None:
        usage = "/revoke TELEGRAM_ID"
        await reply(update, tr("Usage: {command}  (/users lists the ids)", command=usage))
        return
    admins = deps.settings.manzoori_admin_ids
    try:
        default = deps.settings.rules().approval.default_policy
        held = await people.revoke(deps.store, user.id, target, utcnow(), admins, default)
    except NotAnAdmin:
        await reply(update, tr("Only admins can revoke roles."))
        return
    text = (
        tr(
            "User {id} lost: {roles}. Their pending taps no longer count.",
            id=target,
            roles=texts.roles_text(held, tr=tr),
        )
        if held
        else tr("User {id} holds no role.", id=target)
    )
    if target in admins:
        text += " " + tr(
            "They stay an admin through MANZOORI_ADMIN_IDS, which only the host can change."
        )
    await reply(update, text)


async def groups(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    """/groups: the approval policy's groups and their members, for admins only."""
    allowed = await holding(update, context, Role.ADMIN, N_("Only admins can list groups."))
    if allowed is None:
        return
    deps, user = allowed
    async with deps.store.reading() as tx:
        policy = await policy_now(tx, deps.settings.rules().approval.default_policy)
        members = await tx.group_members(list(policy.groups))
        names = {}
        for person in {p for people in members.values() for p in people}:
            known = await tx.telegram_user(person)
            if known is not None:
                names[person] = known.first_name
    tr = await speaking(deps, user.id)
    await reply(update, texts.groups_list(policy, members, names, tr=tr))


async def group(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    """/group ID GROUP…: set an approver's groups (exactly those), for admins only."""
    deps, user, target = deps_of(context), update.effective_user, _user_id_arg(context)
    assert user is not None
    wanted = [g.lower() for g in (context.args or [])[1:]]
    tr = await speaking(deps, user.id)
    if target is None or not wanted:
        usage = "/group TELEGRAM_ID GROUP…"
        await reply(update, tr("Usage: {command}  (/groups lists the groups)", command=usage))
        return
    stamp = Stamp(f"user:{user.id}", utcnow())
    try:
        change = await people.set_groups(
            deps.store,
            target,
            wanted,
            stamp,
            deps.settings.rules().approval.default_policy,
            admin_id=user.id,
            configured_admins=deps.settings.manzoori_admin_ids,
        )
    except NotAnAdmin:
        await reply(update, tr("Only admins can set groups."))
        return
    except GroupRefused as refused:
        await reply(update, tr("Not changed: {why}.", why=refusal_text(refused, tr=tr)))
        return
    await reply(update, texts.group_change(target, change, tr=tr))


AWAY_USAGE = N_(
    "Usage: /away UNTIL DELEGATE_ID, UNTIL a date (2026-12-24: to the end of that day) or a "
    "duration (3d, 12h); an admin: /away ID UNTIL DELEGATE_ID. /back ends it."
)


def away_args(args: Sequence[str], sender: int) -> tuple[int, str, int] | None:
    """/away's arguments as (who is away, UNTIL as typed, the delegate): UNTIL DELEGATE_ID for
    the sender, ID UNTIL DELEGATE_ID for someone else; None if they are neither."""
    ids = [parse_user_id(arg) for arg in args]
    if len(args) == 2 and ids[1] is not None:
        return sender, args[0], ids[1]
    if len(args) == 3 and ids[0] is not None and ids[2] is not None:
        return ids[0], args[1], ids[2]
    return None


async def away(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    """/away UNTIL DELEGATE_ID: hand one's approvals to another approver until then (an admin:
    /away ID UNTIL DELEGATE_ID, for someone else)."""
    deps, user = deps_of(context), update.effective_user
    assert user is not None
    tr, wanted = await speaking(deps, user.id), away_args(context.args or [], user.id)
    if wanted is None:
        await reply(update, tr(AWAY_USAGE))
        return
    delegator, until_text, delegate_id = wanted
    now = utcnow()
    try:
        until = parse_until(until_text, now, deps.settings.tz)
        made = await delegating.delegate(
            deps.store,
            delegator,
            delegate_id,
            until,
            Stamp(f"user:{user.id}", now),
            deps.settings.rules().approval.default_policy,
            acting_id=user.id,
            configured_admins=deps.settings.manzoori_admin_ids,
        )
    except NotAnAdmin:
        await reply(update, tr("Only admins can set someone else's delegation."))
        return
    except DelegationRefused as refused:
        await reply(update, tr("Not set: {why}.", why=refusal_text(refused, tr=tr)))
        return
    names = await _names(deps, {delegator, delegate_id})
    when = local_time(made.until, deps.settings.tz)
    mine = delegator == user.id
    set_text = texts.away_set(names[delegator], names[delegate_id], when, mine=mine, tr=tr)
    await reply(update, set_text)
    try:  # best effort: their cards say the same
        told = texts.acting_for(names[delegator], when, tr=await speaking(deps, delegate_id))
        await context.bot.send_message(delegate_id, told)
    except TelegramError as error:
        log.info("delegate %s not told of their delegation: %s", delegate_id, error)


async def back(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    """/back: end one's delegation now (an admin: /back ID, someone else's)."""
    deps, user = deps_of(context), update.effective_user
    assert user is not None
    delegator = _user_id_arg(context) if context.args else user.id
    tr = await speaking(deps, user.id)
    if delegator is None:
        await reply(update, tr("Usage: /back, or for an admin /back ID"))
        return
    try:
        ended = await delegating.come_back(
            deps.store,
            delegator,
            Stamp(f"user:{user.id}", utcnow()),
            deps.settings.rules().approval.default_policy,
            acting_id=user.id,
            configured_admins=deps.settings.manzoori_admin_ids,
        )
    except NotAnAdmin:
        await reply(update, tr("Only admins can end someone else's delegation."))
        return
    except DelegationRefused as refused:
        await reply(update, tr("Nothing to end: {why}.", why=refusal_text(refused, tr=tr)))
        return
    names = await _names(deps, {ended.delegator, ended.delegate})
    await reply(update, texts.back(names[ended.delegator], names[ended.delegate], tr=tr))


async def _names(deps: Deps, user_ids: set[int]) -> dict[int, str]:
    """What to call each user: their name and id, or their id alone."""
    names = {}
    async with deps.store.reading() as tx:
        for user_id in user_ids:
            known = await tx.telegram_user(user_id)
            names[user_id] = f"{known.first_name} ({user_id})" if known else f"user {user_id}"
    return names

"""People and roles in Telegram: /start with an invitation, /help, an approver's /away and
/back, and the admins' /invite, /users, /promote, /revoke, /groups, /group and /branch. Each
command calls one use case of core.people.people, which checks the admin inside the transaction
that writes."""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import wraps
from typing import Any, Generic, NamedTuple, TypeVar

from telegram import Update, User
from telegram.error import TelegramError
from telegram.ext import ContextTypes

from bot.clock import utcnow
from bot.telegram import texts
from bot.telegram.catalogue import catalogue_markup, offer_menu_button
from bot.telegram.context import Deps, deps_of, holding, reply, roles_of
from bot.telegram.language import speaking
from bot.words.arguments import parse_user_id
from bot.words.i18n import N_, Translator
from bot.words.refusals import refusal_text
from bot.words.texts import local_time
from core.approval.delegations import Delegation, parse_until
from core.approval.policies import Policy, Role
from core.approval.standing import policy_now
from core.errors import (
    BranchRefused,
    DelegationRefused,
    GroupRefused,
    InviteRefused,
    NotAnAdmin,
    RefusedError,
)
from core.jobs.jobs import Stamp
from core.people import delegating, people
from core.people.people import Invitation
from core.people.users import Acting
from core.ports import ShellStore

log = logging.getLogger(__name__)
A = TypeVar("A")  # a command's arguments, as read
T = TypeVar("T")  # what its use case returned

# The bot keeps no record of people without a role (bot.telegram.app.claim), so only someone
# who holds one can be promoted: a mistyped id cannot become an admin.
NOT_MET = N_(
    "I do not know user {target}: only someone with a role can be promoted. "
    "Invite them first (/invite requester), then promote them."
)


AWAY_USAGE = N_(
    "Usage: /away UNTIL DELEGATE_ID, UNTIL a date (2026-12-24: to the end of that day) or a "
    "duration (3d, 12h); an admin: /away ID UNTIL DELEGATE_ID. /back ends it."
)


async def start(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    """/start CODE registers with an invitation; a plain /start greets by role."""
    deps, user = deps_of(context), update.effective_user
    assert user is not None
    if context.args:
        try:
            role = await people.redeem_invite(
                deps.store,
                deps.settings.secrets,
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
        tr = await speaking(deps, user.id)
        await _welcome(update, context, texts.registered(role, tr=tr), tr, role is Role.REQUESTER)
        return
    roles, tr = await roles_of(deps, user.id), await speaking(deps, user.id)
    if not roles:
        await reply(update, texts.stranger(user.first_name, user.id))
        return
    text = texts.greeting(user.first_name, roles, tr=tr)
    await _welcome(update, context, text, tr, Role.REQUESTER in roles)


async def _welcome(
    update: Update, context: ContextTypes.DEFAULT_TYPE, text: str, tr: Translator, requester: bool
) -> None:
    """/start's answer; a requester's with the catalogue's button, and the chat's menu
    button made to open it."""
    deps, user = deps_of(context), update.effective_user
    assert user is not None
    if not requester:
        await reply(update, text)
        return
    await reply(update, text, catalogue_markup(deps.settings, tr))
    await offer_menu_button(context.bot, deps.settings, user.id, tr)


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


# /invite, /promote, /revoke, /group, /branch, /away and /back each do one use case of
# core.people, and take the same course (_command): the sender's language; the arguments read,
# or the usage; the use case done by the sender, now; a refusal said; else the command's answer.


class _By(NamedTuple):
    """Whom a command's use case is done by, and when: the sender, the translator of their
    language and the deps; with what the use cases take of them."""

    deps: Deps
    user: User
    tr: Translator
    now: datetime

    @property
    def store(self) -> ShellStore:
        """Where the use case is done."""
        return self.deps.store

    @property
    def stamp(self) -> Stamp:
        """The sender's act, now."""
        return Stamp(f"user:{self.user.id}", self.now)

    @property
    def default(self) -> Policy:
        """The approval policy in force while none is imported."""
        return self.deps.settings.rules().approval.default_policy

    @property
    def acting(self) -> Acting:
        """The sender, asking for a change that may be for someone else."""
        return Acting(self.user.id, self.admins)

    @property
    def admins(self) -> frozenset[int]:
        """MANZOORI_ADMIN_IDS."""
        return self.deps.settings.manzoori_admin_ids


class _Done(NamedTuple, Generic[A, T]):
    """A command whose use case is done: by whom, its arguments and what the use case
    returned."""

    by: _By
    args: A
    result: T


@dataclass(frozen=True)
class _Says:
    """What a command says when it does nothing, in English msgids marked with N_: `usage`
    (its {command} filled with `command`) to arguments it cannot read; `not_admin` to a
    sender who is not an admin where the use case wants one; to a refusal of the kind in
    `refused`, its msgid with the reason as {why}."""

    usage: str
    not_admin: str
    command: str | None = None
    refused: tuple[type[RefusedError], str] | None = None


# What each command says when it does nothing, in the order the module's docstring
# names them.
_AWAY = _Says(
    AWAY_USAGE,
    N_("Only admins can set someone else's delegation."),
    refused=(DelegationRefused, N_("Not set: {why}.")),
)
_BACK = _Says(
    N_("Usage: /back, or for an admin /back ID"),
    N_("Only admins can end someone else's delegation."),
    refused=(DelegationRefused, N_("Nothing to end: {why}.")),
)
_INVITE = _Says(
    N_("Usage: {command}"),
    N_("Only admins can invite people."),
    command="/invite approver [GROUP]  or  /invite requester",
    refused=(GroupRefused, N_("No invitation made: {why}.")),
)
_PROMOTE = _Says(
    N_("Usage: {command}  (/start tells anyone their id)"),
    N_("Only admins can promote people."),
    command="/promote TELEGRAM_ID",
)
_REVOKE = _Says(
    N_("Usage: {command}  (/users lists the ids)"),
    N_("Only admins can revoke roles."),
    command="/revoke TELEGRAM_ID",
)
_GROUP = _Says(
    N_("Usage: {command}  (/groups lists the groups)"),
    N_("Only admins can set groups."),
    command="/group TELEGRAM_ID GROUP…",
    refused=(GroupRefused, N_("Not changed: {why}.")),
)
_BRANCH = _Says(
    N_("Usage: {command}  (/company lists the branches)"),
    N_("Only admins can set branches."),
    command="/branch TELEGRAM_ID BRANCH",
    refused=(BranchRefused, N_("Not changed: {why}.")),
)

_Handler = Callable[[Update, ContextTypes.DEFAULT_TYPE], Coroutine[Any, Any, None]]
_Answer = Callable[[Update, ContextTypes.DEFAULT_TYPE, _Done[A, T]], Awaitable[None]]


def _command(
    says: _Says,
    read: Callable[[Sequence[str], int], A | None],
    work: Callable[[_By, A], Awaitable[T]],
) -> Callable[[_Answer[A, T]], _Handler]:
    """The handler of a command that does one use case, around its answer: the arguments,
    `read(as typed, the sender's id)`, go to the use case, `work(by whom, those arguments)`,
    and the decorated answer says what came of it; `says` says why nothing was done."""

    def handler(answer: _Answer[A, T]) -> _Handler:
        @wraps(answer)
        async def handle(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
            deps, user = deps_of(context), update.effective_user
            assert user is not None
            tr = await speaking(deps, user.id)
            args = read(context.args or [], user.id)
            if args is None:
                command = {} if says.command is None else {"command": says.command}
                await reply(update, tr(says.usage, **command))
                return
            by = _By(deps, user, tr, utcnow())
            try:
                result = await work(by, args)
            except NotAnAdmin:
                await reply(update, tr(says.not_admin))
                return
            except RefusedError as refused:
                if says.refused is None or not isinstance(refused, says.refused[0]):
                    raise
                await reply(update, tr(says.refused[1], why=refusal_text(refused, tr=tr)))
                return
            await answer(update, context, _Done(by, args, result))

        return handle

    return handler


def _user_id(args: Sequence[str], sender: int) -> int | None:
    """The Telegram user id a command's first argument names, or None if it is missing or
    malformed."""
    return parse_user_id(args[0] if args else "")


class _Invitation(NamedTuple):
    """/invite's arguments."""

    role: Role
    group: str | None


def _invite_args(args: Sequence[str], sender: int) -> _Invitation | None:
    """/invite's arguments: approver or requester, and the group an approver's invitation
    names, if any."""
    wanted = [arg.lower() for arg in args]
    role = wanted[0] if wanted else ""
    if role not in (Role.APPROVER.value, Role.REQUESTER.value) or len(wanted) > 2:
        return None
    return _Invitation(Role(role), wanted[1] if len(wanted) > 1 else None)


@_command(
    _INVITE,
    _invite_args,
    lambda by, args: people.create_invite(
        by.store,
        by.user.id,
        args.role,
        by.now,
        people.InviteKey(by.deps.settings.secret, os.urandom(9)),
        by.admins,
        group=args.group,
        default=by.default,
    ),
)
async def invite(
    update: Update, context: ContextTypes.DEFAULT_TYPE, done: _Done[_Invitation, Invitation]
) -> None:
    """/invite approver|requester: a single-use link, for admins only."""
    (deps, _, tr, _), _, made = done
    await reply(update, texts.invite_link(context.bot.username, made, deps.settings.tz, tr=tr))


@_command(
    _PROMOTE,
    _user_id,
    lambda by, target: people.promote(by.store, by.user.id, target, by.now, by.admins),
)
async def promote(
    update: Update, context: ContextTypes.DEFAULT_TYPE, done: _Done[int, people.Promotion]
) -> None:
    """/promote ID: make someone the bot has met an admin, for admins only."""
    (deps, user, tr, _), target, promotion = done
    if promotion.user is None:
        text = tr(NOT_MET, target=target)
    else:
        text = texts.promotion(
            target, promotion.user.first_name, promoted=promotion.promoted, tr=tr
        )
    await reply(update, text)
    if promotion.promoted:  # best effort: /help says the same whenever they ask
        try:
            told = texts.promoted(user.first_name, tr=await speaking(deps, target))
            await context.bot.send_message(target, told)
        except TelegramError as error:
            log.info("user %s not told of their promotion: %s", target, error)


@_command(
    _REVOKE,
    _user_id,
    lambda by, target: people.revoke(by.store, by.user.id, target, by.now, by.admins, by.default),
)
async def revoke(
    update: Update, context: ContextTypes.DEFAULT_TYPE, done: _Done[int, frozenset[Role]]
) -> None:
    """/revoke ID: take every role from a user at once, for admins only."""
    (deps, _, tr, _), target, held = done
    text = (
        tr(
            "User {id} lost: {roles}. Their pending taps no longer count.",
            id=target,
            roles=texts.roles_text(held, tr=tr),
        )
        if held
        else tr("User {id} holds no role.", id=target)
    )
    if target in deps.settings.manzoori_admin_ids:
        text += " " + tr(
            "They stay an admin through MANZOORI_ADMIN_IDS, which only the host can change."
        )
    await reply(update, text)


class _Groups(NamedTuple):
    """/group's arguments."""

    user_id: int
    groups: list[str]


def _group_args(args: Sequence[str], sender: int) -> _Groups | None:
    """/group's arguments: the user id and the groups to set (at least one), in lower case."""
    target, wanted = _user_id(args, sender), [g.lower() for g in args[1:]]
    return _Groups(target, wanted) if target is not None and wanted else None


@_command(
    _GROUP,
    _group_args,
    lambda by, args: people.set_groups(
        by.store,
        args.user_id,
        args.groups,
        by.stamp,
        by.default,
        by.acting,
    ),
)
async def group(
    update: Update, context: ContextTypes.DEFAULT_TYPE, done: _Done[_Groups, people.GroupChange]
) -> None:
    """/group ID GROUP…: set an approver's groups (exactly those), for admins only."""
    (_, _, tr, _), (target, _), change = done
    await reply(update, texts.group_change(target, change, tr=tr))


class _Branch(NamedTuple):
    """/branch's arguments."""

    user_id: int
    branch: str


def _branch_args(args: Sequence[str], sender: int) -> _Branch | None:
    """/branch's arguments: the user id and one branch id, in lower case."""
    target = _user_id(args, sender)
    return _Branch(target, args[1].lower()) if target is not None and len(args) == 2 else None


@_command(
    _BRANCH,
    _branch_args,
    lambda by, args: people.set_branch(by.store, args.user_id, args.branch, by.stamp, by.acting),
)
async def branch(
    update: Update, context: ContextTypes.DEFAULT_TYPE, done: _Done[_Branch, people.BranchChange]
) -> None:
    """/branch ID BRANCH: set the branch a requester orders for, for admins only."""
    (_, _, tr, _), (target, _), change = done
    await reply(update, texts.branch_change(target, change, tr=tr))


class Away(NamedTuple):
    """/away's arguments."""

    delegator: int  # who is away
    until: str  # UNTIL as typed
    delegate: int


def away_args(args: Sequence[str], sender: int) -> Away | None:
    """/away's arguments: UNTIL DELEGATE_ID for the sender, ID UNTIL DELEGATE_ID for someone
    else; None if they are neither."""
    ids = [parse_user_id(arg) for arg in args]
    if len(args) == 2 and ids[1] is not None:
        return Away(sender, args[0], ids[1])
    if len(args) == 3 and ids[0] is not None and ids[2] is not None:
        return Away(ids[0], args[1], ids[2])
    return None


@_command(
    _AWAY,
    away_args,
    lambda by, args: delegating.delegate(
        by.store,
        args.delegator,
        args.delegate,
        parse_until(args.until, by.now, by.deps.settings.tz),  # refused like the rest
        by.stamp,
        by.default,
        by.acting,
    ),
)
async def away(
    update: Update, context: ContextTypes.DEFAULT_TYPE, done: _Done[Away, Delegation]
) -> None:
    """/away UNTIL DELEGATE_ID: hand one's approvals to another approver until then (an admin:
    /away ID UNTIL DELEGATE_ID, for someone else)."""
    (deps, user, tr, _), (delegator, _, delegate_id), made = done
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


def _back_args(args: Sequence[str], sender: int) -> int | None:
    """/back's argument: whose delegation ends, the sender's if none is named."""
    return _user_id(args, sender) if args else sender


@_command(
    _BACK,
    _back_args,
    lambda by, delegator: delegating.come_back(
        by.store, delegator, by.stamp, by.default, by.acting
    ),
)
async def back(
    update: Update, context: ContextTypes.DEFAULT_TYPE, done: _Done[int, Delegation]
) -> None:
    """/back: end one's delegation now (an admin: /back ID, someone else's)."""
    (deps, _, tr, _), _, ended = done
    names = await _names(deps, {ended.delegator, ended.delegate})
    await reply(update, texts.back(names[ended.delegator], names[ended.delegate], tr=tr))


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
        company = await tx.current_company()
        default = None if company is None else company.default_branch
        branches = texts.Branches(await tx.branches(), default)
        delegations = await tx.delegations_since(now)
    tz = deps.settings.tz
    away = {
        d.delegator: (d.delegate, local_time(d.ends_at, tz)) for d in delegations if d.active(now)
    }
    await reply(update, texts.people_list(rows, groups, away, branches=branches, tr=tr))


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


async def _names(deps: Deps, user_ids: set[int]) -> dict[int, str]:
    """What to call each user: their name and id, or their id alone."""
    names = {}
    async with deps.store.reading() as tx:
        for user_id in user_ids:
            known = await tx.telegram_user(user_id)
            names[user_id] = f"{known.first_name} ({user_id})" if known else f"user {user_id}"
    return names

"""Who may do what: admins invite approvers and requesters with single-use signed links,
promote people the bot has met to admin, put approvers in groups, give requesters their
branch, and revoke roles."""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime, timedelta

from core.approval.policies import DEFAULT_GROUP, GROUP_NAME, Policy, Role
from core.approval.signing import Invite, Secrets, sign_invite, verify_invite
from core.approval.standing import (
    alert_if_any_short,
    ask_new_approver,
    policy_now,
)
from core.company.company import BRANCH_ID, Branch, Company
from core.errors import (
    BranchRefused,
    ExpiredToken,
    GroupRefused,
    InvalidToken,
    InviteRefused,
    Refusal,
)
from core.jobs.jobs import AuditEvent, Stamp
from core.people.delegating import active_delegations, end_delegation
from core.people.users import Acting, TelegramUser, is_admin, require_admin
from core.ports import Store, Tx
from core.texts import echo

# Long enough to reach someone over a weekend, short enough that a leaked link goes stale.
INVITE_TTL = timedelta(hours=72)

# People an admin may invite; admins come from the configuration, /promote or
# `manzoori users grant`.
INVITABLE = frozenset({Role.APPROVER, Role.REQUESTER})

# Why a link cannot register someone, for logs (the person is told by bot.words.refusals).
INVITE_EXPIRED = "invitation link expired"

INVITE_INVALID = "invitation link not valid"

INVITE_USED = "invitation link already used"

INVITE_WITHDRAWN = "invitation link withdrawn: the admin who made it is no longer an admin"


@dataclass(frozen=True)
class GroupChange:
    """What /group did: the approver groups a user is in now, those joined and those left."""

    groups: frozenset[str]
    joined: frozenset[str]
    left: frozenset[str]


@dataclass(frozen=True)
class BranchChange:
    """What /branch did: the branch a requester orders for now, the one before (None: the
    company's default applied) and the branch's name."""

    branch: str
    before: str | None
    name: str


@dataclass(frozen=True)
class InviteKey:
    """What signs one invitation: MANZOORI_SECRET_KEY and the invite's own random bytes."""

    secret: bytes
    nonce: bytes  # 9 random bytes from the shell: the invite's id


@dataclass(frozen=True)
class Invitation:
    """An invitation made: the /start code to hand out, and what it says (role, expiry) and
    the group an approver joins by it, if it names one."""

    code: str
    invite: Invite
    group: str | None


@dataclass(frozen=True)
class Promotion:
    """What /promote did: `user` is None for someone the bot never met (nothing was written)."""

    user: TelegramUser | None
    promoted: bool  # False: never met, or an admin already


async def create_invite(
    store: Store,
    admin_id: int,
    role: Role,
    now: datetime,
    key: InviteKey,
    configured_admins: frozenset[int],
    *,
    group: str | None = None,
    default: Policy | None = None,
) -> Invitation:
    """A single-use /start code for `role`, valid for INVITE_TTL; only admins may make one.
    An approver's may name a `group` of the approval policy in force (`default` while none is
    imported) to join; without one, they join its first group."""
    if role not in INVITABLE:
        message = f"invitations are for approvers and requesters, not {role.value}s"
        raise InviteRefused(message, Refusal.INVITE_ROLE, role=role.value)
    if group is not None and role is not Role.APPROVER:
        message = "only an approver's invitation can name a group"
        raise GroupRefused(message, Refusal.GROUP_FOR_REQUESTER)
    async with store.begin() as tx:
        await require_admin(tx, admin_id, configured_admins)
        if group is not None:
            assert default is not None  # a group is one of the policy in force
            require_groups(await policy_now(tx, default), [group])
        code = sign_invite(key.secret, role, now + INVITE_TTL, key.nonce)
        invite = verify_invite(key.secret, code, now)  # the id and the expiry as the code says
        await tx.insert_invite(invite, admin_id, now, group)
        detail = {"invite_id": invite.invite_id, "role": role.value}
        if group is not None:
            detail["group"] = group
        await tx.append_audit(AuditEvent.stamped(Stamp(f"user:{admin_id}", now), "invite", detail))
        return Invitation(code, invite, group)


async def redeem_invite(
    store: Store, secret: Secrets, code: str, user_id: int, now: datetime, default: Policy
) -> Role:
    """Register `user_id` with the invitation's role; refuse forged, expired or used codes.
    `default`: the configuration's approval policy, while none is imported."""
    try:
        invite = verify_invite(secret, code, now)
    except InvalidToken as error:
        if isinstance(error, ExpiredToken):
            raise InviteRefused(INVITE_EXPIRED, Refusal.INVITE_EXPIRED) from error
        raise InviteRefused(INVITE_INVALID, Refusal.INVITE_INVALID) from error
    async with store.begin() as tx:
        used = await tx.use_invite(invite.invite_id, user_id, now)
        if used is None:
            withdrawn = await tx.invite_withdrawn(invite.invite_id)
            if withdrawn:
                raise InviteRefused(INVITE_WITHDRAWN, Refusal.INVITE_WITHDRAWN)
            raise InviteRefused(INVITE_USED, Refusal.INVITE_USED)
        role, group = used
        stamp = Stamp(f"invite:{invite.invite_id}", now)
        await _grant(tx, user_id, role, stamp, default, group)
        return role


async def grant_role(store: Store, user_id: int, role: Role, stamp: Stamp, default: Policy) -> bool:
    """Give a user a role (`manzoori users grant`); False if they held it already. A new
    approver joins the first group of the approval policy in force (`default` while none is
    imported) and is owed the cards of the requests waiting for it."""
    async with store.begin() as tx:
        return await _grant(tx, user_id, role, stamp, default)


async def _grant(
    tx: Tx,
    user_id: int,
    role: Role,
    stamp: Stamp,
    default: Policy | None = None,
    group: str | None = None,
) -> bool:
    """Grant and audit the role; a new approver joins `group` (an invitation's), or else the
    policy's first group, and is owed the waiting cards in the same transaction, so nobody
    becomes an approver without them."""
    granted = await tx.grant(user_id, role, stamp.actor, stamp.at)
    if granted and role is Role.APPROVER:
        assert default is not None  # an approver's grant always says which policy is default
        groups = (await policy_now(tx, default)).groups
        # An invitation's group the policy has dropped since: the first group instead.
        joining = group if group is not None and group in groups else next(iter(groups))
        if joining != DEFAULT_GROUP:  # `approvers` is every approver already
            await join_groups(tx, user_id, {joining}, stamp)
        await ask_new_approver(tx, user_id, stamp.at, default)
    return granted


def require_groups(policy: Policy, groups: Collection[str]) -> None:
    """Raise GroupRefused unless every one of `groups` is a group of `policy`."""
    unknown = sorted(set(groups) - set(policy.groups))
    if unknown:
        # A name as a group's may be shown as it is; anything else was typed and is echoed.
        shown = (name if re.fullmatch(GROUP_NAME, name) else echo(name) for name in unknown)
        known, named = ", ".join(policy.groups), ", ".join(shown)
        message = f"no group {named} in the approval policy in force ({known})"
        raise GroupRefused(message, Refusal.UNKNOWN_GROUPS, groups=named, known=known)


async def set_groups(
    store: Store,
    user_id: int,
    groups: Collection[str],
    stamp: Stamp,
    default: Policy,
    acting: Acting | None = None,
) -> GroupChange:
    """Make `groups` exactly the approver groups of `user_id` (`/group`, `manzoori users
    groups`), audited; only for an approver, only groups of the policy in force, and (with
    `acting`, from Telegram) only by an admin. They are owed the cards of the requests now
    waiting for a group they joined; in a group they left, their approvals count no more."""
    async with store.begin() as tx:
        if acting is not None:
            await require_admin(tx, acting.user_id, acting.configured_admins)
        if Role.APPROVER not in await tx.roles(user_id):
            message = f"user {user_id} is not an approver: grant the role first"
            raise GroupRefused(message, Refusal.NOT_AN_APPROVER_YET, user=user_id)
        require_groups(await policy_now(tx, default), groups)
        explicit = set(groups) - {DEFAULT_GROUP}  # `approvers` is every approver already
        joined, left = await tx.set_groups(user_id, explicit, stamp.actor, stamp.at)
        if joined or left:
            detail = {"user_id": user_id, "joined": sorted(joined), "left": sorted(left)}
            await tx.append_audit(AuditEvent.stamped(stamp, "set_groups", detail))
        if joined:
            await ask_new_approver(tx, user_id, stamp.at, default)
        if left:  # their approvals count no more there, and they are not asked any more
            await alert_if_any_short(tx, stamp.at, default)
        return GroupChange(frozenset(await tx.groups_of(user_id)), joined, left)


def require_branch(company: Company | None, branch_id: str) -> Branch:
    """The branch of that id of the company in force; BranchRefused if there is no company
    file in force, or no such branch in it."""
    if company is None:
        message = "no company file is imported yet: an admin must import one first"
        raise BranchRefused(message, Refusal.NO_COMPANY)
    branch = company.branch(branch_id)
    if branch is None:
        # An id as a branch's may be shown as it is; anything else was typed and is echoed.
        named = branch_id if re.fullmatch(BRANCH_ID, branch_id) else echo(branch_id)
        known = ", ".join(each.branch_id for each in company.branches)
        message = f"no branch {named} in the company file in force ({known})"
        raise BranchRefused(message, Refusal.UNKNOWN_BRANCH, branch=named, known=known)
    return branch


async def set_branch(
    store: Store, user_id: int, branch_id: str, stamp: Stamp, acting: Acting | None = None
) -> BranchChange:
    """Make `branch_id` the branch `user_id` orders for (`/branch`, `manzoori users grant
    --branch`), audited: their POs are delivered there unless a row of their sheet says
    otherwise. Only for a requester, only a branch of the company file in force, and (with
    `acting`, from Telegram) only by an admin."""
    async with store.begin() as tx:
        if acting is not None:
            await require_admin(tx, acting.user_id, acting.configured_admins)
        if Role.REQUESTER not in await tx.roles(user_id):
            message = f"user {user_id} is not a requester: grant the role first"
            raise BranchRefused(message, Refusal.NOT_A_REQUESTER_YET, user=user_id)
        branch = require_branch(await tx.current_company(), branch_id)
        before = await tx.set_branch(user_id, branch.branch_id, stamp.actor, stamp.at)
        if before != branch.branch_id:
            detail = {"user_id": user_id, "branch": branch.branch_id, "before": before}
            await tx.append_audit(AuditEvent.stamped(stamp, "set_branch", detail))
        return BranchChange(branch.branch_id, before, branch.name)


async def join_groups(tx: Tx, user_id: int, groups: set[str], stamp: Stamp) -> frozenset[str]:
    """Add the user to approver groups, audited; the groups they were not in before."""
    held = await tx.groups_of(user_id)
    joined, _ = await tx.set_groups(user_id, held | groups, stamp.actor, stamp.at)
    if joined:
        detail = {"user_id": user_id, "joined": sorted(joined)}
        await tx.append_audit(AuditEvent.stamped(stamp, "join_groups", detail))
    return joined


async def promote(
    store: Store, admin_id: int, user_id: int, now: datetime, configured_admins: frozenset[int]
) -> Promotion:
    """Make someone the bot has met an admin, audited under `admin_id`; only admins may."""
    async with store.begin() as tx:
        await require_admin(tx, admin_id, configured_admins)
        known = await tx.telegram_user(user_id)
        if known is None or is_admin(user_id, await tx.roles(user_id), configured_admins):
            return Promotion(known, promoted=False)
        await _grant(tx, user_id, Role.ADMIN, Stamp(f"user:{admin_id}", now))
        return Promotion(known, promoted=True)


async def revoke(
    store: Store,
    admin_id: int,
    user_id: int,
    now: datetime,
    configured_admins: frozenset[int],
    default: Policy,
) -> frozenset[Role]:
    """Take every role from `user_id` at once, audited under `admin_id`; only admins may.
    What they held (MANZOORI_ADMIN_IDS is configuration, not a role, and stays). Someone who
    stops being an admin so has every invitation they made and nobody used withdrawn."""
    async with store.begin() as tx:
        await require_admin(tx, admin_id, configured_admins)
        stamp = Stamp(f"user:{admin_id}", now)
        return await _revoke(tx, user_id, stamp, configured_admins, default)


async def revoke_roles(
    store: Store, user_id: int, stamp: Stamp, configured_admins: frozenset[int], default: Policy
) -> frozenset[Role]:
    """Take every role from `user_id` (`manzoori users revoke`); what they held."""
    async with store.begin() as tx:
        return await _revoke(tx, user_id, stamp, configured_admins, default)


async def _revoke(
    tx: Tx, user_id: int, stamp: Stamp, configured_admins: frozenset[int], default: Policy
) -> frozenset[Role]:
    """Revoke and audit; a requester no more loses their branch, an admin no more their
    unused invitations, and an approver no more every delegation from or to them."""
    held = await tx.revoke(user_id, stamp.actor, stamp.at)
    if held:  # their branch goes with their roles, as their groups do
        before = await tx.set_branch(user_id, None, stamp.actor, stamp.at)
        if before is not None:
            detail = {"user_id": user_id, "branch": None, "before": before}
            await tx.append_audit(AuditEvent.stamped(stamp, "set_branch", detail))
    if Role.ADMIN in held and user_id not in configured_admins:
        await withdraw_invites(tx, user_id, stamp)
    if Role.APPROVER in held:
        for active in await active_delegations(tx, stamp.at):
            if user_id in (active.delegator, active.delegate):
                await end_delegation(tx, active, stamp, default)
        await alert_if_any_short(tx, stamp.at, default)  # one approver fewer in each group
    return held


async def withdraw_invites(tx: Tx, admin_id: int, stamp: Stamp) -> list[str]:
    """Withdraw the unused invitations of someone who is an admin no more, audited."""
    withdrawn = await tx.withdraw_invites(admin_id, stamp.at)
    if withdrawn:
        detail = {"user_id": admin_id, "invite_ids": withdrawn}
        await tx.append_audit(AuditEvent.stamped(stamp, "withdraw_invites", detail))
    return withdrawn

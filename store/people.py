"""SqlTx's queries about people: invitations, the Telegram users met, processed updates,
approver groups, requesters' branches and delegations."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import and_, bindparam, delete, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from core.approval.delegations import Delegation
from core.approval.policies import DEFAULT_GROUP, Role
from core.approval.signing import Invite
from core.people.users import TelegramUser
from store import schema
from store.versioned import insert_or_keep, upsert

_CLAIM_UPDATE = insert_or_keep(schema.processed_updates, "update_id")
_groups, _roles = schema.user_groups, schema.user_roles
_GROUP_MEMBERS = (
    select(_groups.c.group_name, _groups.c.user_id)
    .join(
        _roles,
        and_(_roles.c.user_id == _groups.c.user_id, _roles.c.role == Role.APPROVER.value),
    )
    .where(_groups.c.group_name.in_(bindparam("groups", expanding=True)))
)
_APPROVERS = select(_roles.c.user_id).where(_roles.c.role == Role.APPROVER.value)
# Every update of someone with a role records their name (record_claim): built once.
_MET = upsert(schema.telegram_users, "user_id", ("first_name", "updated_at"))
_MET_STARTED = upsert(  # /start: the bot may write to them again, even after a block
    schema.telegram_users, "user_id", ("first_name", "updated_at", "started_at", "blocked_at")
)
_SET_BRANCH = upsert(schema.user_branches, "user_id", ("branch_id", "set_by", "set_at"))


def _delegation(row: Any) -> Delegation:
    """A delegations row as a Delegation."""
    return Delegation(
        id=int(row.id),
        delegator=int(row.delegator),
        delegate=int(row.delegate),
        starts_at=row.starts_at,
        until=row.until,
        set_by=str(row.set_by),
        ended_at=row.ended_at,
    )


def _user(row: Any) -> TelegramUser:
    """A telegram_users row (user_id, first_name, started_at, blocked_at) as a TelegramUser."""
    reachable = row.started_at is not None and row.blocked_at is None
    return TelegramUser(row.user_id, row.first_name, reachable)


class PeopleQueries:
    """Mixed into SqlTx: everything here runs inside its transaction."""

    conn: AsyncConnection

    async def insert_invite(
        self, invite: Invite, created_by: int, at: datetime, group: str | None = None
    ) -> None:
        """Record an invitation that has been handed out (an approver's, to `group`)."""
        await self.conn.execute(
            insert(schema.invites).values(
                id=invite.invite_id,
                role=invite.role.value,
                created_by=created_by,
                created_at=at,
                expires_at=invite.expires_at,
                group_name=group,
            )
        )

    async def use_invite(
        self, invite_id: str, user_id: int, at: datetime
    ) -> tuple[Role, str | None] | None:
        """Mark an unused, unexpired, not withdrawn invitation used by `user_id` (compare-and-set
        on used_by); its role and group, or None if it is unknown, used, expired or withdrawn."""
        t = schema.invites
        usable = and_(t.c.used_by.is_(None), t.c.expires_at > at, t.c.withdrawn_at.is_(None))
        query = (
            update(t)
            .where(t.c.id == invite_id, usable)
            .values(used_by=user_id, used_at=at)
            .returning(t.c.role, t.c.group_name)
        )
        row = (await self.conn.execute(query)).first()
        return None if row is None else (Role(row.role), row.group_name)

    async def invite_withdrawn(self, invite_id: str) -> bool:
        """Whether the invitation was withdrawn (its admin lost the role)."""
        t = schema.invites
        query = select(t.c.withdrawn_at).where(t.c.id == invite_id)
        return (await self.conn.execute(query)).scalar_one_or_none() is not None

    async def withdraw_invites(self, created_by: int, at: datetime) -> list[str]:
        """Withdraw every unused, not yet withdrawn invitation `created_by` made; their ids."""
        t = schema.invites
        query = (
            update(t)
            .where(t.c.created_by == created_by, t.c.used_by.is_(None), t.c.withdrawn_at.is_(None))
            .values(withdrawn_at=at)
            .returning(t.c.id)
        )
        return sorted(str(i) for i in (await self.conn.execute(query)).scalars())

    async def met(self, user_id: int, first_name: str, at: datetime, *, started: bool) -> None:
        """Remember the name of someone who holds a role (the caller checks: a stranger's name
        is never stored); `started`: they sent /start, so the bot may write to them."""
        if not started:
            await self.met_all({user_id: (first_name, at)})
            return
        values: dict[str, Any] = {"user_id": user_id, "first_name": first_name[:64]}
        started_values = {"updated_at": at, "started_at": at, "blocked_at": None}
        await self.conn.execute(_MET_STARTED, values | started_values)

    async def met_all(self, names: Mapping[int, tuple[str, datetime]]) -> None:
        """`met` without /start for many people (user id: first name, when), in one
        statement."""
        if names:
            rows = [
                {"user_id": user_id, "first_name": first_name[:64], "updated_at": at}
                for user_id, (first_name, at) in names.items()
            ]
            await self.conn.execute(_MET, rows)

    async def mark_blocked(self, user_id: int, at: datetime) -> None:
        """Telegram said the user blocked the bot: write to them no more until they return."""
        t = schema.telegram_users
        await self.conn.execute(
            update(t).where(t.c.user_id == user_id).values(blocked_at=at, updated_at=at)
        )

    async def set_language(self, user_id: int, language: str, at: datetime) -> bool:
        """Keep the language `user_id` chose (a met user's row); False if the bot never met
        them."""
        t = schema.telegram_users
        result = await self.conn.execute(
            update(t).where(t.c.user_id == user_id).values(language=language, updated_at=at)
        )
        return bool(result.rowcount)

    async def languages(self, user_ids: Collection[int]) -> dict[int, str]:
        """The language each of `user_ids` chose; someone who chose none is left out."""
        t = schema.telegram_users
        query = select(t.c.user_id, t.c.language).where(
            t.c.user_id.in_(list(user_ids)), t.c.language.is_not(None)
        )
        return {int(uid): str(lang) for uid, lang in await self.conn.execute(query)}

    async def telegram_user(self, user_id: int) -> TelegramUser | None:
        """What the bot knows of a user, if it met them."""
        t = schema.telegram_users
        row = (await self.conn.execute(select(t).where(t.c.user_id == user_id))).first()
        return None if row is None else _user(row)

    async def people(self) -> list[tuple[TelegramUser | None, int, frozenset[Role]]]:
        """Everyone holding a role, with what the bot knows of them, by user id."""
        roles, users = schema.user_roles, schema.telegram_users
        rows = await self.conn.execute(
            select(
                roles.c.user_id,
                roles.c.role,
                users.c.first_name,
                users.c.started_at,
                users.c.blocked_at,
            )
            .outerjoin(users, users.c.user_id == roles.c.user_id)
            .order_by(roles.c.user_id, roles.c.role)
        )
        found: dict[int, tuple[TelegramUser | None, set[Role]]] = {}
        for row in rows:
            known = None if row.first_name is None else _user(row)
            found.setdefault(row.user_id, (known, set()))[1].add(Role(row.role))
        return [(known, uid, frozenset(held)) for uid, (known, held) in found.items()]

    async def claim_update(self, update_id: int, at: datetime) -> bool:
        """True the first time an update id is seen; a redelivery gets False."""
        result = await self.conn.execute(
            _CLAIM_UPDATE, {"update_id": update_id, "processed_at": at}
        )
        return bool(result.rowcount)

    async def claim_updates(self, claims: Mapping[int, datetime]) -> None:
        """Claim many fresh update ids (update id: when) in one statement; IntegrityError if
        one was claimed before (store.batched checks them all at its COMMIT)."""
        if claims:
            rows = [{"update_id": key, "processed_at": at} for key, at in claims.items()]
            await self.conn.execute(insert(schema.processed_updates), rows)

    async def release_update(self, update_id: int) -> None:
        """Forget a claimed update id: its handler failed, so a redelivery is handled again."""
        t = schema.processed_updates
        await self.conn.execute(delete(t).where(t.c.update_id == update_id))

    async def group_members(self, groups: Collection[str]) -> dict[str, frozenset[int]]:
        """Each group's members who hold the approver role now (none: an empty set). The
        group `approvers` (core.approval.policies.DEFAULT_GROUP) is every approver, always."""
        found: dict[str, set[int]] = {group: set() for group in groups}
        named = [group for group in found if group != DEFAULT_GROUP]
        if named:
            for group, user_id in await self.conn.execute(_GROUP_MEMBERS, {"groups": named}):
                found[str(group)].add(int(user_id))
        if DEFAULT_GROUP in found:
            rows = await self.conn.execute(_APPROVERS)
            found[DEFAULT_GROUP] = {int(user_id) for user_id in rows.scalars()}
        return {group: frozenset(members) for group, members in found.items()}

    async def groups_of(self, user_id: int) -> frozenset[str]:
        """The groups a user is in."""
        t = schema.user_groups
        rows = await self.conn.execute(select(t.c.group_name).where(t.c.user_id == user_id))
        return frozenset(str(group) for group in rows.scalars())

    async def memberships(self) -> list[tuple[int, str]]:
        """Every (user id, group) pair, by user and group."""
        t = schema.user_groups
        query = select(t.c.user_id, t.c.group_name).order_by(t.c.user_id, t.c.group_name)
        return [(int(user_id), str(group)) for user_id, group in await self.conn.execute(query)]

    async def set_groups(
        self, user_id: int, groups: Collection[str], by: str, at: datetime
    ) -> tuple[frozenset[str], frozenset[str]]:
        """Make `groups` exactly the groups of `user_id`; the groups (joined, left). The caller
        audits the change."""
        t = schema.user_groups
        held = await self.groups_of(user_id)
        wanted = frozenset(groups)
        joined, left = wanted - held, held - wanted
        if left:
            await self.conn.execute(
                delete(t).where(t.c.user_id == user_id, t.c.group_name.in_(sorted(left)))
            )
        if joined:
            await self.conn.execute(
                insert(t),
                [
                    {"user_id": user_id, "group_name": g, "granted_by": by, "granted_at": at}
                    for g in sorted(joined)
                ],
            )
        return joined, left

    async def branch_of(self, user_id: int) -> str | None:
        """The branch a user orders for, or None if none was set."""
        t = schema.user_branches
        query = select(t.c.branch_id).where(t.c.user_id == user_id)
        found = (await self.conn.execute(query)).scalar_one_or_none()
        return None if found is None else str(found)

    async def branches(self) -> dict[int, str]:
        """Every user's branch, by user id."""
        t = schema.user_branches
        query = select(t.c.user_id, t.c.branch_id).order_by(t.c.user_id)
        return {int(user_id): str(branch) for user_id, branch in await self.conn.execute(query)}

    async def set_branch(
        self, user_id: int, branch_id: str | None, by: str, at: datetime
    ) -> str | None:
        """Make `branch_id` the branch `user_id` orders for, or with None clear it; the branch
        before (None: none). The same branch again writes nothing. The caller audits."""
        before = await self.branch_of(user_id)
        if branch_id == before:
            return before
        if branch_id is None:
            t = schema.user_branches
            await self.conn.execute(delete(t).where(t.c.user_id == user_id))
        else:
            values = {"user_id": user_id, "branch_id": branch_id, "set_by": by, "set_at": at}
            await self.conn.execute(_SET_BRANCH, values)
        return before

    async def delegations_since(self, since: datetime) -> list[Delegation]:
        """Every delegation that did not end before `since`, oldest first."""
        t = schema.delegations
        ends = func.coalesce(t.c.ended_at, t.c.until)
        rows = await self.conn.execute(select(t).where(ends > since).order_by(t.c.id))
        return [_delegation(row) for row in rows]

    async def insert_delegation(
        self, delegator: int, delegate: int, starts_at: datetime, until: datetime, by: str
    ) -> Delegation:
        """Record a delegation; the caller ends the delegator's earlier one and audits."""
        t = schema.delegations
        values = {
            "delegator": delegator,
            "delegate": delegate,
            "starts_at": starts_at,
            "until": until,
            "set_by": by,
        }
        row = (await self.conn.execute(insert(t).values(**values).returning(t))).one()
        return _delegation(row)

    async def end_delegation(self, delegation_id: int, at: datetime) -> Delegation | None:
        """End a delegation not yet ended (compare-and-set on ended_at); None if it was."""
        t = schema.delegations
        query = (
            update(t)
            .where(t.c.id == delegation_id, t.c.ended_at.is_(None))
            .values(ended_at=at)
            .returning(t)
        )
        row = (await self.conn.execute(query)).first()
        return None if row is None else _delegation(row)

    async def delegations_due(self, now: datetime, limit: int) -> list[Delegation]:
        """Delegations whose `until` has come and that nobody has ended yet, oldest first."""
        t = schema.delegations
        query = (
            select(t)
            .where(t.c.ended_at.is_(None), t.c.until <= now)
            .order_by(t.c.until, t.c.id)
            .limit(limit)
        )
        return [_delegation(row) for row in await self.conn.execute(query)]

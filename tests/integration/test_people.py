"""Invitations on SQLite and PostgreSQL: only admins make them; each registers one person."""

from __future__ import annotations

import asyncio
import json
import os
from datetime import timedelta

import pytest
from sqlalchemy import text

from core.approval import decisions, opening
from core.approval.approval_policy import import_policy
from core.approval.decisions import Review
from core.approval.policies import Policy, Role, Rules, Verdict
from core.errors import GroupRefused, InviteRefused, NotAnAdmin, Refusal
from core.jobs.jobs import Stamp
from core.people import people
from core.people.users import Acting
from store.engine import make_engine
from store.sql import SqlStore
from tests.helpers.factories import APPROVER_A, APPROVER_B, REQUESTER, T0, make_draft, new_job
from tests.helpers.store import DATA_KEY

SECRET = b"s" * 32
ADMIN = 9001  # configured in MANZOORI_ADMIN_IDS
PROMOTED = 9002  # holds the admin role in the database
DEFAULT = Policy.default(500_000 * 100)  # the configuration's policy, none imported
NEWCOMER, SECOND = 5001, 5002


async def invite(store, role=Role.APPROVER, by=ADMIN, at=T0):
    made = await people.create_invite(
        store, by, role, at, people.InviteKey(SECRET, os.urandom(9)), frozenset({ADMIN})
    )
    return made.code


async def roles(store, user_id):
    async with store.begin() as tx:
        return await tx.roles(user_id)


async def trail(store):
    async with store.begin() as tx:
        rows = await tx.conn.execute(
            text("SELECT actor, action, detail FROM audit_events ORDER BY id")
        )
        # raw SQL: SQLite hands JSON back as text, PostgreSQL as data
        return [(a, b, json.loads(c) if isinstance(c, str) else c) for a, b, c in rows]


async def test_an_admin_invites_and_the_invitee_gets_the_role(store):
    code = await invite(store, Role.REQUESTER)
    assert len(code) <= 64
    assert await people.redeem_invite(
        store, SECRET, code, NEWCOMER, T0 + timedelta(hours=1), DEFAULT
    ) is (Role.REQUESTER)
    assert await roles(store, NEWCOMER) == {Role.REQUESTER}
    events = await trail(store)
    assert events[-2][:2] == (f"user:{ADMIN}", "invite")
    assert events[-1][1] == "grant_role" and events[-1][0].startswith("invite:")
    assert events[-1][2] == {"user_id": NEWCOMER, "role": "requester"}


async def test_a_promoted_admin_may_invite_and_nobody_else(store):
    async with store.begin() as tx:
        await tx.grant(PROMOTED, Role.ADMIN, "test", T0)
    assert await invite(store, by=PROMOTED)
    for outsider in (APPROVER_A, NEWCOMER):
        with pytest.raises(NotAnAdmin):
            await invite(store, by=outsider)
    with pytest.raises(InviteRefused, match="not admins"):
        await invite(store, Role.ADMIN)


async def test_a_code_registers_one_person_once(store):
    code = await invite(store)
    await people.redeem_invite(store, SECRET, code, NEWCOMER, T0, DEFAULT)
    with pytest.raises(InviteRefused, match="already used"):
        await people.redeem_invite(store, SECRET, code, SECOND, T0, DEFAULT)
    assert await roles(store, SECOND) == frozenset()


async def test_expired_forged_and_foreign_codes_are_refused(store):
    code = await invite(store)
    with pytest.raises(InviteRefused, match="expired"):
        await people.redeem_invite(store, SECRET, code, NEWCOMER, T0 + people.INVITE_TTL, DEFAULT)
    for bad in (code[:-1], code[::-1], "hello", (await people.create_invite(
        store, ADMIN, Role.APPROVER, T0, people.InviteKey(b"other" * 8, os.urandom(9)),
        frozenset({ADMIN}),
    )).code):  # fmt: skip
        with pytest.raises(InviteRefused, match="not valid"):
            await people.redeem_invite(store, SECRET, bad, NEWCOMER, T0, DEFAULT)
    assert await roles(store, NEWCOMER) == frozenset()


async def test_two_people_racing_for_one_code_register_one(store, db_url):
    code = await invite(store)
    stores = [SqlStore(make_engine(db_url), DATA_KEY) for _ in range(2)]
    try:
        results = await asyncio.gather(
            *(
                people.redeem_invite(s, SECRET, code, who, T0, DEFAULT)
                for s, who in zip(stores, (NEWCOMER, SECOND), strict=True)
            ),
            return_exceptions=True,
        )
    finally:
        for s in stores:
            await s.close()
    assert sorted(type(r).__name__ for r in results) == ["InviteRefused", "Role"]
    registered = [who for who in (NEWCOMER, SECOND) if await roles(store, who)]
    assert len(registered) == 1


async def test_the_bot_may_write_only_to_people_who_started_it(store):
    async with store.begin() as tx:
        await tx.met(NEWCOMER, "Ali", T0, started=False)  # wrote in a group, say
        assert (await tx.telegram_user(NEWCOMER)).reachable is False
        await tx.met(NEWCOMER, "Ali Raza", T0, started=True)
        assert await tx.telegram_user(NEWCOMER) == people.TelegramUser(NEWCOMER, "Ali Raza", True)
        await tx.met(NEWCOMER, "Ali R.", T0, started=False)  # a later message keeps "started"
        assert (await tx.telegram_user(NEWCOMER)).reachable is True
        await tx.mark_blocked(NEWCOMER, T0)
        assert (await tx.telegram_user(NEWCOMER)).reachable is False
        await tx.met(NEWCOMER, "Ali", T0, started=True)  # back with /start
        assert (await tx.telegram_user(NEWCOMER)).reachable is True
        assert await tx.telegram_user(SECOND) is None


async def test_each_person_keeps_the_language_they_chose(store):
    async with store.begin() as tx:
        await tx.met(NEWCOMER, "Ali", T0, started=True)
        await tx.met(SECOND, "Sana", T0, started=True)
        assert await tx.languages([NEWCOMER, SECOND]) == {}  # nobody chose: the default
        assert await tx.set_language(NEWCOMER, "ur", T0) is True
        assert await tx.set_language(9_999_999, "ur", T0) is False  # never met: nothing kept
    async with store.reading() as tx:
        assert await tx.languages([NEWCOMER, SECOND, 9_999_999]) == {NEWCOMER: "ur"}
    async with store.begin() as tx:
        await tx.set_language(NEWCOMER, "en", T0)
        await tx.met(NEWCOMER, "Ali Raza", T0, started=False)  # a new name keeps the choice
        assert await tx.languages([NEWCOMER]) == {NEWCOMER: "en"}


async def test_people_lists_every_role_holder_with_what_the_bot_knows(store):
    async with store.begin() as tx:
        await tx.grant(NEWCOMER, Role.APPROVER, "test", T0)
        await tx.grant(NEWCOMER, Role.REQUESTER, "test", T0)
        await tx.met(NEWCOMER, "Ali", T0, started=True)
        listing = {uid: (known, held) for known, uid, held in await tx.people()}
    assert listing[NEWCOMER] == (people.TelegramUser(NEWCOMER, "Ali", True),
                                 frozenset({Role.APPROVER, Role.REQUESTER}))  # fmt: skip
    assert listing[APPROVER_A] == (None, frozenset({Role.APPROVER}))  # granted, never met


async def test_an_update_delivered_twice_is_claimed_once(store, db_url):
    stores = [SqlStore(make_engine(db_url), DATA_KEY) for _ in range(3)]

    async def claim(s):
        async with s.begin() as tx:
            return await tx.claim_update(424242, T0)

    try:
        claims = await asyncio.gather(*(claim(s) for s in stores))
    finally:
        for s in stores:
            await s.close()
    assert sorted(claims) == [False, False, True]
    assert await claim(store) is False


async def promote(store, user_id, by=ADMIN, at=T0):
    return await people.promote(store, by, user_id, at, frozenset({ADMIN}))


async def test_an_admin_promotes_someone_met_audited_under_their_id(store):
    async with store.begin() as tx:
        await tx.met(NEWCOMER, "Bilal", T0, started=False)
    done = await promote(store, NEWCOMER)
    assert done == people.Promotion(people.TelegramUser(NEWCOMER, "Bilal", False), promoted=True)
    assert await roles(store, NEWCOMER) == {Role.ADMIN}
    assert (await trail(store))[-1] == (
        f"user:{ADMIN}",
        "grant_role",
        {"user_id": NEWCOMER, "role": "admin"},
    )
    async with store.begin() as tx:
        await tx.met(SECOND, "Sana", T0, started=True)
    assert (await promote(store, SECOND, by=NEWCOMER)).promoted  # a promoted admin promotes too
    assert await roles(store, SECOND) == {Role.ADMIN}


async def test_promote_writes_nothing_for_strangers_admins_and_non_admins(store):
    async with store.begin() as tx:
        await tx.met(NEWCOMER, "Bilal", T0, started=True)
        await tx.met(ADMIN, "Ayesha", T0, started=True)
        await tx.grant(PROMOTED, Role.ADMIN, "test", T0)
        await tx.met(PROMOTED, "Omar", T0, started=True)
    events = await trail(store)
    assert await promote(store, SECOND) == people.Promotion(None, promoted=False)  # never met
    for admin in (ADMIN, PROMOTED):  # configured; holds the role
        assert (await promote(store, admin)).promoted is False
    for outsider in (APPROVER_A, NEWCOMER):
        with pytest.raises(NotAnAdmin):
            await promote(store, NEWCOMER, by=outsider)
    assert await trail(store) == events
    assert await roles(store, SECOND) == await roles(store, NEWCOMER) == frozenset()
    assert await roles(store, ADMIN) == frozenset()  # configured, not granted


async def test_revoke_takes_the_admin_role_too_and_only_admins_may(store):
    async with store.begin() as tx:
        await tx.grant(PROMOTED, Role.ADMIN, "test", T0)
        await tx.grant(PROMOTED, Role.APPROVER, "test", T0)
    with pytest.raises(NotAnAdmin):
        await people.revoke(store, APPROVER_A, PROMOTED, T0, frozenset({ADMIN}), DEFAULT)
    held = await people.revoke(store, ADMIN, PROMOTED, T0, frozenset({ADMIN}), DEFAULT)
    assert held == {Role.ADMIN, Role.APPROVER} and await roles(store, PROMOTED) == frozenset()
    assert (await trail(store))[-1] == (
        f"user:{ADMIN}",
        "revoke_roles",
        {"user_id": PROMOTED, "roles": ["admin", "approver"]},
    )
    with pytest.raises(NotAnAdmin):  # no longer an admin
        await people.revoke(store, PROMOTED, APPROVER_A, T0, frozenset({ADMIN}), DEFAULT)
    assert await roles(store, APPROVER_A) == {Role.APPROVER}


async def test_revoking_an_admin_withdraws_their_unused_invitations(store):
    async with store.begin() as tx:
        await tx.grant(PROMOTED, Role.ADMIN, "test", T0)
    used, unused = await invite(store, by=PROMOTED), await invite(store, by=PROMOTED)
    kept = await invite(store, by=ADMIN)
    await people.redeem_invite(store, SECRET, used, NEWCOMER, T0, DEFAULT)
    held = await people.revoke(store, ADMIN, PROMOTED, T0, frozenset({ADMIN}), DEFAULT)
    assert held == {Role.ADMIN}
    with pytest.raises(InviteRefused) as refused:
        await people.redeem_invite(
            store, SECRET, unused, SECOND, T0 + timedelta(minutes=1), DEFAULT
        )
    assert refused.value.reason is Refusal.INVITE_WITHDRAWN
    assert await roles(store, SECOND) == frozenset()
    assert await people.redeem_invite(store, SECRET, kept, SECOND, T0, DEFAULT) is Role.APPROVER
    (withdrawal,) = [e for e in await trail(store) if e[1] == "withdraw_invites"]
    assert withdrawal[0] == f"user:{ADMIN}" and withdrawal[2]["user_id"] == PROMOTED
    assert len(withdrawal[2]["invite_ids"]) == 1  # the unused one; the used one stays used


async def test_a_configured_admin_keeps_their_invitations_when_their_roles_go(store):
    async with store.begin() as tx:
        await tx.grant(ADMIN, Role.ADMIN, "test", T0)  # also in MANZOORI_ADMIN_IDS
    code = await invite(store)
    await people.revoke_roles(store, ADMIN, Stamp("cli:root", T0), frozenset({ADMIN}), DEFAULT)
    assert await people.redeem_invite(store, SECRET, code, NEWCOMER, T0, DEFAULT) is Role.APPROVER


async def test_a_new_approver_is_owed_the_cards_of_requests_still_waiting(store):
    waiting = await opening.open_job(store, new_job(), make_draft("PO-2026-001"), T0, Rules())
    own = await opening.open_job(store, new_job(NEWCOMER), make_draft("PO-2026-002"), T0, Rules())
    rejected = await opening.open_job(store, new_job(), make_draft("PO-2026-003"), T0, Rules())
    review = Review("PO-2026-003", APPROVER_A, Verdict.REJECT, 1, rejected.draft_hash, "no")
    await decisions.decide(store, review, T0, Rules())
    await people.redeem_invite(store, SECRET, await invite(store), NEWCOMER, T0, DEFAULT)
    assert await cards_of(store, NEWCOMER) == {waiting.po_number}  # not their own, not decided
    assert own.requester_id == NEWCOMER
    # granted again (a second grant writes nothing): still the one card, owed once
    assert not await people.grant_role(
        store, NEWCOMER, Role.APPROVER, Stamp("cli:root", T0), DEFAULT
    )
    assert await cards_of(store, NEWCOMER) == {waiting.po_number}
    assert await people.grant_role(store, SECOND, Role.APPROVER, Stamp("cli:root", T0), DEFAULT)
    assert await cards_of(store, SECOND) == {waiting.po_number, own.po_number}


async def cards_of(store, user_id):
    async with store.begin() as tx:
        rows = await tx.conn.execute(
            text("SELECT key FROM notices WHERE kind = 'card' AND user_id = :u"), {"u": user_id}
        )
        return {key.split(":")[1] for key in rows.scalars()}


TWO_GROUPS = (
    '[groups]\nmanagers = "Managers"\nowners = "Owners"\n'
    '[[rules]]\nname = "chain"\nstages = [{ group = "managers" }, { group = "owners" }]\n'
)


async def test_an_approvers_invitation_to_a_group_joins_it(store):
    assert (await import_policy(store, TWO_GROUPS, T0, "cli:test")).created
    made = await people.create_invite(
        store, ADMIN, Role.APPROVER, T0, people.InviteKey(SECRET, os.urandom(9)),
        frozenset({ADMIN}), group="owners", default=DEFAULT,
    )  # fmt: skip
    assert (made.invite.role, made.group) == (Role.APPROVER, "owners")
    assert made.invite.expires_at == T0 + people.INVITE_TTL  # whole minutes, as the code says
    code = made.code
    assert await people.redeem_invite(store, SECRET, code, NEWCOMER, T0, DEFAULT) is Role.APPROVER
    plain = await invite(store)  # no group: the policy's first
    await people.redeem_invite(store, SECRET, plain, SECOND, T0, DEFAULT)
    async with store.reading() as tx:
        assert await tx.groups_of(NEWCOMER) == {"owners"}
        assert await tx.groups_of(SECOND) == {"managers"}
    with pytest.raises(GroupRefused, match=r"no group board in the approval policy in force"):
        await people.create_invite(
            store, ADMIN, Role.APPROVER, T0, people.InviteKey(SECRET, os.urandom(9)),
            frozenset({ADMIN}), group="board", default=DEFAULT,
        )  # fmt: skip
    with pytest.raises(GroupRefused, match="only an approver's invitation"):
        await people.create_invite(
            store, ADMIN, Role.REQUESTER, T0, people.InviteKey(SECRET, os.urandom(9)),
            frozenset({ADMIN}), group="owners", default=DEFAULT,
        )  # fmt: skip


async def test_set_groups_is_for_admins_approvers_and_known_groups_and_audited(store):
    assert (await import_policy(store, TWO_GROUPS, T0, "cli:test")).created
    stamp = Stamp(f"user:{ADMIN}", T0)
    admins = frozenset({ADMIN})
    change = await people.set_groups(
        store, APPROVER_A, ["owners", "managers"], stamp, DEFAULT, Acting(ADMIN, admins)
    )
    assert change.groups == {"owners", "managers"} and change.left == frozenset()
    change = await people.set_groups(store, APPROVER_A, ["owners"], stamp, DEFAULT)
    assert (change.groups, change.joined, change.left) == ({"owners"}, frozenset(), {"managers"})
    with pytest.raises(NotAnAdmin):
        await people.set_groups(
            store, APPROVER_A, ["owners"], stamp, DEFAULT, Acting(APPROVER_B, admins)
        )
    with pytest.raises(GroupRefused, match="not an approver"):
        await people.set_groups(store, REQUESTER, ["owners"], stamp, DEFAULT)
    with pytest.raises(GroupRefused, match="no group board"):
        await people.set_groups(store, APPROVER_A, ["board"], stamp, DEFAULT)
    events = [(action, detail) for _, action, detail in await trail(store)]
    assert [e for e in events if e[0] == "set_groups"] == [
        ("set_groups", {"user_id": APPROVER_A, "joined": ["managers", "owners"], "left": []}),
        ("set_groups", {"user_id": APPROVER_A, "joined": [], "left": ["managers"]}),
    ]
    await people.revoke_roles(store, APPROVER_A, stamp, admins, DEFAULT)
    async with store.reading() as tx:
        assert await tx.groups_of(APPROVER_A) == frozenset()  # gone with the role

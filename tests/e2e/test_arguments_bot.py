"""Every command's arguments, hostile ones included, through the real bot (issue 21): each
message gets one clear answer, never "Something went wrong", on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio

from core.approval.policies import Role
from tests.helpers.bot import ADMIN, all_handled, running_bot, said
from tests.helpers.factories import APPROVER_B, T0
from tests.helpers.routing import CHAIN, team

STRANGER = 6666
# More admins, so that the admin's commands are sent side by side (each waits for its answer).
DEPUTIES = (9101, 9102, 9103, 9104)
# What a person can type, by what a command expects there. The bot sends at most 30 messages
# a second (bot.telegram.app._paced), so each command gets the kinds that fit its argument.
TEXT = (
    "x" * 4000,  # about as long as a message may be
    "\x00",  # NUL: PostgreSQL's text refuses it
    "a\x01b",  # a control character
    "\u200f123",  # a right-to-left mark
)
IDS = (
    "99999999999999999999999",  # beyond 64 bits
    "9223372036854775808",  # one past BIGINT, the database's largest id
    "-1",
    "1e309",  # a float's infinity
    "0x10",
    "0",  # nobody's id
    "۱۲۳",  # Urdu digits
)
DATES = (
    "0000-00-00",
    "2026-02-30",
    "10000-01-01",
    "9999-12-31",  # the crash: the day after it overflowed
    "0001-01-01",
)
DURATIONS = ("0d", "-3d", "999999999999h", "99999999999d")
WORD, ID, PO, UNTIL = TEXT, TEXT + IDS, TEXT + IDS + DATES, TEXT + IDS + DATES + DURATIONS
USAGE = "Usage: "
NOT_A_PO = (USAGE, "No purchase order ")
ANY = ("",)
# Each command with an argument to fill, what to fill it with, and how its answer may begin
# (ANY: a command that takes no argument answers as it does without one).
ADMIN_COMMANDS = {
    "/start {}": (ID, ("This invitation link is not valid",)),
    "/help {}": (WORD, ANY),
    "/invite {}": (WORD, (USAGE,)),
    "/invite approver {}": (ID, ("No invitation made: no group '",)),
    "/users {}": (WORD, ANY),
    "/promote {}": (ID, (USAGE,)),
    "/revoke {}": (ID, (USAGE,)),
    "/groups {}": (WORD, ANY),
    "/group {} managers": (ID, (USAGE,)),
    "/group 2003 {}": (ID, ("Not changed: no group '",)),
    "/branch {} liberty": (ID, (USAGE,)),
    "/branch 1001 {}": (ID, ("Not changed: ",)),  # no company file: refused, never echoed whole
    "/away {} 2003": (UNTIL, ("Not set: ",)),
    "/away 2002 {} 2003": (UNTIL, ("Not set: ",)),
    "/away {} 3d 2003": (ID, (USAGE,)),
    "/away 2002 3d {}": (ID, (USAGE,)),
    "/back {}": (ID, (USAGE,)),
    "/status {}": (WORD, ANY),
    "/history {}": (PO, NOT_A_PO),
    "/export {}": (PO, NOT_A_PO),
    "/queue {}": (WORD, ANY),
    "/pending {}": (WORD, (USAGE,)),
    "/policy {}": (WORD, ANY),
    "/language {}": (WORD, ANY),
}
APPROVER_COMMANDS = {
    "/away {} 2003": (UNTIL, ("Not set: ",)),
    "/back {}": (ID, (USAGE,)),
    "/history {}": (PO, NOT_A_PO),
    "/pending {}": (WORD, (USAGE,)),
}
STRANGER_COMMANDS = {"/start {}": (ID, ("This invitation link is not valid",))}
Commands = dict[str, tuple[tuple[str, ...], tuple[str, ...]]]
# What an allowed echo of the 4000 characters may repeat of them.
ECHOED = "x" * 41


async def answered(botapi, user_id: int, commands: Commands) -> list[str]:
    """Send each command with each of its hostile arguments; what was wrong with the answers."""
    user, wrong = botapi.user(user_id), []
    for command, (arguments, starts) in commands.items():
        for argument in arguments:
            text = command.format(argument)
            user.send_text(text)
            answer = await said(user)
            if (
                not answer.startswith(starts)
                or "Something went wrong" in answer
                or ECHOED in answer
                or "\x00" in answer
            ):
                wrong.append(f"{text[:60]!r} -> {answer[:200]!r}")
    return wrong


def sent(commands: Commands) -> int:
    """How many messages `answered` sends for these commands."""
    return sum(len(arguments) for arguments, _starts in commands.values())


async def test_hostile_arguments_get_a_clear_answer_from_every_command(botapi, db_url, store):
    async with running_bot(botapi, db_url) as run:
        await team(botapi, run, CHAIN)
        async with run.store.begin() as tx:
            await tx.grant(ADMIN, Role.REQUESTER, "test", T0)
            for deputy in DEPUTIES:
                await tx.grant(deputy, Role.ADMIN, "test", T0)
                await tx.met(deputy, "Deputy", T0, started=True)
        admins = (ADMIN, *DEPUTIES)
        shares = [dict(list(ADMIN_COMMANDS.items())[i :: len(admins)]) for i in range(len(admins))]
        found = await asyncio.gather(
            *(answered(botapi, who, share) for who, share in zip(admins, shares, strict=True)),
            answered(botapi, APPROVER_B, APPROVER_COMMANDS),
            answered(botapi, STRANGER, STRANGER_COMMANDS),
        )
        await all_handled(botapi, run)
        assert [wrong for wrongs in found for wrong in wrongs] == []
        # One answer each, and nothing more: no apology after it either.
        everyone = {APPROVER_B: APPROVER_COMMANDS, STRANGER: STRANGER_COMMANDS}
        everyone |= dict(zip(admins, shares, strict=True))
        for who, commands in everyone.items():
            assert len(botapi.user(who).messages()) == sent(commands), who

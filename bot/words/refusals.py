"""Why an invitation, a group change, a branch or a delegation was refused, in the reader's
language: core's errors carry a reason and its values (core.errors.Refusal), and this says
them."""

from __future__ import annotations

from bot.words.i18n import ENGLISH, N_, Translator
from core.errors import Refusal, RefusedError

# One sentence per reason; the placeholders are the error's values.
REFUSAL_TEXTS: dict[Refusal, str] = {
    Refusal.INVITE_ROLE: N_("invitations are for approvers and requesters, not {role}s"),
    Refusal.GROUP_FOR_REQUESTER: N_("only an approver's invitation can name a group"),
    Refusal.INVITE_EXPIRED: N_("This invitation link has expired; ask an admin for a new one."),
    Refusal.INVITE_INVALID: N_("This invitation link is not valid; ask an admin for a new one."),
    Refusal.INVITE_USED: N_("This invitation link was already used; ask an admin for a new one."),
    Refusal.INVITE_WITHDRAWN: N_(
        "This invitation link was withdrawn: the admin who made it is no longer an admin. "
        "Ask an admin for a new one."
    ),
    Refusal.UNKNOWN_GROUPS: N_("no group {groups} in the approval policy in force ({known})"),
    Refusal.NOT_AN_APPROVER_YET: N_("user {user} is not an approver: grant the role first"),
    Refusal.NOT_A_REQUESTER_YET: N_("user {user} is not a requester: grant the role first"),
    Refusal.NO_COMPANY: N_("no company file is imported yet: an admin must import one first"),
    Refusal.UNKNOWN_BRANCH: N_("no branch {branch} in the company file in force ({known})"),
    Refusal.NOT_A_DATE: N_(
        "{text} is not a date (YYYY-MM-DD) or a duration like 3d or 12h: "
        "name a date from {first} to {last}, or a duration from 1h to {longest}"
    ),
    Refusal.HAS_PASSED: N_(
        "that time has passed: name a date from {first} to {last}, or a duration from 1h to "
        "{longest}"
    ),
    Refusal.TOO_LONG: N_(
        "a delegation lasts at most {days} days: name a date from {first} to {last}, or a "
        "duration from 1h to {longest}"
    ),
    Refusal.IN_THE_PAST: N_("that time has passed: name a later date or a duration"),
    Refusal.TO_ONESELF: N_("nobody delegates to themselves"),
    Refusal.AWAY_NOT_APPROVER: N_("user {user} (the one away) is not an approver"),
    Refusal.DELEGATE_NOT_APPROVER: N_("user {user} (the delegate) is not an approver"),
    Refusal.DELEGATION_BACK: N_(
        "user {delegate} has delegated to user {delegator}: no delegation back"
    ),
    Refusal.NOTHING_TO_END: N_("user {user} has no delegation to end"),
}


def refusal_text(refused: RefusedError, *, tr: Translator = ENGLISH) -> str:
    """Why the request was refused, as the person who made it reads it."""
    return tr(REFUSAL_TEXTS[refused.reason], **refused.values)

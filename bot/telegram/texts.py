"""What the bot says in Telegram: to people about their roles, to requesters about their POs,
to admins about what needs them. Plain text; the cards' HTML is in bot.telegram.cards.

Names come from Telegram profiles, which anyone can fill with line breaks and bidi controls:
each goes through core.texts.flatten where it enters a sentence, so it cannot forge a line."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, tzinfo
from typing import NamedTuple
from urllib.parse import quote

from bot.words.flags import day_text
from bot.words.i18n import ENGLISH, N_, Translator
from bot.words.texts import local_time
from core.approval.policies import DEFAULT_GROUP, Policy, Role
from core.approval.shortfalls import Shortfall
from core.drafting.drafts import Draft, LineDiff, mask_email
from core.drafting.money import format_pkr
from core.jobs.answers import Answer, Reply, SupplierStatus
from core.jobs.effects import EffectKind
from core.jobs.jobs import Job
from core.jobs.notices import (
    CALLED_OFF,
    COPY_MISSING,
    NOBODY_TO_ASK,
    NOTE_FAILED,
    SETTLED_BY_LINK,
    SETTLED_BY_RELAY,
    UNREACHABLE,
)
from core.jobs.states import State
from core.people.people import BranchChange, GroupChange, Invitation
from core.people.users import TelegramUser
from core.suppliers.replies import FiledMail
from core.texts import flatten

_ROLE_HELP = {
    Role.REQUESTER: [
        N_(
            "Send a restock sheet (CSV or Excel .xlsx, columns sku, quantity and optionally "
            "supplier_id, notes, ship_to, needed_by) and I draft one purchase order per "
            "supplier and branch."
        ),
        N_(
            "Or type the lines in a message, one SKU and quantity a line (CBL-USBC-1M 40): I "
            "show what I read, with Submit and Cancel."
        ),
        N_("/status: your recent purchase orders."),
        N_("/new: pick what you need from the catalogue, with a cart."),
    ],
    Role.APPROVER: [
        N_(
            "Approval cards come to this chat: tap Approve or Reject; 📄 Details sends the "
            "whole PO."
        ),
        N_(
            "/away UNTIL DELEGATE_ID: while you are away (until a date, 2026-12-24, or for 3d "
            "or 12h), another approver gets your cards and decides for you.  /back ends it."
        ),
        N_(
            "/pending: what waits for your decision, each with its card again.  /history PO-…: "
            "the trail of a request you were asked to decide. A message never approves: tap a "
            "button."
        ),
    ],
    Role.ADMIN: [
        N_("/invite approver [GROUP] or /invite requester: a single-use link (72 hours)."),
        N_("/users: everyone and their roles.  /revoke ID: take someone's roles away at once."),
        N_("/promote ID: make someone with a role an admin."),
        N_(
            "/groups: the approval policy's groups and who is in them.  "
            "/group ID GROUP…: set an approver's groups."
        ),
        N_("/branch ID BRANCH: the branch a requester orders for (/company lists them)."),
        N_("/queue: purchase orders that need a person.  /history PO-…: a PO's audit trail."),
        N_(
            "/cancel PO-… REASON: cancel a purchase order, after you confirm; once it was sent, "
            "the supplier is e-mailed the cancellation with your reason."
        ),
        N_("/pending all: every request waiting for a decision, and whom it waits for."),
        N_("/away ID UNTIL DELEGATE_ID, /back ID: set or end someone's delegation."),
        N_("/export PO-…: a PO's audit trail as a CSV file."),
        N_(
            "/policy: the approval policy in force; send a .toml policy file to check and "
            "import it."
        ),
        N_(
            "/company: the buyer's details and branches in force; send a company.toml file to "
            "check and import it."
        ),
    ],
}
# Every role's help ends with how to change the language (bot.telegram.language).
_LANGUAGE_HELP = N_("/language: English or اردو.")
# A role as a sentence names it.
_ROLE_NAMES = {
    Role.ADMIN: N_("admin"),
    Role.APPROVER: N_("approver"),
    Role.REQUESTER: N_("requester"),
}


def roles_text(roles: Iterable[Role], *, tr: Translator = ENGLISH) -> str:
    """ "approver and requester"."""
    names = [tr(_ROLE_NAMES[role]) for role in sorted(roles, key=lambda role: role.value)]
    if not names:
        return tr("no role")
    return tr(" and ").join(names)


def stranger(first_name: str, user_id: int) -> str:
    """The polite refusal for someone without a role: their id, so an admin can act."""
    return (
        f"Hello {flatten(first_name)}. This bot is for registered staff only, and you are "
        "not registered. "
        f"Your Telegram id is {user_id}: send it to your admin, who can invite you."
    )


def greeting(first_name: str, roles: frozenset[Role], *, tr: Translator = ENGLISH) -> str:
    """/start without a code, for someone registered."""
    return tr(
        "Hello {name}. You are registered as {roles}. /help shows what you can do.",
        name=flatten(first_name),
        roles=roles_text(roles, tr=tr),
    )


def help_text(roles: frozenset[Role], *, tr: Translator = ENGLISH) -> str:
    """What each of the sender's roles lets them do."""
    lines = [tr("You are registered as {roles}.", roles=roles_text(roles, tr=tr))]
    for role in (Role.REQUESTER, Role.APPROVER, Role.ADMIN):
        if role in roles:
            lines += map(tr, _ROLE_HELP[role])
    return "\n".join([*lines, tr(_LANGUAGE_HELP)])


def promoted(by: str, *, tr: Translator = ENGLISH) -> str:
    """What someone just made an admin is told."""
    return tr(
        "{name} made you an admin. You can invite people, manage roles and work the review "
        "queue; /help lists the commands.",
        name=flatten(by),
    )


def promotion(user_id: int, first_name: str, *, promoted: bool, tr: Translator = ENGLISH) -> str:
    """The reply to /promote ID for someone the bot has met."""
    name = flatten(first_name)
    if promoted:
        return tr(
            "User {id} ({name}) is now an admin. /revoke {id} takes it back.",
            id=user_id,
            name=name,
        )
    return tr("User {id} ({name}) is already an admin.", id=user_id, name=name)


def registered(role: Role, *, tr: Translator = ENGLISH) -> str:
    """After an invitation was redeemed."""
    return tr(
        "Welcome! You are now registered as {role}. /help shows what you can do.",
        role=tr(_ROLE_NAMES[role]),
    )


def invite_link(
    bot_username: str, made: Invitation, tz: tzinfo, *, tr: Translator = ENGLISH
) -> str:
    """The reply to /invite: the link to forward, and when it stops working."""
    link = f"https://t.me/{bot_username}?start={made.code}"
    until, group = local_time(made.invite.expires_at, tz), made.group
    role_name = tr(_ROLE_NAMES[made.invite.role])
    if group:
        lead = tr(
            "Forward this link to the new {role} of group {group}. It works once, until {until}:",
            role=role_name,
            group=group,
            until=until,
        )
    else:
        lead = tr(
            "Forward this link to the new {role}. It works once, until {until}:",
            role=role_name,
            until=until,
        )
    return f"{lead}\n{link}"


class Branches(NamedTuple):
    """/users' branches: each requester's that was set, and the company's default branch for
    the others (None: no company file yet, so no branch to show)."""

    chosen: Mapping[int, str]
    default: str | None


def people_list(
    rows: Iterable[tuple[TelegramUser | None, int, frozenset[Role]]],
    groups: Mapping[int, Iterable[str]] | None = None,
    away: Mapping[int, tuple[int, str]] | None = None,
    *,
    branches: Branches | None = None,
    tr: Translator = ENGLISH,
) -> str:
    """/users: one line per person: id, name, roles, an approver's groups, a requester's
    branch, who decides for them while they are away (delegate id, until when), and whether
    the bot can reach them."""
    lines = []
    for known, user_id, roles in rows:
        name = tr.ltr(flatten(known.first_name)) if known else tr("(never wrote to the bot)")
        line = f"{tr.ltr(str(user_id))}  {name}  {roles_text(roles, tr=tr)}"
        if Role.APPROVER in roles and groups is not None:
            held = ", ".join(sorted(groups.get(user_id, ()))) or DEFAULT_GROUP
            line += "  " + tr("groups: {groups}", groups=held)
        if Role.REQUESTER in roles and branches is not None:
            line += _branch_of(user_id, branches, tr=tr)
        if away and user_id in away:
            delegate, until = away[user_id]
            line += "  " + tr("away until {until}: {id} decides", until=until, id=delegate)
        reach = "" if known and known.reachable else "  " + tr("⚠️ cannot receive messages yet")
        lines.append(line + reach)
    return "\n".join(lines) if lines else tr("Nobody holds a role yet.")


def _branch_of(user_id: int, branches: Branches, *, tr: Translator) -> str:
    """A requester's branch as /users shows it, after two spaces; the default's, said so."""
    chosen = branches.chosen.get(user_id)
    if chosen is not None:
        return "  " + tr("branch: {branch}", branch=chosen)
    if branches.default is not None:
        return "  " + tr("branch: {branch} (the default)", branch=branches.default)
    return ""


# What a requester reads for each state of their PO.
_STATE_WORDS = {
    State.AWAITING_APPROVAL: N_("waiting for approval"),
    State.APPROVED: N_("approved, e-mail going out"),
    State.SENDING: N_("e-mail going out"),
    State.SENT: N_("sent to the supplier"),
    State.REJECTED: N_("rejected"),
    State.EXPIRED: N_("expired without a decision"),
    State.CANCELLED: N_("cancelled"),
    State.FAILED_RETRYABLE: N_("e-mail delayed; retrying"),
    State.FAILED_FINAL: N_("needs manual review"),
    State.UNKNOWN_OUTCOME: N_("needs manual review"),
    State.CANCELLING: N_("cancelled; the supplier is being told"),
    State.CANCEL_UNKNOWN: N_("cancelled; an admin is checking the supplier was told"),
    State.CANCEL_FAILED: N_("cancelled; an admin is telling the supplier"),
}


def state_words(state: State, *, tr: Translator = ENGLISH) -> str:
    """What a requester reads for a PO's state."""
    return tr(_STATE_WORDS[state]) if state in _STATE_WORDS else state.value


SUPPLIER_WORDS = {
    SupplierStatus.AWAITING: N_("awaiting the supplier's answer"),
    SupplierStatus.ACCEPTED: N_("the supplier accepted"),
    SupplierStatus.DECLINED: N_("the supplier declined"),
    SupplierStatus.CHANGES_PROPOSED: N_("the supplier proposes changes"),
    SupplierStatus.SUPERSEDED: N_("superseded by a later version"),
    SupplierStatus.CANCELLED: N_("the supplier was told it is cancelled"),
}


def supplier_line(
    status: SupplierStatus,
    since: datetime,
    answer: Answer | None,
    tz: tzinfo,
    *,
    tr: Translator = ENGLISH,
) -> str:
    """Where a sent PO stands with its supplier, as the Mini App shows it: the status, by when
    the supplier will deliver or why they declined, and since when."""
    said = tr(SUPPLIER_WORDS[status])
    if answer is not None and answer.delivery_date is not None:
        said += "; " + tr("delivery by {date}", date=day_text(answer.delivery_date))
    if answer is not None and answer.reason:
        said += ": " + flatten(answer.reason)
    return tr("📬 {status} ({at})", status=said, at=tr.ltr(local_time(since, tz)))


def status_list(
    jobs: Iterable[Job],
    tz: tzinfo,
    suppliers: Mapping[str, SupplierStatus] | None = None,
    *,
    tr: Translator = ENGLISH,
) -> str:
    """/status: a requester's recent POs, newest first; a sent one's with where it stands with
    its supplier (`suppliers`, by job id)."""
    suppliers = suppliers or {}
    lines = [
        f"{tr.ltr(job.po_number)}  {tr.ltr(format_pkr(job.total_paisa or 0))}  "
        f"{state_words(job.state, tr=tr)}  ({tr.ltr(local_time(job.updated_at, tz))})"
        + (f"; {tr(SUPPLIER_WORDS[suppliers[job.id]])}" if job.id in suppliers else "")
        for job in jobs
    ]
    return (
        tr("Your recent purchase orders:") + "\n" + "\n".join(lines)
        if lines
        else tr("You have no purchase orders yet. Send a restock sheet to start one.")
    )


def requester_notice(
    po_number: str, state: State, reason: str | None, *, tr: Translator = ENGLISH
) -> str:
    """What a requester is told when their PO moves on."""
    match state:
        case State.APPROVED:
            return tr("{po} was approved; the e-mail to the supplier goes out now.", po=po_number)
        case State.SENT:
            return tr("{po} was e-mailed to the supplier.", po=po_number)
        case State.REJECTED:
            return tr(
                "{po} was rejected: {reason}", po=po_number, reason=reason or tr("no reason given")
            )
        case State.EXPIRED:
            return tr(
                "{po} expired without a decision. Send the sheet again to ask again.",
                po=po_number,
            )
        case State.CANCELLED if reason:
            return tr("{po} was cancelled: {reason}", po=po_number, reason=reason)
        case State.CANCELLED:
            return tr("{po} was cancelled.", po=po_number)
        case _:
            return tr(
                "{po} needs a person to check it ({state}); an admin has it in the review queue.",
                po=po_number,
                state=state_words(state, tr=tr),
            )


def call_off_notice(
    po_number: str, event: str, reason: str | None, by: str, *, tr: Translator = ENGLISH
) -> str:
    """What a sent PO's requester and approvers are told when an admin (`by`) called it off
    for `reason` (`event` CALLED_OFF), and when the supplier has the cancellation."""
    if event == CALLED_OFF:
        return tr(
            "🚫 {po} was cancelled by {name} after it had been sent: {reason}. The supplier is "
            "being e-mailed the cancellation.",
            po=po_number,
            name=flatten(by) or tr("an admin"),
            reason=flatten(reason or "").rstrip(".") or tr("no reason given"),
        )
    return tr("🚫 {po} is cancelled: the supplier has the cancellation.", po=po_number)


# Attachments a reply's news names, at most; the rest are counted.
_FILES_SHOWN = 10
# What marks each line of a supplier's words in a message, so none can pass for one of ours.
QUOTE_MARK = "▏"


def supplier_mail_notice(
    filed: FiledMail, po_number: str, addressed: str, tz: tzinfo, *, tr: Translator = ENGLISH
) -> str:
    """What a PO's requester and approvers are told of an e-mail reply about it: who wrote,
    when, the subject, the new words (each line marked as the supplier's), the attachments by
    name and size; a message too large or malformed to read by its size and sender only. Never
    an approval, whatever it says."""
    mail = filed.mail
    sender = flatten(f"{mail.sender_name} <{mail.sender}>" if mail.sender_name else mail.sender)
    when = local_time(mail.date or filed.filed_at, tz)
    lines = [
        tr(
            "📧 {po}: an e-mail reply from {sender}, {when}",
            po=po_number,
            sender=sender or "?",
            when=when,
        )
    ]
    if not filed.on_file:
        lines.append(
            tr(
                "⚠️ From an address not on file: the PO went to {address}.",
                address=mask_email(addressed) if addressed else "?",
            )
        )
    if not mail.readable:
        lines.append(
            tr(
                "It is {size} and cannot be shown here (too large, or not a well-formed "
                "e-mail): read it in the buyer's mailbox.",
                size=size_text(mail.size),
            )
        )
        return "\n".join(lines)
    if mail.subject:
        lines.append(tr("Subject: {subject}", subject=flatten(mail.subject)))
    words = [f"{QUOTE_MARK} {flatten(line)}".rstrip() for line in mail.excerpt.splitlines()]
    lines += ["", *(words or [f"{QUOTE_MARK} " + tr("(no text)")])]
    if mail.attachments:
        shown = ", ".join(
            f"{flatten(a.name)} ({size_text(a.size)})" for a in mail.attachments[:_FILES_SHOWN]
        )
        more = len(mail.attachments) - _FILES_SHOWN
        if more > 0:
            shown += " " + tr.plural("and {count} more", "and {count} more", more)
        lines += ["", tr("Attachments (in the buyer's mailbox): {files}", files=shown)]
    return "\n".join(lines)


def size_text(size: int) -> str:
    """A size in bytes as a person reads it: 820 B, 120 KB, 7.2 MB."""
    if size < 1_000:
        return f"{size} B"
    if size < 1_000_000:
        return f"{size / 1_000:.0f} KB"
    return f"{size / 1_000_000:.1f} MB"


def supplier_notice(answer: Answer, draft: Draft, *, tr: Translator = ENGLISH) -> str:
    """What a sent PO's requester and approvers are told when its supplier answered from the
    link in the e-mail: accepted (by when), declined (why), or proposed changes (which)."""
    po, supplier = draft.po_number, flatten(draft.supplier_name)
    by = day_text(answer.delivery_date) if answer.delivery_date else ""
    if answer.reply is Reply.ACCEPT:
        if by:
            return tr(
                "✅ {supplier} accepted {po} and will deliver by {date}.",
                supplier=supplier,
                po=po,
                date=by,
            )
        return tr("✅ {supplier} accepted {po}.", supplier=supplier, po=po)
    if answer.reply is Reply.DECLINE:
        return tr(
            "❌ {supplier} declined {po}: {reason}.",
            supplier=supplier,
            po=po,
            reason=flatten(answer.reason).rstrip(".") or tr("no reason given"),
        )
    lines = [tr("✏️ {supplier} proposes changes to {po}:", supplier=supplier, po=po)]
    for proposal in answer.lines:
        line = draft.lines[proposal.line - 1]
        if proposal.quantity is not None and proposal.quantity != line.quantity:
            lines.append(
                tr(
                    "• {sku}: {before} → {after} pieces",
                    sku=line.sku,
                    before=f"{line.quantity:,}",
                    after=f"{proposal.quantity:,}",
                )
            )
        price = proposal.unit_price_paisa
        if price is not None and price != line.unit_price_paisa:
            lines.append(
                tr(
                    "• {sku}: {before} → {after} each",
                    sku=line.sku,
                    before=format_pkr(line.unit_price_paisa),
                    after=format_pkr(price),
                )
            )
    if by:
        lines.append(tr("• delivery by {date}", date=by))
    if answer.note:
        lines.append(tr("Their note: {note}", note=flatten(answer.note)))
    return "\n".join(lines)


WHATSAPP_TEXT = N_("💬 WhatsApp the supplier")


def silent_notice(
    draft: Draft, sent_at: datetime, phone: str, tz: tzinfo, *, tr: Translator = ENGLISH
) -> str:
    """What the requester and the admins are told when a PO's supplier has not answered the
    e-mail: which PO, whose, since when, and the phone to call them on, if the terms give one."""
    said = tr(
        "📵 {supplier} has not answered {po}, e-mailed {when}: no accept, decline or changes "
        "from the link in the e-mail, and the reminder went unanswered too.",
        supplier=flatten(draft.supplier_name),
        po=draft.po_number,
        when=tr.ltr(local_time(sent_at, tz)),
    )
    if phone:
        said += "\n" + tr("Phone: {phone}", phone=tr.ltr(f"+{phone}"))
    return said


def chase_message(draft: Draft, link: str) -> str:
    """The WhatsApp message the team sends a silent supplier, prepared: in English, as the
    e-mail is, with the link to answer from."""
    text = f"Assalam o Alaikum. Please confirm purchase order {draft.po_number} we e-mailed you."
    return text + (f" You can accept, decline or propose changes here: {link}" if link else "")


def whatsapp_url(phone: str, text: str) -> str:
    """A wa.me link that opens a chat with `phone` (international digits) holding `text`."""
    return f"https://wa.me/{phone}?text={quote(text, safe='')}"


def turned_down_notice(po_number: str, reason: str, *, tr: Translator = ENGLISH) -> str:
    """What a requester is told when the changes their PO's supplier proposed were turned down
    (or left undecided until they expired): the version the supplier has stands."""
    return tr(
        "✋ The changes the supplier proposed to {po} were turned down: {reason}. The order "
        "stands as sent; the supplier is being told.",
        po=po_number,
        reason=flatten(reason).rstrip(".") or tr("no reason given"),
    )


def edit_notice(
    po_number: str, editor: str, changes: Iterable[LineDiff], total_paisa: int,
    *, tr: Translator = ENGLISH,
) -> str:  # fmt: skip
    """What a requester is told when an approver changed their PO before approving it."""
    lines = [tr("{editor} changed {po} before approving it:", editor=flatten(editor), po=po_number)]
    for change in changes:
        before, after = f"{change.before:,}", f"{change.after:,}"
        number, sku = change.line, change.sku
        if change.after == 0:
            lines.append(tr("Line {line} ({sku}): {before} → dropped", line=number, sku=sku,
                            before=before))  # fmt: skip
        else:
            lines.append(tr("Line {line} ({sku}): {before} → {after}", line=number, sku=sku,
                            before=before, after=after))  # fmt: skip
    lines.append(tr("New total: {total}", total=format_pkr(total_paisa)))
    return "\n".join(lines)


def policy_alert(
    version: str, unstaffed: Iterable[tuple[str, str]], *, tr: Translator = ENGLISH
) -> str:
    """What the admins are told when a policy is in force with groups (name, title) nobody
    the bot can write to is in."""
    lines = [tr("⚠️ Policy {version} is in force.", version=flatten(version))]
    for name, title in unstaffed:
        lines.append(
            tr(
                "Nobody can approve for {title} yet: add someone with /group ID {group}.",
                title=flatten(title),
                group=flatten(name),
            )
        )
    return "\n".join(lines)


def short_stage_alert(
    po_number: str, short: Shortfall, stages: int, *, tr: Translator = ENGLISH
) -> str:
    """What the admins are told when a stage of a PO's route can no longer be completed: the
    PO, the stage, the approvals it needs against the people left, why, and what to do."""
    group = flatten(short.group)
    head = tr.plural(
        "⚠️ {po} cannot be approved as things stand: stage {stage} of {stages} needs {count} "
        "more approval from group {group}; people left who may give one: {eligible}.",
        "⚠️ {po} cannot be approved as things stand: stage {stage} of {stages} needs {count} "
        "more approvals from group {group}; people left who may give one: {eligible}.",
        short.needed,
        po=po_number, stage=short.stage + 1, stages=stages, group=group, eligible=short.eligible,
    )  # fmt: skip
    lines = [
        head,
        tr.plural(
            "Group {group} has {count} approver in it.",
            "Group {group} has {count} approvers in it.",
            short.members,
            group=group,
        ),
    ]
    if short.requester:
        lines.append(tr("The requester is one of them, and nobody approves their own request."))
    if short.counted:
        lines.append(tr.plural(
            "{count} of them approved it in another stage already, and a person counts once "
            "per request.",
            "{count} of them approved it in another stage already, and a person counts once "
            "per request.",
            short.counted,
        ))  # fmt: skip
    if short.joined:
        lines.append(tr.plural(
            "{count} of them acts for another of them while one is away, and the two count "
            "as one person.",
            "{count} of them act for others of them while they are away, and each two count "
            "as one person.",
            short.joined,
        ))  # fmt: skip
    if short.group == DEFAULT_GROUP:  # every approver is in it: another approver is the fix
        fix = tr("Invite another approver with /invite approver; until then it waits, and it "
                 "expires at its deadline.")  # fmt: skip
    else:
        fix = tr("Put another approver in it with /group ID {group}; until then it waits, and "
                 "it expires at its deadline.", group=group)  # fmt: skip
    return "\n".join([*lines, fix])


def admin_alert(
    po_number: str,
    event: str,
    approver: str | None,
    group: str | None = None,
    *,
    tr: Translator = ENGLISH,
) -> str:
    """What the admins are told: a PO needs them (`event`: the state it entered), an
    approver's card could not go out (`event`: UNREACHABLE or UNDELIVERED), or a PO waits for a
    group with nobody in it to ask (`event`: NOBODY_TO_ASK, `group`)."""
    if event == f"{NOTE_FAILED}:{EffectKind.REJECT_PROPOSAL.value}":
        return tr(
            "⚠️ The e-mail telling the supplier of {po} that its proposed changes were turned "
            "down may not have reached them, and will not be sent again. Please tell them: the "
            "version they have stands.",
            po=po_number,
        )
    if event.startswith(f"{NOTE_FAILED}:"):
        return tr(
            "⚠️ The reminder to the supplier of {po} may not have reached them, and will not "
            "be sent again. Please remind them another way.",
            po=po_number,
        )
    if event == SETTLED_BY_LINK:
        return tr(
            "✅ {po} left the review queue on its own: the supplier opened the link in its "
            "e-mail, so the e-mail arrived. It is settled as sent; nothing was sent again.",
            po=po_number,
        )
    if event == SETTLED_BY_RELAY:
        return tr(
            "✅ {po} left the review queue on its own: the mail relay's Sent folder holds a "
            "copy of its e-mail, so the e-mail left. It is settled as sent; nothing was sent "
            "again.",
            po=po_number,
        )
    if event == COPY_MISSING:
        return tr(
            "📭 {po}: its e-mail is still not in the mail relay's Sent folder, so it most "
            "likely did not leave. Nothing is sent without a person: send /queue and tap Send "
            "again, or ask the supplier first.",
            po=po_number,
        )
    if event == NOBODY_TO_ASK:
        if group in (None, DEFAULT_GROUP):
            return tr(
                "⚠️ {po} is waiting for approval, but no approver is registered. "
                "Invite one with /invite approver; its card goes out as soon as they join.",
                po=po_number,
            )
        return tr(
            "⚠️ {po} is waiting for group {group}, which has nobody in it who can approve it. "
            "Put an approver in it with /group ID {group}; its card goes out as soon as they "
            "are.",
            po=po_number,
            group=flatten(group or ""),
        )
    approver = None if approver is None else flatten(approver)
    if approver is not None and event == UNREACHABLE:
        return tr(
            "⚠️ {approver} could not be sent the approval card for {po}: they have not "
            "started the bot or have blocked it. Ask them to open the bot and press Start; "
            "the other approvers have their cards.",
            approver=approver,
            po=po_number,
        )
    if approver is not None:
        return tr(
            "⚠️ {approver} could not be sent the approval card for {po}: Telegram kept "
            "failing and the retries ran out. The other approvers have their cards; check the "
            "bot's connection to Telegram.",
            approver=approver,
            po=po_number,
        )
    why = {
        State.UNKNOWN_OUTCOME: N_("the e-mail may or may not have reached the supplier"),
        State.FAILED_FINAL: N_("it could not be sent"),
        State.CANCEL_UNKNOWN: N_(
            "its cancellation e-mail may or may not have reached the supplier"
        ),
        State.CANCEL_FAILED: N_(
            "its cancellation e-mail could not be sent: tell the supplier another way, by "
            "phone, then mark it settled"
        ),
    }.get(State(event))
    return tr(
        "⚠️ {po} needs you: {why}. /queue shows it with what you can do.",
        po=po_number,
        why=tr(why) if why else State(event).value,
    )


def groups_list(
    policy: Policy,
    members: Mapping[str, frozenset[int]],
    names: Mapping[int, str],
    *,
    tr: Translator = ENGLISH,
) -> str:
    """/groups: each group of the policy in force, with its members by name and id."""
    lines = []
    for group, title in policy.groups.items():
        people = sorted(members.get(group, frozenset()))
        who = ", ".join(tr.ltr(f"{flatten(names.get(p, str(p)))} ({p})") for p in people)
        everyone = " " + tr("(every approver)") if group == DEFAULT_GROUP else ""
        lines.append(
            f"{tr.ltr(group)}: {tr.ltr(flatten(title))}{everyone}: {who or tr('nobody yet')}"
        )
    return "\n".join(lines)


def group_change(user_id: int, change: GroupChange, *, tr: Translator = ENGLISH) -> str:
    """The reply to /group ID GROUP…."""
    now = ", ".join(sorted(change.groups)) or tr("approvers only")
    moved = [
        *(
            [tr("joined {groups}", groups=", ".join(sorted(change.joined)))]
            if change.joined
            else []
        ),
        *([tr("left {groups}", groups=", ".join(sorted(change.left)))] if change.left else []),
    ]
    text = tr("User {id} is in: {groups}.", id=user_id, groups=now)
    return text + (f" ({'; '.join(moved)})" if moved else "")


def branch_change(user_id: int, change: BranchChange, *, tr: Translator = ENGLISH) -> str:
    """The reply to /branch ID BRANCH."""
    return tr(
        "User {id} now orders for {name} ({branch}).",
        id=user_id,
        name=flatten(change.name),
        branch=change.branch,
    )


def away_set(
    delegator: str, delegate: str, until: str, *, mine: bool, tr: Translator = ENGLISH
) -> str:
    """/away's answer: who decides for whom, until when."""
    if mine:
        return tr(
            "You are away until {until}. {delegate} gets your approval cards, waiting and new, "
            "and decides for you. /back ends it sooner.",
            until=until,
            delegate=flatten(delegate),
        )
    return tr(
        "{delegator} is away until {until}. {delegate} gets their approval cards, waiting and "
        "new, and decides for them. /back ends it sooner.",
        delegator=flatten(delegator),
        until=until,
        delegate=flatten(delegate),
    )


def acting_for(delegator: str, until: str, *, tr: Translator = ENGLISH) -> str:
    """What a delegate is told when someone hands over to them."""
    return tr(
        "{delegator} is away until {until}: their approval cards come to you, marked "
        "for them, and your decision on them counts as theirs.",
        delegator=flatten(delegator),
        until=until,
    )


def back(delegator: str, delegate: str, *, tr: Translator = ENGLISH) -> str:
    """/back's answer."""
    return tr(
        "Delegation ended: {delegator} decides again, and gets the cards still "
        "waiting; {delegate}'s cards for them no longer decide.",
        delegator=flatten(delegator),
        delegate=flatten(delegate),
    )

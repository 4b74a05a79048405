"""Purchase orders in Telegram: a requester's sheet becomes POs, /status lists them, and an
admin's /history reads one PO's trail, which /export sends as a CSV file (core.records.audit)."""

from __future__ import annotations

import hashlib
from contextlib import AbstractAsyncContextManager, nullcontext
from functools import partial

from telegram import Document, Update
from telegram.ext import ContextTypes

from bot.clock import numbering, utcnow
from bot.telegram.catalogue import catalogue_markup
from bot.telegram.context import Deps, deps_of, held_roles, holding, reply, roles_of
from bot.telegram.language import speaking
from bot.telegram.texts import status_list, stranger
from bot.words import reports, texts
from bot.words.arguments import parse_po_number
from bot.words.i18n import N_
from core.approval.policies import Role
from core.drafting.sheets import too_big
from core.errors import UnreadableSheet
from core.messaging.pending import may_read_trail
from core.problems import Problem
from core.purchasing import submissions
from core.purchasing.submissions import Sheet, Submission
from core.records.audit import ExportFormat, Logged, export_row, render
from core.suppliers.pages import supplier_status

# A phone screen's worth; older POs are in `manzoori jobs list`.
STATUS_LIMIT = 10
# What a non-admin hears from /history and /export; an approver reads /history of a PO
# they were asked to decide.
NOT_AN_ADMIN = N_("Only admins can read the audit trail.")
NOT_ASKED = N_("You can read the history of requests you were asked to decide; {po} is not one.")
# A requester's second sheet while the first is still being downloaded, read or submitted:
# refused at once rather than queued, so one person's burst holds one sheet's memory.
SHEET_IN_FLIGHT = N_(
    "Your previous sheet is still being checked; send this one again after I answer it."
)
# A sheet of this many bytes or more (some 5,000 short rows), or of a size Telegram did not
# state, waits for the large sheets before it (Guards.large_sheets). Each large sheet keeps
# the event loop busy in pieces of tens of milliseconds (its download, its draft sealed and
# its lines written) and its checking thread holds the GIL between them: three at once (the
# files' pool) held a /status for up to a second. One at a time, a tap or /status waits for
# one piece at most, and the sheets take as long in all (the same work, under one GIL).
# A restock sheet of a few hundred rows never waits for them.
LARGE_SHEET = 64 * 1024


async def sheet(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    """A requester's CSV or XLSX: one PO per supplier, or every row problem, or the earlier POs;
    refused at once while the same person's previous sheet is still being checked."""
    deps, user = deps_of(context), update.effective_user
    assert user is not None
    with deps.guards.sheets.hold(user.id) as mine:
        if not mine:
            await reply(update, (await speaking(deps, user.id))(SHEET_IN_FLIGHT))
            return
        await _sheet(update, context)


async def _sheet(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    """One sheet: downloaded, read and submitted, with the reply saying how it went."""
    deps, user, message = deps_of(context), update.effective_user, update.effective_message
    assert user is not None and message is not None and message.document is not None
    roles, tr = await roles_of(deps, user.id), await speaking(deps, user.id)
    if Role.REQUESTER not in roles:
        refusal = tr("Only requesters can send restock sheets.") if roles else None
        await reply(update, refusal or stranger(user.first_name, user.id))
        return
    name = message.document.file_name or "sheet"
    async with _lane(deps, message.document):
        upload = await _read(deps, message.document, name)
        if isinstance(upload, Sheet):
            result = await _submit(deps, user.id, upload)
    if not isinstance(upload, Sheet):  # refused before a row was checked
        await reply(update, texts.refusal(texts.Refusing.SHEET, name, upload, tr=tr))
        return
    await reply(update, texts.submission(result, name, tr=tr))


def _lane(deps: Deps, document: Document) -> AbstractAsyncContextManager[object]:
    """Where a sheet waits its turn: a large one (or one of unknown size) for the large
    sheets before it, any other not at all."""
    size = document.file_size
    if size is None or size >= LARGE_SHEET:
        return deps.guards.large_sheets
    return nullcontext()


async def _read(
    deps: Deps, document: Document, name: str
) -> Sheet | UnreadableSheet | list[Problem]:
    """The document as a sheet, or why it is refused: too large (told before downloading it
    when Telegram gives its size), or unreadable (bot.files.sheets' sentence, or the worker's)."""
    too_large = too_big(document.file_size or 0)  # before downloading anything
    data = b"" if too_large else bytes(await (await document.get_file()).download_as_bytearray())
    too_large = too_large or too_big(len(data))
    if too_large:
        return [too_large]
    try:
        table = await deps.parser.sheet(data)
    except UnreadableSheet as refused:
        return refused
    return Sheet(name, hashlib.sha256(data).hexdigest(), table)


async def _submit(deps: Deps, requester_id: int, upload: Sheet) -> Submission:
    now, settings = utcnow(), deps.settings
    names = numbering(now, settings.tz)
    # Checking and pricing run in a thread, so other people's taps go on being answered.
    return await submissions.submit_sheet(
        deps.store, requester_id, upload, now, settings.rules(), names, offload=deps.offload
    )


async def status(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    """/status: the requester's ten most recent POs and where each stands."""
    allowed = await holding(
        update,
        context,
        Role.REQUESTER,
        N_("/status lists a requester's purchase orders; you are not one."),
    )
    if allowed is None:
        return
    deps, user = allowed
    async with deps.store.reading() as tx:
        jobs = await tx.jobs_of(user.id, STATUS_LIMIT)
        suppliers = {}
        for job in jobs:
            standing = await supplier_status(tx, job)
            if standing is not None:
                suppliers[job.id] = standing[0]
    tr = await speaking(deps, user.id)
    text = status_list(jobs, deps.settings.tz, suppliers, tr=tr)
    await reply(update, text, catalogue_markup(deps.settings, tr))


async def history(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    """/history PO-…: a PO's approvals, sends, comments and audit trail, for admins and for
    the approvers it asked (core.messaging.pending.may_read_trail), who are not shown send
    errors."""
    deps, user = deps_of(context), update.effective_user
    assert user is not None
    po, now = _po_arg(context), utcnow()
    async with deps.store.reading() as tx:
        roles = held_roles(deps, user.id, await tx.roles(user.id))
        admin = Role.ADMIN in roles
        job = await tx.job_by_po(po) if po and (admin or Role.APPROVER in roles) else None
        default = deps.settings.rules().approval.default_policy
        allowed = admin or (
            job is not None and await may_read_trail(tx, job, user.id, now, default)
        )
        detail = None
        if job is not None and allowed:
            detail = await reports.job_detail(tx, job, deps.settings.mail_domain)
    tr = await speaking(deps, user.id)
    if not admin and Role.APPROVER not in roles:
        await reply(update, tr(NOT_AN_ADMIN))
    elif not po:
        await reply(update, tr("Usage: {command}", command="/history PO-2026-0001"))
    elif job is None:
        await reply(update, tr("No purchase order {po}.", po=po))
    elif detail is None:
        await reply(update, tr(NOT_ASKED, po=po))
    else:
        await reply(update, reports.text(detail, deps.settings.tz, send_errors=admin, tr=tr))


async def export(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    """/export PO-…: a PO's whole audit trail as a CSV file, to the admin's own chat."""
    allowed = await holding(update, context, Role.ADMIN, NOT_AN_ADMIN)
    if allowed is None:
        return
    deps, user = allowed
    po, tr = _po_arg(context), await speaking(deps, user.id)
    if not po:
        await reply(update, tr("Usage: {command}", command="/export PO-2026-0001"))
        return
    async with deps.store.reading() as tx:
        job = await tx.job_by_po(po)
        trail = await tx.audit_logged(job.id) if job else []
    if job is None:
        await reply(update, tr("No purchase order {po}.", po=po))
        return
    text = await deps.offload(partial(_audit_csv, trail))  # off the loop, as Details is
    await context.bot.send_document(
        user.id,
        text.encode(),
        filename=f"{job.po_number}-audit.csv",
        caption=tr.plural(
            "{po}: {count} audit event", "{po}: {count} audit events", len(trail), po=job.po_number
        ),
    )


def _po_arg(context: ContextTypes.DEFAULT_TYPE) -> str:
    """The command's PO number argument, or "" if it is missing or cannot be a PO number
    (answered with the usage: nothing else is looked up)."""
    return parse_po_number((context.args or [""])[0]) or ""


def _audit_csv(trail: list[Logged]) -> str:
    return render([export_row(logged) for logged in trail], ExportFormat.CSV)

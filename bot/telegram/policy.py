"""The approval policy in Telegram, for admins: a policy file sent as a document (a `.toml`
file, or any file captioned /policy) is checked and put in force as `manzoori policy import`
does, and /policy says which policy is in force, as `manzoori policy show` does (without the
file, which may not fit a message)."""

from __future__ import annotations

from telegram import Update
from telegram.ext import ContextTypes, filters

from bot.clock import utcnow
from bot.telegram.context import Deps, holding, reply
from bot.telegram.language import speaking
from bot.words import texts
from bot.words.i18n import N_, Translator
from core.approval import approval_policy
from core.approval.policies import Role
from core.approval.standing import policy_now
from core.errors import UnreadablePolicy

ONLY_ADMINS = N_("Only admins can see or import the approval policy.")
# As with sheets (bot.telegram.orders): one file of a person's in flight, the next refused.
FILE_IN_FLIGHT = N_(
    "Your previous file is still being checked; send this one again after I answer it."
)
# A policy file, told apart from a restock sheet before the sheet handler sees it.
POLICY_FILE = filters.Document.FileExtension("toml") | (
    filters.Document.ALL & filters.CaptionRegex(r"^/policy(@\w+)?(\s|$)")
)


async def policy_command(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    """/policy: the approval policy in force, in words, and who imported it when."""
    allowed = await holding(update, context, Role.ADMIN, ONLY_ADMINS)
    if allowed is not None:
        deps, user = allowed
        tr = await speaking(deps, user.id)
        await reply(update, "\n".join(await _in_force(deps, tr)))


async def policy_file(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    """An admin's policy file: every problem with its line and nothing imported, or put in
    force (audited under the admin's id) and described; one file of a person's at a time."""
    allowed = await holding(update, context, Role.ADMIN, ONLY_ADMINS)
    if allowed is None:
        return
    deps, user = allowed
    tr = await speaking(deps, user.id)
    with deps.guards.sheets.hold(user.id) as mine:
        if not mine:
            await reply(update, tr(FILE_IN_FLIGHT))
            return
        await _import(update, deps, user.id, tr)


async def _import(update: Update, deps: Deps, admin_id: int, tr: Translator) -> None:
    """One policy file: downloaded unless too large, checked off the event loop, imported."""
    message = update.effective_message
    assert message is not None and message.document is not None
    document, name = message.document, message.document.file_name or "policy.toml"
    too_large = approval_policy.policy_too_big(document.file_size or 0)  # not fetched
    try:
        if too_large:
            raise UnreadablePolicy(too_large)
        data = bytes(await (await document.get_file()).download_as_bytearray())
        text = approval_policy.policy_text(data)
    except UnreadablePolicy as refused:  # too large, or not text
        await reply(update, texts.policy_problems([refused.problem], name, imported=True, tr=tr))
        return
    result = await approval_policy.import_policy(
        deps.store, text, utcnow(), f"user:{admin_id}", offload=deps.offload
    )
    lines = [texts.policy_import(result, name, tr=tr)]
    if result.version:
        lines += ["", *await _in_force(deps, tr)]
        warnings = texts.unreachable_warnings(result.unreachable, tr=tr)
        warnings += texts.thin_warnings(result.thin, tr=tr)
        lines += [f"⚠️ {warning}" for warning in warnings]
    await reply(update, "\n".join(lines))


async def _in_force(deps: Deps, tr: Translator) -> list[str]:
    """`policy show`'s description of the policy in force."""
    async with deps.store.reading() as tx:
        policy = await policy_now(tx, deps.settings.rules().approval.default_policy)
        record = await tx.policy_record(policy.version) if policy.version else None
    return texts.policy_described(policy, record, deps.settings.tz, tr=tr)

"""The approval policy in Telegram, for admins: a policy file sent as a document (a `.toml`
file, or any file captioned /policy: bot.telegram.admin_files) is checked and put in force as
`manzoori policy import` does, and /policy says which policy is in force, as `manzoori policy
show` does (without the file, which may not fit a message)."""

from __future__ import annotations

from telegram import Update
from telegram.ext import ContextTypes

from bot.telegram.admin_files import AdminFile, admin_file
from bot.telegram.context import Deps, holding, reply
from bot.telegram.language import speaking
from bot.words import texts
from bot.words.i18n import N_, Translator
from bot.words.policy_texts import policy_lines
from core.approval import approval_policy
from core.approval.policies import Role
from core.approval.standing import policy_now
from core.versions import FileKind

ONLY_ADMINS = N_("Only admins can see or import the approval policy.")


async def policy_command(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    """/policy: the approval policy in force, in words, and who imported it when."""
    allowed = await holding(update, context, Role.ADMIN, ONLY_ADMINS)
    if allowed is not None:
        deps, user = allowed
        tr = await speaking(deps, user.id)
        await reply(update, "\n".join(await _in_force(deps, tr)))


async def policy_file(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    """An admin's policy file: every problem with its line and nothing imported, or put in
    force (audited under the admin's id) and described, with what it warns of."""
    await admin_file(update, context, _POLICY_FILE)


def _warnings(result: approval_policy.PolicyImport, tr: Translator) -> list[str]:
    """Groups nobody can approve for, and stages asking more than their group has."""
    return texts.unreachable_warnings(result.unreachable, tr=tr) + texts.thin_warnings(
        result.thin, tr=tr
    )


async def _in_force(deps: Deps, tr: Translator) -> list[str]:
    """`policy show`'s description of the policy in force."""
    async with deps.store.reading() as tx:
        policy = await policy_now(tx, deps.settings.rules().approval.default_policy)
        record = await tx.file_record(FileKind.POLICY, policy.version) if policy.version else None
    return texts.described(policy_lines(policy, tr=tr), record, deps.settings.tz, tr=tr)


_POLICY_FILE = AdminFile(
    FileKind.POLICY, ONLY_ADMINS, approval_policy.import_policy, _in_force, _warnings
)

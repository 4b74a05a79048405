"""The buyer and its branches in Telegram, for admins: a company file sent as a document
(named company….toml, or any file captioned /company: bot.telegram.admin_files) is checked
and put in force as `manzoori company import` does, and /company says what is in force, as
`manzoori company show` does (without the file)."""

from __future__ import annotations

from telegram import Update
from telegram.ext import ContextTypes

from bot.telegram.admin_files import AdminFile, admin_file
from bot.telegram.context import Deps, holding, reply
from bot.telegram.language import speaking
from bot.words import texts
from bot.words.company_texts import company_lines
from bot.words.i18n import N_, Translator
from core.approval.policies import Role
from core.company import imports
from core.versions import FileKind

ONLY_ADMINS = N_("Only admins can see or import the buyer's details and branches.")
NONE_YET = N_(
    "No company file is imported yet: send one named company.toml (samples/company.toml in "
    "the repository is an example)."
)


async def company_command(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    """/company: the buyer and its branches in force, and who imported them when."""
    allowed = await holding(update, context, Role.ADMIN, ONLY_ADMINS)
    if allowed is not None:
        deps, user = allowed
        await reply(update, "\n".join(await _in_force(deps, await speaking(deps, user.id))))


async def company_file(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    """An admin's company file: every problem with its line and nothing imported, or put in
    force (under the admin's id) and described."""
    await admin_file(update, context, _COMPANY_FILE)


async def _in_force(deps: Deps, tr: Translator) -> list[str]:
    """`company show`'s description of the company in force, or that there is none."""
    async with deps.store.reading() as tx:
        company = await tx.current_company()
        if company is None:
            return [tr(NONE_YET)]
        record = await tx.file_record(FileKind.COMPANY, company.version)
    return texts.described(company_lines(company, tr=tr), record, deps.settings.tz, tr=tr)


_COMPANY_FILE = AdminFile(FileKind.COMPANY, ONLY_ADMINS, imports.import_company, _in_force)

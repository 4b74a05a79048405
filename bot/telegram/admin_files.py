"""An admin's TOML file sent to the bot as a document, an approval policy or the company:
refused before it is fetched if too large, then read as text, then checked and imported as the
`manzoori … import` commands do; one file of a person's at a time, as with sheets."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, Protocol, TypeVar

from telegram import Message, Update
from telegram.ext import ContextTypes, filters

from bot.clock import utcnow
from bot.telegram.context import Deps, holding, reply
from bot.telegram.language import speaking
from bot.words import texts
from bot.words.i18n import N_, Translator
from core.approval.policies import Role
from core.errors import UnreadableFile
from core.ports import Offload, Store
from core.toml_files import toml_text, too_big
from core.versions import FileKind

# As with sheets (bot.telegram.orders): one file of a person's in flight, the next refused.
FILE_IN_FLIGHT = N_(
    "Your previous file is still being checked; send this one again after I answer it."
)


class _NamedCompany(filters.MessageFilter):
    """A document named company….toml (any case)."""

    def filter(self, message: Message) -> bool:
        name = (message.document.file_name or "") if message.document else ""
        return name.lower().startswith("company") and name.lower().endswith(".toml")


# Told apart from a restock sheet, and from each other, before the sheet handler sees them:
# the company file by its name or a /company caption, any other .toml (or a /policy caption)
# is a policy file.
COMPANY_FILE = _NamedCompany() | (
    filters.Document.ALL & filters.CaptionRegex(r"^/company(@\w+)?(\s|$)")
)
POLICY_FILE = filters.Document.FileExtension("toml") | (
    filters.Document.ALL & filters.CaptionRegex(r"^/policy(@\w+)?(\s|$)")
)

R = TypeVar("R", bound=texts.Imported)
R_co = TypeVar("R_co", bound=texts.Imported, covariant=True)


class _Imports(Protocol[R_co]):
    """A core use case that imports an admin's file (import_policy, import_company)."""

    def __call__(
        self, store: Store, text: str, now: datetime, actor: str, *, offload: Offload = ...
    ) -> Awaitable[R_co]: ...


@dataclass(frozen=True)
class AdminFile(Generic[R]):
    """A kind of admin's file in Telegram: who may send it (`only_admins` to anyone else), its
    import (core: a store, the text, now, who, the offload), what is in force afterwards (the
    lines of /policy or /company), and what an import warns of."""

    kind: FileKind
    only_admins: str
    imports: _Imports[R]
    in_force: Callable[[Deps, Translator], Awaitable[list[str]]]
    warnings: Callable[[R, Translator], list[str]] = lambda result, tr: []


async def admin_file(
    update: Update, context: ContextTypes.DEFAULT_TYPE, sent: AdminFile[Any]
) -> None:
    """An admin's file: refused (too large, not text) with nothing imported, or checked off the
    event loop and imported under the admin's id; the reply says what came of it, and what is
    in force then."""
    kind = sent.kind
    allowed = await holding(update, context, Role.ADMIN, sent.only_admins)
    if allowed is None:
        return
    deps, user = allowed
    tr = await speaking(deps, user.id)
    with deps.guards.sheets.hold(user.id) as mine:
        if not mine:
            await reply(update, tr(FILE_IN_FLIGHT))
            return
        message = update.effective_message
        assert message is not None and message.document is not None
        document = message.document
        name = document.file_name or f"{kind.value}.toml"
        too_large = too_big(document.file_size or 0, kind.too_big)  # not fetched
        try:
            if too_large:
                raise UnreadableFile(too_large)
            data = bytes(await (await document.get_file()).download_as_bytearray())
            text = toml_text(data, kind.too_big)
        except UnreadableFile as refused:  # too large, or not text
            said = texts.file_problems(kind, [refused.problem], name, imported=True, tr=tr)
            await reply(update, said)
            return
        result = await sent.imports(
            deps.store, text, utcnow(), f"user:{user.id}", offload=deps.offload
        )
        lines = [texts.file_import(kind, result, name, tr=tr)]
        if result.version:
            lines += ["", *await sent.in_force(deps, tr)]
            lines += [f"⚠️ {warning}" for warning in sent.warnings(result, tr)]
        await reply(update, "\n".join(lines))

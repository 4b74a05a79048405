"""/language: each person chooses the language the bot writes to them in (bot.words.i18n), with
two buttons; the choice is theirs alone, kept with their telegram_users row.

A choice's callback data is plain (`lang:ur`): it is not a decision, and it only ever sets
the language of whoever tapped (`effective_user`, which Telegram signed), so a forged one can
change nobody else's."""

from __future__ import annotations

import re

from telegram import (
    InlineKeyboardButton,
    InlineKeyboardMarkup,
    MaybeInaccessibleMessage,
    Message,
    Update,
)
from telegram.ext import ContextTypes

from bot.clock import utcnow
from bot.telegram.context import Deps, answer_tap, deps_of
from bot.words.i18n import LANGUAGE_NAMES, Language, Translator, language_of, translator

# The buttons' callback data; app.claim lets it through without a signature.
CHOICE = re.compile(rf"^lang:({'|'.join(language.value for language in Language)})$")


def choices() -> InlineKeyboardMarkup:
    """One button per language, each in its own name."""
    return InlineKeyboardMarkup(
        [
            [
                InlineKeyboardButton(name, callback_data=f"lang:{language.value}")
                for language, name in LANGUAGE_NAMES.items()
            ]
        ]
    )


async def speaking(deps: Deps, user_id: int) -> Translator:
    """The translator of the language `user_id` chose (English if none)."""
    async with deps.store.reading() as tx:
        chosen = await tx.languages([user_id])
    return translator(language_of(chosen.get(user_id)))


async def language_command(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    """/language: the two buttons, asked in the sender's current language."""
    user = update.effective_user
    assert user is not None
    tr, message = await speaking(deps_of(context), user.id), update.effective_message
    if message is not None:
        await message.reply_text(
            tr("Choose the language I write to you in:"), reply_markup=choices()
        )


async def on_language(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    """A language button: keep the tapper's own choice, and say so in it."""
    query, user, deps = update.callback_query, update.effective_user, deps_of(context)
    assert query is not None and user is not None
    found = CHOICE.match(query.data or "")
    assert found is not None  # the handler's pattern
    language = Language(found.group(1))
    async with deps.store.begin() as tx:
        await tx.set_language(user.id, language.value, utcnow())
    tr = translator(language)
    done = tr("From now on I write to you in {language}.", language=LANGUAGE_NAMES[language])
    await answer_tap(query, done)
    if _offer(query.message):  # the /language message: it says the choice, without buttons
        assert query.message is not None
        await context.bot.edit_message_text(
            done, chat_id=user.id, message_id=query.message.message_id
        )


def _offer(message: MaybeInaccessibleMessage | None) -> bool:
    """Whether a tapped message is /language's offer (and not, with forged data, another)."""
    markup = message.reply_markup if isinstance(message, Message) else None
    data = (
        [button.callback_data for row in markup.inline_keyboard for button in row] if markup else []
    )
    return bool(data) and all(isinstance(d, str) and CHOICE.match(d) for d in data)

"""The catalogue in Telegram: /new opens the Mini App's catalogue page (bot/web/catalogue.py),
as do a button under a requester's /start and /status answers and the chat's menu button,
which is set for each requester when they start the bot or are granted the role."""

from __future__ import annotations

import logging

from telegram import (
    Bot,
    InlineKeyboardButton,
    InlineKeyboardMarkup,
    MenuButtonWebApp,
    Update,
    WebAppInfo,
)
from telegram.error import TelegramError
from telegram.ext import ContextTypes

from bot.config import Settings
from bot.telegram.context import holding, reply
from bot.telegram.language import speaking
from bot.web.urls import catalogue_url
from bot.words.i18n import N_, Translator
from core.approval.policies import Role

log = logging.getLogger(__name__)

OPEN_CATALOGUE = N_("🛒 Catalogue")
NEW_PROMPT = N_("Pick what you need from the catalogue; the bot answers here as for a sheet.")
NO_PUBLIC_URL = N_(
    "The catalogue needs the bot's web address, which is not set here: send a restock sheet."
)
NOT_A_REQUESTER = N_("/new is for requesters and admins; you are neither.")
# Who may order: requesters, and admins (core.purchasing.submissions.submit_sheet).
ORDERING = frozenset({Role.REQUESTER, Role.ADMIN})


def catalogue_markup(settings: Settings, tr: Translator) -> InlineKeyboardMarkup | None:
    """The button that opens the catalogue; None without a public URL to open."""
    if settings.manzoori_public_url is None:
        return None
    url = catalogue_url(settings.manzoori_public_url)
    return InlineKeyboardMarkup(
        [[InlineKeyboardButton(tr(OPEN_CATALOGUE), web_app=WebAppInfo(url))]]
    )


async def offer_menu_button(bot: Bot, settings: Settings, chat_id: int, tr: Translator) -> None:
    """Make the chat's menu button open the catalogue (best effort: /new does it too)."""
    if settings.manzoori_public_url is None:
        return
    url = catalogue_url(settings.manzoori_public_url)
    button = MenuButtonWebApp(tr(OPEN_CATALOGUE), WebAppInfo(url))
    try:
        await bot.set_chat_menu_button(chat_id, button)
    except TelegramError as error:
        log.info("menu button of chat %s not set: %s", chat_id, error)


async def new_command(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    """/new: the button that opens the catalogue, for a requester or an admin."""
    allowed = await holding(update, context, ORDERING, NOT_A_REQUESTER)
    if allowed is None:
        return
    deps, user = allowed
    tr = await speaking(deps, user.id)
    markup = catalogue_markup(deps.settings, tr)
    if markup is None:
        await reply(update, tr(NO_PUBLIC_URL))
        return
    await reply(update, tr(NEW_PROMPT), markup)
    await offer_menu_button(context.bot, deps.settings, user.id, tr)

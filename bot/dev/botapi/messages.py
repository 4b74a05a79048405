"""Chats and messages: sendMessage, the edits, deleteMessage, answerCallbackQuery."""

from __future__ import annotations

import copy
import dataclasses
import time
from typing import Any

from .core import EmulatorCore
from .errors import NOT_MODIFIED, QUERY_TOO_OLD, bad_request, forbidden
from .params import Params, int_or_none
from .snapshots import CallbackAnswer, StoredFile, Version
from .state import MessageRecord, UserRecord
from .text import (
    MAX_CAPTION_LENGTH,
    MAX_TEXT_LENGTH,
    EntityParseError,
    finish_text,
    parse_html,
    parse_markdown_v2,
    sorted_entities,
)
from .webapps import check_web_app

MAX_CALLBACK_DATA_BYTES = 64


class MessagesMixin(EmulatorCore):
    """The message methods of a private chat, and the message JSON of updates and answers."""

    # -- chats, messages ------------------------------------------------------------------------

    def _chat(self, p: Params) -> UserRecord:
        """The private chat that chat_id names; 400 if it is empty or unknown."""
        raw = p.values.get("chat_id")
        if raw is None or raw == "":
            raise bad_request("chat_id is empty")
        chat_id = int_or_none(raw)
        user = self._users.get(chat_id) if chat_id is not None else None
        if user is None:
            raise bad_request("chat not found")
        return user

    def _chat_for_sending(self, p: Params) -> UserRecord:
        """The private chat to write to, with Telegram's checks in Telegram's order."""
        user = self._chat(p)
        if user.blocked:
            raise forbidden("bot was blocked by the user")
        if not user.started:
            raise forbidden("bot can't initiate conversation with a user")
        return user

    def _formatted(
        self, p: Params, text_name: str, entities_name: str, *, caption: bool
    ) -> tuple[str | None, list[dict[str, Any]], str | None, str | None]:
        """Parse text or caption: (plain text, entities, raw text, parse mode)."""
        raw = p.text(text_name)
        if raw is None or raw == "":
            if caption:
                return None, [], None, None
            raise bad_request("message text is empty")
        parse_mode = p.text("parse_mode") or None
        explicit = p.json_value(entities_name, "can't parse entities JSON object")
        try:
            if explicit:
                text, entities = raw, _checked_entities(explicit)
            elif parse_mode is None:
                text, entities = raw, []
            elif parse_mode.lower() == "html":
                text, entities = parse_html(raw, strict_ampersand=self.strict_ampersand)
            elif parse_mode.lower() == "markdownv2":
                text, entities = parse_markdown_v2(raw)
            elif parse_mode.lower() == "markdown":
                raise bad_request("emulator: parse_mode Markdown is not emulated; use HTML")
            else:
                raise bad_request("unsupported parse_mode")
        except EntityParseError as exc:
            raise bad_request(f"can't parse entities: {exc}") from None
        try:
            limit = MAX_CAPTION_LENGTH if caption else MAX_TEXT_LENGTH
            text, entities = finish_text(text, entities, limit=limit, allow_empty=caption)
        except ValueError as exc:
            if str(exc) == "empty":
                raise bad_request("message text is empty") from None
            too_long = "message caption is too long" if caption else "message is too long"
            raise bad_request(too_long) from None
        return text or None, entities, raw, parse_mode

    def _reply_markup(self, p: Params, *, inline_only: bool = False) -> dict[str, Any] | None:
        markup = p.json_value("reply_markup", "can't parse reply keyboard markup JSON object")
        if markup is None:
            return None
        if not isinstance(markup, dict):
            raise bad_request("can't parse reply keyboard markup JSON object")
        if "inline_keyboard" in markup:
            rows = markup["inline_keyboard"]
            if not isinstance(rows, list):
                raise bad_request(
                    'field "inline_keyboard" of the InlineKeyboardMarkup must be an Array'
                )
            for row in rows:
                if not isinstance(row, list):
                    raise bad_request(
                        'field "inline_keyboard" of the InlineKeyboardMarkup must be an Array '
                        "of Arrays"
                    )
                for button in row:
                    _check_inline_button(button)
            cleaned = [row for row in rows if row]
            return {"inline_keyboard": copy.deepcopy(cleaned)} if cleaned else None
        if inline_only:
            raise bad_request("emulator: only an inline keyboard can be set on an edit")
        if any(k in markup for k in ("keyboard", "remove_keyboard", "force_reply")):
            return copy.deepcopy(markup)
        raise bad_request("can't parse reply keyboard markup JSON object")

    def _reply_target(self, p: Params, chat: UserRecord) -> int | None:
        reply = p.json_value("reply_parameters", "can't parse reply parameters JSON object")
        message_id = p.integer("reply_to_message_id")
        allow_missing = p.flag("allow_sending_without_reply")
        if isinstance(reply, dict):
            message_id = int_or_none(reply.get("message_id"))
            allow_missing = bool(reply.get("allow_sending_without_reply", False))
        if not message_id:
            return None
        target = self._messages[chat.id].get(message_id)
        if target is None or target.deleted:
            if allow_missing:
                return None
            raise bad_request("message to be replied not found")
        return message_id

    def _new_message(
        self,
        chat_id: int,
        *,
        from_bot: bool,
        version: Version,
        document: StoredFile | None = None,
        reply_to: int | None = None,
    ) -> MessageRecord:
        """A new message in a private chat: from the bot, or from the user of the chat."""
        message_id = self._next_message_id[chat_id]
        self._next_message_id[chat_id] += 1
        msg = MessageRecord(
            message_id,
            chat_id,
            from_bot,
            self.bot_id if from_bot else chat_id,
            int(version.at),
            [version],
            document,
            reply_to,
        )
        self._messages[chat_id][message_id] = msg
        return msg

    def _bot_sends(
        self,
        chat: UserRecord,
        version: Version,
        reply_to: int | None,
        document: StoredFile | None = None,
    ) -> dict[str, Any]:
        """A new message from the bot (sendMessage, sendDocument): the Message of the answer."""
        msg = self._new_message(
            chat.id, from_bot=True, version=version, document=document, reply_to=reply_to
        )
        return self._message_json(msg)

    def _message_json(self, msg: MessageRecord, *, with_reply: bool = True) -> dict[str, Any]:
        user = self._users[msg.chat_id]
        data: dict[str, Any] = {
            "message_id": msg.message_id,
            "from": self._bot_user_json() if msg.from_bot else user.user_json(),
            "chat": user.chat_json(),
            "date": msg.date,
        }
        if msg.edit_date is not None:
            data["edit_date"] = msg.edit_date
        if with_reply and msg.reply_to_message_id is not None:
            target = self._messages[msg.chat_id].get(msg.reply_to_message_id)
            if target is not None:
                data["reply_to_message"] = self._message_json(target, with_reply=False)
        version = msg.versions[-1]
        if version.text is not None:
            data["text"] = version.text
            if version.entities:
                data["entities"] = list(version.entities)
        if msg.document is not None:
            data["document"] = msg.document.document_json()
            if version.caption is not None:
                data["caption"] = version.caption
                if version.caption_entities:
                    data["caption_entities"] = list(version.caption_entities)
        markup = version.reply_markup
        if markup is not None and "inline_keyboard" in markup:
            # Telegram echoes only inline keyboards; reply keyboards are not part of the message.
            data["reply_markup"] = copy.deepcopy(markup)
        return data

    def _m_sendMessage(self, p: Params) -> dict[str, Any]:
        markup = self._reply_markup(p)
        text, entities, raw, parse_mode = self._formatted(p, "text", "entities", caption=False)
        chat = self._chat_for_sending(p)
        reply_to = self._reply_target(p, chat)
        version = Version(
            text, tuple(entities), None, (), raw, parse_mode, markup, self._wall(), "sendMessage"
        )
        return self._bot_sends(chat, version, reply_to)

    def _m_sendChatAction(self, p: Params) -> bool:
        self._chat_for_sending(p)
        if not p.text("action"):
            raise bad_request('parameter "action" is required')
        return True

    def _editable(self, p: Params) -> MessageRecord:
        if p.has("inline_message_id"):
            raise bad_request("emulator: inline messages are not emulated")
        user = self._chat(p)
        message_id = p.integer("message_id")
        if not message_id:
            raise bad_request("message identifier is not specified")
        if user.blocked:
            raise forbidden("bot was blocked by the user")
        msg = self._messages[user.id].get(message_id)
        if msg is None or msg.deleted:
            raise bad_request("message to edit not found")
        if not msg.from_bot:
            raise bad_request("message can't be edited")
        return msg

    def _apply_edit(self, msg: MessageRecord, version: Version) -> dict[str, Any]:
        old = msg.versions[-1]
        same = (
            old.text == version.text
            and old.entities == version.entities
            and old.caption == version.caption
            and old.caption_entities == version.caption_entities
            and _inline(old.reply_markup) == _inline(version.reply_markup)
        )
        if same:
            raise bad_request(NOT_MODIFIED.removeprefix("Bad Request: "))
        msg.versions.append(version)
        msg.edit_date = int(version.at)
        return self._message_json(msg)

    def _m_editMessageText(self, p: Params) -> dict[str, Any]:
        markup = self._reply_markup(p, inline_only=True)
        text, entities, raw, parse_mode = self._formatted(p, "text", "entities", caption=False)
        msg = self._editable(p)
        old = msg.versions[-1]
        if old.text is None:
            raise bad_request("there is no text in the message to edit")
        # Without reply_markup, an edit removes the inline keyboard: Telegram's rule.
        version = Version(
            text,
            tuple(entities),
            None,
            (),
            raw,
            parse_mode,
            markup,
            self._wall(),
            "editMessageText",
        )
        return self._apply_edit(msg, version)

    def _m_editMessageCaption(self, p: Params) -> dict[str, Any]:
        markup = self._reply_markup(p, inline_only=True)
        caption, entities, raw, parse_mode = self._formatted(
            p, "caption", "caption_entities", caption=True
        )
        msg = self._editable(p)
        old = msg.versions[-1]
        if msg.document is None:
            raise bad_request("there is no caption in the message to edit")
        version = dataclasses.replace(
            old,
            caption=caption,
            caption_entities=tuple(entities),
            raw=raw,
            parse_mode=parse_mode,
            reply_markup=markup,
            at=self._wall(),
            method="editMessageCaption",
        )
        return self._apply_edit(msg, version)

    def _m_editMessageReplyMarkup(self, p: Params) -> dict[str, Any]:
        markup = self._reply_markup(p, inline_only=True)
        msg = self._editable(p)
        old = msg.versions[-1]
        version = dataclasses.replace(
            old, reply_markup=markup, at=self._wall(), method="editMessageReplyMarkup"
        )
        return self._apply_edit(msg, version)

    def _m_deleteMessage(self, p: Params) -> bool:
        chat_id = int_or_none(p.values.get("chat_id"))
        if chat_id not in self._users:
            raise bad_request("chat not found")
        msg = self._messages[chat_id].get(p.integer("message_id") or 0)
        if msg is None or msg.deleted:
            raise bad_request("message to delete not found")
        msg.deleted = True
        return True

    # -- callback queries -----------------------------------------------------------------------

    def _m_answerCallbackQuery(self, p: Params) -> bool:
        query = self._queries.get(p.text("callback_query_id") or "")
        if query is None or query.answer is not None:
            raise bad_request(QUERY_TOO_OLD.removeprefix("Bad Request: "))
        age = self._now() - query.created
        if age > self.callback_query_timeout:
            raise bad_request(QUERY_TOO_OLD.removeprefix("Bad Request: "))
        query.answer = CallbackAnswer(
            query.query_id,
            p.text("text"),
            p.flag("show_alert"),
            p.text("url"),
            p.integer("cache_time") or 0,
            age,
            time.monotonic(),
        )
        return True


def _inline(markup: dict[str, Any] | None) -> dict[str, Any] | None:
    """The part of a markup that belongs to a message: only an inline keyboard does."""
    if markup is not None and "inline_keyboard" in markup:
        return markup
    return None


_BUTTON_ACTIONS = (
    "callback_data",
    "url",
    "login_url",
    "switch_inline_query",
    "switch_inline_query_current_chat",
    "switch_inline_query_chosen_chat",
    "callback_game",
    "pay",
    "web_app",
    "copy_text",
)


def _check_inline_button(button: Any) -> None:
    prefix = "can't parse inline keyboard button: "
    if not isinstance(button, dict):
        raise bad_request(prefix + "InlineKeyboardButton must be an Object")
    if not isinstance(button.get("text"), str):
        raise bad_request(prefix + 'Field "text" must be of type String')
    # An empty callback_data counts as none, as on Telegram.
    if not any(button.get(k) not in (None, "") for k in _BUTTON_ACTIONS):
        raise bad_request(prefix + "Text buttons are unallowed in the inline keyboard")
    data = button.get("callback_data")
    if data is not None and len(str(data).encode("utf-8")) > MAX_CALLBACK_DATA_BYTES:
        raise bad_request("BUTTON_DATA_INVALID")
    if button.get("web_app") is not None:  # private chats only: the emulator has no others
        check_web_app(button)


def _checked_entities(entities: Any) -> list[dict[str, Any]]:
    if not isinstance(entities, list):
        raise bad_request("can't parse entities JSON object")
    checked = []
    for entity in entities:
        if not isinstance(entity, dict) or not isinstance(entity.get("type"), str):
            raise bad_request("can't parse MessageEntity: expected an Object with a type")
        offset, length = int_or_none(entity.get("offset")), int_or_none(entity.get("length"))
        if offset is None or length is None or offset < 0 or length <= 0:
            raise bad_request("can't parse MessageEntity: offset and length must be numbers")
        checked.append(dict(entity, offset=offset, length=length))
    return sorted_entities(checked)

"""Users: the test side of a private chat."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from . import webapps
from .snapshots import Message, StoredFile, Version
from .state import MessageRecord, QueryRecord, UserRecord
from .text import bot_command_entities

if TYPE_CHECKING:
    from .emulator import Emulator


class EmulatedUser:
    """A Telegram user a test drives: sends messages and documents, taps buttons, blocks."""

    def __init__(self, emu: Emulator, user_id: int) -> None:
        self.emu = emu
        self.id = user_id
        self._seen = 0  # the highest bot message id next_message() has returned

    def __repr__(self) -> str:
        return f"EmulatedUser({self.id})"

    @property
    def _state(self) -> UserRecord:
        return self.emu._users[self.id]

    @property
    def started(self) -> bool:
        """True once the user opened the chat with the bot."""
        with self.emu._lock:
            return self._state.started

    @property
    def blocked(self) -> bool:
        """True while the user blocks the bot."""
        with self.emu._lock:
            return self._state.blocked

    def _send(
        self,
        *,
        text: str | None = None,
        document: StoredFile | None = None,
        caption: str | None = None,
        reply_to: int | None = None,
    ) -> Message:
        emu = self.emu
        with emu._lock:
            user = self._state
            if user.blocked:
                raise RuntimeError(f"user {self.id} blocked the bot: unblock() first")
            # Any message opens the chat; Telegram's clients only offer "Start" before that.
            user.started = True
            entities = tuple(bot_command_entities(text)) if text is not None else ()
            caption_entities = tuple(bot_command_entities(caption)) if caption else ()
            version = Version(
                text,
                entities,
                caption,
                caption_entities,
                text or caption,
                None,
                None,
                emu._wall(),
                "user",
            )
            msg = emu._new_message(
                self.id,
                from_bot=False,
                version=version,
                document=document,
                reply_to=reply_to,
            )
            msg.update_id = emu._add_update("message", emu._message_json(msg))
            return msg.snapshot()

    def send_text(self, text: str) -> Message:
        """Send a text message; "/start payload" (or any message) opens the chat with the bot."""
        if not text:
            raise ValueError("Telegram clients do not send empty messages")
        return self._send(text=text)

    def reply_to(self, message: Message | int, text: str) -> Message:
        """Send a text that replies to a message of this chat (ForceReply flows)."""
        with self.emu._lock:
            target = self._message(message)
            return self._send(text=text, reply_to=target.message_id)

    def send_document(
        self,
        data: bytes,
        filename: str,
        mime_type: str | None = None,
        *,
        caption: str | None = None,
    ) -> Message:
        """Send a file; getFile and the file URL serve its bytes to the bot."""
        if not data:
            raise ValueError("Telegram does not send empty files")
        with self.emu._lock:
            stored = self.emu._store_file(data, filename, mime_type, self.id)
            return self._send(document=stored, caption=caption)

    def _message(self, message: Message | int) -> MessageRecord:
        message_id = message if isinstance(message, int) else message.message_id
        msg = self.emu._messages[self.id].get(message_id)
        if msg is None or msg.deleted:
            raise LookupError(f"no message {message_id} in the chat with user {self.id}")
        return msg

    def tap(self, message: Message | int, button_text: str) -> str:
        """Tap the inline button with this text on the message's current keyboard: the query id."""
        with self.emu._lock:
            msg = self._message(message)
            button = msg.snapshot().button(button_text)
            if button.callback_data is None:
                raise LookupError(f"button {button_text!r} has no callback_data: {button.raw}")
            return self._callback(msg, button.callback_data)

    def open_web_app(self, message: Message | int, button_text: str, *, age: float = 0) -> str:
        """Open the Mini App of the web_app button with this text, as Telegram's client does:
        its URL with initData signed for this user `age` seconds ago in the fragment."""
        with self.emu._lock:
            button = self._message(message).snapshot().button(button_text)
            if button.web_app is None:
                raise LookupError(f"button {button_text!r} opens no Mini App: {button.raw}")
            return webapps.launch_url(button.web_app, self.web_app_data(age=age))

    def open_menu_app(self, *, age: float = 0) -> str:
        """Open the Mini App of this chat's menu button (setChatMenuButton), as the client
        does when the button beside the message field is tapped."""
        button = self.emu.menu_button(self.id)
        if button["type"] != "web_app":
            raise LookupError(f"the menu button of chat {self.id} opens no Mini App: {button}")
        return webapps.launch_url(button["web_app"]["url"], self.web_app_data(age=age))

    def web_app_data(self, *, age: float = 0, token: str | None = None) -> str:
        """The initData Telegram gives this user's Mini App, signed `age` seconds ago with the
        bot's token (or `token`: another bot's)."""
        with self.emu._lock:
            chat_instance = str(abs(hash((self.emu.bot_id, self.id))) % 10**18)
            return webapps.init_data(
                token or self.emu.token,
                self._state.user_json(),
                int(self.emu._wall() - age),
                chat_instance,
            )

    def tap_data(self, message: Message | int, data: str) -> str:
        """Send a callback query with arbitrary data from a bot message (forgery tests)."""
        with self.emu._lock:
            msg = self._message(message)
            if not msg.from_bot:
                raise LookupError("callback queries come only from the bot's messages")
            return self._callback(msg, data)

    def _callback(self, msg: MessageRecord, data: str) -> str:
        emu = self.emu
        query_id = str(uuid.uuid4().int >> 66)
        payload = {
            "id": query_id,
            "from": self._state.user_json(),
            "message": emu._message_json(msg),
            "chat_instance": str(abs(hash((emu.bot_id, self.id))) % 10**18),
            "data": data,
        }
        update_id = emu._add_update("callback_query", payload)
        emu._queries[query_id] = QueryRecord(
            query_id, self.id, self.id, msg.message_id, data, update_id, emu._now()
        )
        return query_id

    def block(self) -> None:
        """Block the bot: sending to this user now fails with 403 (a my_chat_member update)."""
        self._set_blocked(True)

    def unblock(self) -> None:
        """Unblock the bot (the user pressed "Restart"; a my_chat_member update)."""
        self._set_blocked(False)

    def _set_blocked(self, blocked: bool) -> None:
        emu = self.emu
        with emu._lock:
            user = self._state
            if user.blocked == blocked:
                return
            user.blocked = blocked
            old, new = ("member", "kicked") if blocked else ("kicked", "member")
            member = {"user": emu._bot_user_json()}
            emu._add_update(
                "my_chat_member",
                {
                    "chat": user.chat_json(),
                    "from": user.user_json(),
                    "date": int(emu._wall()),
                    "old_chat_member": {**member, "status": old}
                    | ({"until_date": 0} if old == "kicked" else {}),
                    "new_chat_member": {**member, "status": new}
                    | ({"until_date": 0} if new == "kicked" else {}),
                },
            )

    def messages(self) -> list[Message]:
        """The bot's messages in this chat, oldest first."""
        return self.emu.messages(self.id)

    def last_message(self) -> Message | None:
        """The bot's latest message in this chat."""
        return self.emu.last_message(self.id)

    async def next_message(self, timeout: float = 5.0) -> Message:
        """Await the bot's next message in this chat, after the last one this method returned."""

        def newer() -> Message | None:
            return next((m for m in self.messages() if m.message_id > self._seen), None)

        message = await self.emu.wait_for(newer, timeout)
        self._seen = message.message_id
        return message

    def skip_messages(self) -> None:
        """Make next_message() ignore the bot's messages so far."""
        sent = self.messages()
        if sent:
            self._seen = sent[-1].message_id

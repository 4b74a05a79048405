"""Internal mutable state. Everything here is touched only under Emulator._lock."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import ApiError
from .snapshots import CallbackAnswer, CallbackQuery, Message, StoredFile, Version


@dataclass
class UserRecord:
    id: int
    first_name: str
    last_name: str | None
    username: str | None
    language_code: str | None
    started: bool = False
    blocked: bool = False

    def user_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"id": self.id, "is_bot": False, "first_name": self.first_name}
        if self.last_name:
            data["last_name"] = self.last_name
        if self.username:
            data["username"] = self.username
        if self.language_code:
            data["language_code"] = self.language_code
        return data

    def chat_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"id": self.id, "type": "private", "first_name": self.first_name}
        if self.last_name:
            data["last_name"] = self.last_name
        if self.username:
            data["username"] = self.username
        return data


@dataclass
class MessageRecord:
    message_id: int
    chat_id: int
    from_bot: bool
    sender_id: int
    date: int
    versions: list[Version]
    document: StoredFile | None = None
    reply_to_message_id: int | None = None
    edit_date: int | None = None
    deleted: bool = False
    update_id: int | None = None

    def snapshot(self) -> Message:
        return Message(
            message_id=self.message_id,
            chat_id=self.chat_id,
            from_bot=self.from_bot,
            sender_id=self.sender_id,
            date=self.date,
            versions=tuple(self.versions),
            document=self.document,
            reply_to_message_id=self.reply_to_message_id,
            deleted=self.deleted,
            update_id=self.update_id,
        )


@dataclass
class PendingUpdate:
    update_id: int
    payload: dict[str, Any]
    sticky: bool = False  # a redelivered update: not confirmed away before it went out again


@dataclass
class Fault:
    method: str  # canonical name or "*"
    chat_id: int | None
    remaining: int
    error: ApiError | None  # None: answer normally after the delay
    delay: float
    applied: bool  # do the work, then answer with the error (the answer got lost)


@dataclass
class QueryRecord:
    query_id: str
    user_id: int
    chat_id: int
    message_id: int
    data: str
    update_id: int
    created: float
    answer: CallbackAnswer | None = None

    def snapshot(self) -> CallbackQuery:
        return CallbackQuery(
            self.query_id,
            self.user_id,
            self.chat_id,
            self.message_id,
            self.data,
            self.update_id,
            self.created,
            self.answer,
        )


@dataclass
class Poll:
    conflict: str | None = None
    closed: bool = False

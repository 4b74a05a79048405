"""What tests read: immutable snapshots of the emulator's state."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Button:
    """One inline keyboard button."""

    text: str
    callback_data: str | None = None
    url: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, compare=False)
    web_app: str | None = None  # a Mini App button's page URL


@dataclass(frozen=True)
class StoredFile:
    """A file someone uploaded: its bytes and what Telegram knows of it."""

    file_id: str
    file_unique_id: str
    data: bytes = field(repr=False)
    file_name: str | None
    mime_type: str | None
    file_path: str
    uploaded_by: int  # a user id, or the bot's id

    @property
    def file_size(self) -> int:
        """Size in bytes, as Telegram reports it."""
        return len(self.data)

    def document_json(self) -> dict[str, Any]:
        """The Document object of a message that carries this file."""
        doc: dict[str, Any] = {"file_id": self.file_id, "file_unique_id": self.file_unique_id}
        if self.file_name is not None:
            doc["file_name"] = self.file_name
        if self.mime_type is not None:
            doc["mime_type"] = self.mime_type
        doc["file_size"] = self.file_size
        return doc


@dataclass(frozen=True)
class Version:
    """A message's content at one time: as sent, then after each edit."""

    text: str | None
    entities: tuple[dict[str, Any], ...]
    caption: str | None
    caption_entities: tuple[dict[str, Any], ...]
    raw: str | None  # the text or caption exactly as the bot sent it, markup included
    parse_mode: str | None
    reply_markup: dict[str, Any] | None
    at: float  # the emulator's wall clock
    method: str


@dataclass(frozen=True)
class Message:
    """A message in a private chat, as it is now; `versions` keeps every earlier content."""

    message_id: int
    chat_id: int
    from_bot: bool
    sender_id: int
    date: int
    versions: tuple[Version, ...]
    document: StoredFile | None
    reply_to_message_id: int | None
    deleted: bool
    update_id: int | None  # for a user's message: the update that carried it

    @property
    def current(self) -> Version:
        """The latest version."""
        return self.versions[-1]

    @property
    def text(self) -> str | None:
        """Current text, entities parsed away."""
        return self.current.text

    @property
    def entities(self) -> tuple[dict[str, Any], ...]:
        """Current text entities."""
        return self.current.entities

    @property
    def caption(self) -> str | None:
        """Current caption, entities parsed away."""
        return self.current.caption

    @property
    def raw(self) -> str | None:
        """The current text or caption exactly as the bot sent it."""
        return self.current.raw

    @property
    def parse_mode(self) -> str | None:
        """The parse mode of the current version."""
        return self.current.parse_mode

    @property
    def reply_markup(self) -> dict[str, Any] | None:
        """The current reply markup (inline keyboard, ForceReply, ...)."""
        return self.current.reply_markup

    @property
    def edited(self) -> bool:
        """True once the bot changed the message."""
        return len(self.versions) > 1

    @property
    def buttons(self) -> list[list[Button]]:
        """The current inline keyboard, row by row (empty without one)."""
        markup = self.reply_markup or {}
        return [
            [
                Button(
                    b.get("text", ""),
                    b.get("callback_data"),
                    b.get("url"),
                    dict(b),
                    web_app=(b.get("web_app") or {}).get("url"),
                )
                for b in row
            ]
            for row in markup.get("inline_keyboard", [])
        ]

    @property
    def button_texts(self) -> list[str]:
        """Texts of the current inline buttons, row after row."""
        return [b.text for row in self.buttons for b in row]

    def button(self, text: str) -> Button:
        """The current inline button with this text; LookupError if there is none."""
        for row in self.buttons:
            for b in row:
                if b.text == text:
                    return b
        raise LookupError(f"no button {text!r} in message {self.message_id}: {self.button_texts}")


@dataclass(frozen=True)
class CallbackAnswer:
    """What the bot answered to a callback query."""

    query_id: str
    text: str | None
    show_alert: bool
    url: str | None
    cache_time: int
    age: float  # seconds between the tap and the answer, on the emulator's clock
    at: float  # when it was answered, time.monotonic() (for ordering against ApiCall.started)


@dataclass(frozen=True)
class CallbackQuery:
    """A tap on an inline button, and the bot's answer if any."""

    query_id: str
    user_id: int
    chat_id: int
    message_id: int
    data: str
    update_id: int
    created: float  # the emulator's monotonic clock
    answer: CallbackAnswer | None


@dataclass(frozen=True)
class ApiCall:
    """One HTTP request the bot made, with its outcome."""

    method: str  # canonical name ("sendMessage"), or the path's name if unknown
    params: dict[str, Any]
    files: dict[str, str]  # multipart part name -> file name
    started: float  # time.monotonic()
    finished: float | None
    status: int | None
    description: str | None  # of an error answer
    result: Any
    in_reply: bool = False  # carried in a webhook's answer, not a request of its own

    @property
    def ok(self) -> bool:
        """True for a 2xx answer."""
        return self.status is not None and 200 <= self.status < 300

    @property
    def duration(self) -> float | None:
        """Seconds the emulator took to answer (long polls included)."""
        return None if self.finished is None else self.finished - self.started

    @property
    def chat_id(self) -> int | None:
        """The chat_id parameter as an int, if any."""
        value = self.params.get("chat_id")
        try:
            return int(value) if value is not None else None
        except (TypeError, ValueError):
            return None


@dataclass(frozen=True)
class WebhookDelivery:
    """One POST of an update to the bot's webhook."""

    update_id: int
    status: int | None  # None when no HTTP answer came
    reason: str
    at: float  # time.monotonic()


@dataclass(frozen=True)
class WebhookResponse:
    """What the bot's webhook server answered to `post_to_webhook`."""

    status: int
    reason: str
    body: bytes
    headers: dict[str, str]


@dataclass(frozen=True)
class WebhookInfo:
    """The webhook as setWebhook left it."""

    url: str
    secret_token: str | None
    allowed_updates: tuple[str, ...] | None
    max_connections: int
    ip_address: str | None

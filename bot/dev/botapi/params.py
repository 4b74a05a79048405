"""What a request carries: its method's canonical name, its parameters; a described result."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .errors import bad_request


@dataclass
class Result:
    """A successful answer with Telegram's optional "description" beside the result."""

    value: Any
    description: str | None = None


class Params:
    """Request parameters from JSON, a form or multipart, typed as the Bot API reads them."""

    def __init__(
        self, values: dict[str, Any], files: dict[str, tuple[str, bytes, str]], typed: bool
    ) -> None:
        self.values = values
        self.files = files
        self.typed = typed  # True for a JSON body: values keep their JSON types

    def has(self, name: str) -> bool:
        value = self.values.get(name)
        return value is not None and value != ""

    def text(self, name: str) -> str | None:
        value = self.values.get(name)
        if value is None:
            return None
        if isinstance(value, str):
            return value
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, int | float):
            return str(value)
        return json.dumps(value)

    def integer(self, name: str) -> int | None:
        value = self.values.get(name)
        if value is None or value == "":
            return None
        if isinstance(value, bool):
            return int(value)
        if isinstance(value, int):
            return value
        try:
            return int(float(value)) if isinstance(value, float) else int(str(value).strip())
        except ValueError:
            raise bad_request(f'emulator: parameter "{name}" must be an integer') from None

    def number(self, name: str) -> float | None:
        value = self.values.get(name)
        if value is None or value == "":
            return None
        try:
            return float(value)
        except (TypeError, ValueError):
            raise bad_request(f'emulator: parameter "{name}" must be a number') from None

    def flag(self, name: str) -> bool:
        value = self.values.get(name)
        if isinstance(value, bool):
            return value
        if value is None:
            return False
        return str(value).strip().lower() in ("true", "1")

    def json_value(self, name: str, error: str) -> Any:
        value = self.values.get(name)
        if value is None or value == "":
            return None
        if isinstance(value, str):
            try:
                return json.loads(value)
            except ValueError:
                raise bad_request(error) from None
        return value

    def logged(self) -> dict[str, Any]:
        return dict(self.values)


def int_or_none(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    try:
        return int(str(value).strip())
    except (TypeError, ValueError):
        return None


def scope_key(scope: Any) -> str:
    if not scope:
        scope = {"type": "default"}
    return json.dumps(scope, sort_keys=True)


_METHODS = {
    name.lower(): name
    for name in (
        "getMe",
        "logOut",
        "close",
        "getUpdates",
        "setWebhook",
        "deleteWebhook",
        "getWebhookInfo",
        "sendMessage",
        "sendChatAction",
        "editMessageText",
        "editMessageCaption",
        "editMessageReplyMarkup",
        "deleteMessage",
        "answerCallbackQuery",
        "sendDocument",
        "getFile",
        "setMyCommands",
        "getMyCommands",
        "deleteMyCommands",
        "setChatMenuButton",
        "getChatMenuButton",
    )
}


def canonical_name(method: str) -> str | None:
    """The implemented method's canonical name; Bot API method names are case-insensitive."""
    return _METHODS.get(method.lower())

"""Error answers of the Bot API, with Telegram's own descriptions."""

from __future__ import annotations

import json
from typing import Any

GET_UPDATES_CONFLICT = (
    "Conflict: terminated by other getUpdates request; "
    "make sure that only one bot instance is running"
)
WEBHOOK_ACTIVE_CONFLICT = (
    "Conflict: can't use getUpdates method while webhook is active; "
    "use deleteWebhook to delete the webhook first"
)
NOT_MODIFIED = (
    "Bad Request: message is not modified: specified new message content and reply markup are "
    "exactly the same as a current content and reply markup of the message"
)
QUERY_TOO_OLD = "Bad Request: query is too old and response timeout expired or query ID is invalid"
# What nginx in front of the Bot API answers when the backend is down: HTML, not JSON.
_NGINX_PAGE = (
    "<html>\r\n<head><title>{code} {phrase}</title></head>\r\n<body>\r\n"
    "<center><h1>{code} {phrase}</h1></center>\r\n<hr><center>nginx/1.18.0</center>\r\n"
    "</body>\r\n</html>\r\n"
)
_PHRASES = {
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}


class ApiError(Exception):
    """An error answer of the Bot API: HTTP status, description and optional parameters."""

    def __init__(
        self,
        code: int,
        description: str,
        parameters: dict[str, Any] | None = None,
        *,
        body: str | None = None,
    ) -> None:
        super().__init__(description)
        self.code = code
        self.description = description
        self.parameters = parameters
        self.body = body  # a raw body instead of the JSON envelope (nginx's HTML page)

    def payload(self) -> tuple[int, bytes, str]:
        """Status, body and content type of the HTTP answer."""
        if self.body is not None:
            return self.code, self.body.encode(), "text/html"
        envelope: dict[str, Any] = {
            "ok": False,
            "error_code": self.code,
            "description": self.description,
        }
        if self.parameters:
            envelope["parameters"] = self.parameters
        return self.code, json.dumps(envelope).encode(), "application/json"


def bad_request(description: str) -> ApiError:
    """A 400 with Telegram's "Bad Request: " prefix."""
    return ApiError(400, f"Bad Request: {description}")


def forbidden(description: str) -> ApiError:
    """A 403 with Telegram's "Forbidden: " prefix."""
    return ApiError(403, f"Forbidden: {description}")


def too_many_requests(retry_after: int) -> ApiError:
    """A 429 as Telegram's flood control sends it."""
    return ApiError(
        429, f"Too Many Requests: retry after {retry_after}", {"retry_after": retry_after}
    )


def server_error(code: int, *, html: bool | None = None) -> ApiError:
    """A 5xx: JSON from the Bot API itself (500) or nginx's HTML page (502, 503, 504)."""
    phrase = _PHRASES.get(code, "Internal Server Error")
    if html is None:
        html = code != 500
    body = _NGINX_PAGE.format(code=code, phrase=phrase) if html else None
    return ApiError(code, phrase, body=body)

"""A POST's JSON body as the Mini App's API reads it: its bytes, within a limit (`read`), then
the one JSON object they hold (`json_object`), each refusal saying what is wrong.

Beside bot/web/miniapp.py rather than in it: the parsers that call `json_object`
(bot/web/decisions.py, bot/web/requests.py) are imported by miniapp.py, which would make a cycle.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from bot.web.security import NO_STORE
from core.nesting import MAX_DEPTH, Syntax, too_deep


async def read(request: Request, limit: int, what: str) -> bytes | Response:
    """The JSON body of a POST, or the answer refusing it: not JSON (415), or larger than
    `limit` bytes (413, answered before the rest is read)."""
    headers = {"Cache-Control": NO_STORE}
    if request.headers.get("Content-Type", "").split(";")[0].strip() != "application/json":
        return JSONResponse({"error": f"send the {what} as application/json"}, 415, headers)
    raw = bytearray()  # grown in place: a 5 MB cart is not copied once per chunk
    async for chunk in request.stream():  # a body past the limit is not read to its end
        raw += chunk
        if len(raw) > limit:
            return JSONResponse({"error": f"{what} too large"}, 413, headers)
    return bytes(raw)


def json_object(raw: bytes) -> dict[str, Any] | str:
    """The JSON object in a request body, or the sentence saying why there is none: not UTF-8,
    nested too deep, not JSON, or JSON but not an object."""
    try:
        text = raw.decode("utf-8")  # as the page sends it (RFC 8259: JSON exchanged is UTF-8)
    except UnicodeDecodeError:
        return "the body is not UTF-8"
    if too_deep(text, Syntax.JSON) is not None:  # before json, whose recursion it exhausts
        return f"the body nests deeper than {MAX_DEPTH}"
    try:
        body = json.loads(text)
    except ValueError:
        return "the body is not JSON"
    if not isinstance(body, dict):
        return "the body is not a JSON object"
    return body

"""HTTP handlers: the Bot API's envelope over tornado."""

from __future__ import annotations

import contextlib
import json
import time
from typing import TYPE_CHECKING, Any

import tornado.http1connection
import tornado.iostream
import tornado.web

from .errors import ApiError, bad_request
from .params import Params, Result, canonical_name
from .snapshots import ApiCall
from .state import Poll

if TYPE_CHECKING:
    from .emulator import Emulator


class ApiHandler(tornado.web.RequestHandler):
    """/bot{token}/{method}: parse the parameters, serve, answer with the envelope."""

    SUPPORTED_METHODS = ("GET", "POST")

    def initialize(self, emu: Emulator) -> None:
        self.emu = emu
        self.poll: Poll | None = None

    def check_xsrf_cookie(self) -> None:
        """No XSRF checks: this is an API."""

    def on_connection_close(self) -> None:
        # The client hung up (a cancelled long poll): stop waiting for it.
        if self.poll is not None:
            self.poll.closed = True
            self.emu._notify()

    async def get(self, token: str, method: str) -> None:
        await self._handle(token, method)

    async def post(self, token: str, method: str) -> None:
        await self._handle(token, method)

    def _params(self) -> Params:
        request = self.request
        content_type = request.headers.get("Content-Type", "").split(";")[0].strip().lower()
        values: dict[str, Any] = {
            k: v[-1].decode("utf-8", "replace") for k, v in request.query_arguments.items()
        }
        files: dict[str, tuple[str, bytes, str]] = {}
        typed = False
        if content_type == "application/json" and request.body:
            try:
                body = json.loads(request.body)
            except ValueError:
                raise bad_request("can't parse JSON object") from None
            if not isinstance(body, dict):
                raise bad_request("can't parse JSON object")
            values.update(body)
            typed = True
        else:
            values.update(
                {k: v[-1].decode("utf-8", "replace") for k, v in request.body_arguments.items()}
            )
            for name, parts in request.files.items():
                part = parts[-1]
                files[name] = (part["filename"], part["body"], part["content_type"])
        return Params(values, files, typed)

    async def _handle(self, token: str, method: str) -> None:
        emu = self.emu
        try:
            params = self._params()
        except ApiError as exc:
            self._answer(*exc.payload())
            return
        canonical = canonical_name(method) or method
        index = emu.record_call(
            ApiCall(
                canonical,
                params.logged(),
                {name: part[0] for name, part in params.files.items()},
                time.monotonic(),
                None,
                None,
                None,
                None,
            )
        )
        try:
            result = await emu.serve(token, method, params, self)
        except ApiError as exc:
            emu.finish_call(index, status=exc.code, description=exc.description)
            self._answer(*exc.payload())
            return
        except Exception as exc:
            # An emulator bug: the bot sees a 500, the fixture fails the test at teardown.
            emu.record_internal_error(f"{canonical}: {exc!r}")
            emu.finish_call(index, status=500, description=f"emulator bug: {exc!r}")
            self._answer(*ApiError(500, f"Internal Server Error: emulator bug: {exc!r}").payload())
            return
        envelope: dict[str, Any] = {"ok": True}
        if isinstance(result, Result):
            envelope["result"] = result.value
            if result.description:
                envelope["description"] = result.description
            result = result.value
        else:
            envelope["result"] = result
        emu.finish_call(index, status=200, result=result)
        if self.poll is not None and self.poll.closed:
            # The client hung up, or the emulator is stopping: drop the connection, as a dying
            # server does, rather than let tornado finish the request with an empty 200.
            connection = self.request.connection
            # HTTPServer serves HTTP/1.x only; tornado's own handlers assume the same.
            assert isinstance(connection, tornado.http1connection.HTTP1Connection)
            connection.close()
            return
        self._answer(200, json.dumps(envelope).encode(), "application/json")

    def _answer(self, status: int, body: bytes, content_type: str) -> None:
        if self.request.connection is None or self._finished:
            return
        self.set_status(status)
        self.set_header("Content-Type", content_type)
        with contextlib.suppress(tornado.iostream.StreamClosedError):
            self.finish(body)


class FileHandler(tornado.web.RequestHandler):
    """/file/bot{token}/{file_path}: the bytes of a stored file."""

    def initialize(self, emu: Emulator) -> None:
        self.emu = emu

    def get(self, token: str, file_path: str) -> None:
        index = self.emu.record_call(
            ApiCall(
                "(download)", {"file_path": file_path}, {}, time.monotonic(), None, None, None, None
            )
        )
        try:
            data = self.emu.download(token, file_path)
        except ApiError as exc:
            self.emu.finish_call(index, status=exc.code, description=exc.description)
            _finish_with(self, exc)
            return
        self.emu.finish_call(index, status=200, result=len(data))
        self.set_header("Content-Type", "application/octet-stream")
        self.finish(data)


class NotFoundHandler(tornado.web.RequestHandler):
    """Any other path: Telegram's 404."""

    def prepare(self) -> None:
        _finish_with(self, ApiError(404, "Not Found"))


def _finish_with(handler: tornado.web.RequestHandler, error: ApiError) -> None:
    """Answer a request with an error's status, body and content type."""
    status, body, content_type = error.payload()
    handler.set_status(status)
    handler.set_header("Content-Type", content_type)
    handler.finish(body)

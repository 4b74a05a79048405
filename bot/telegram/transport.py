"""The bot's HTTP client for the Bot API: python-telegram-bot's requests over aiohttp.

PTB's own transport (HTTPXRequest) spends 2.4 ms of CPU on a Bot API call made alone and
5.5 ms on each of a few hundred made at once, on the two-core machine the bench runs on;
aiohttp, 0.4 and 0.55 ms (its HTTP parser is compiled). In a burst of taps, where every tap's
answer is a call, httpx was half of the bot's CPU: the answers of a hundred taps cost more
than deciding them. PTB lets an application bring its own transport (BaseRequest); this one
sends what HTTPXRequest sends (form fields, or multipart with files), with the same default
timeouts and the same errors: TimedOut for a timeout, NetworkError for a connection that
failed, and "Pool timeout" when no connection was free, so the call was never sent.
"""

from __future__ import annotations

import asyncio

import aiohttp
from telegram._utils.defaultvalue import DefaultValue  # PTB's "not passed", as BaseRequest's
from telegram._utils.types import ODVInput, UploadFileDict
from telegram.error import NetworkError, TimedOut
from telegram.request import BaseRequest, RequestData

# PTB's defaults for its own transport (ApplicationBuilder), kept.
READ, WRITE, CONNECT, POOL, MEDIA_WRITE = 5.0, 5.0, 5.0, 1.0, 20.0
# "Not sent" when the pool had no free connection in time (PTB says the same of httpx's).
POOL_TIMEOUT = (
    "Pool timeout: All connections in the connection pool are occupied. Request was *not* "
    "sent to Telegram. Consider adjusting the connection pool size or the pool timeout."
)


class AiohttpRequest(BaseRequest):
    """A PTB transport on one aiohttp session with at most `pool_size` connections."""

    def __init__(self, pool_size: int = 256) -> None:
        self._pool_size = pool_size
        self._session: aiohttp.ClientSession | None = None
        # Connections in use or being opened: a request waits POOL seconds at most for one.
        self._free: asyncio.Semaphore | None = None

    @property
    def read_timeout(self) -> float | None:
        return READ

    async def initialize(self) -> None:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(limit=self._pool_size)
            self._session = aiohttp.ClientSession(
                connector=connector, headers={"User-Agent": self.USER_AGENT}
            )
            self._free = asyncio.Semaphore(self._pool_size)

    async def shutdown(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()

    async def do_request(
        self,
        url: str,
        method: str,
        request_data: RequestData | None = None,
        read_timeout: ODVInput[float] = BaseRequest.DEFAULT_NONE,
        write_timeout: ODVInput[float] = BaseRequest.DEFAULT_NONE,
        connect_timeout: ODVInput[float] = BaseRequest.DEFAULT_NONE,
        pool_timeout: ODVInput[float] = BaseRequest.DEFAULT_NONE,
    ) -> tuple[int, bytes]:
        session, free = self._session, self._free
        if session is None or session.closed or free is None:
            raise RuntimeError("This AiohttpRequest is not initialized!")
        files = request_data.multipart_data if request_data else None
        fields = request_data.json_parameters if request_data else None
        read = _given(read_timeout, READ)
        write = _given(write_timeout, MEDIA_WRITE if files else WRITE)
        connect = _given(connect_timeout, CONNECT)
        pool = _given(pool_timeout, POOL)
        try:
            async with asyncio.timeout(pool):
                await free.acquire()
        except TimeoutError:
            raise TimedOut(POOL_TIMEOUT) from None
        try:
            # aiohttp has no write timeout of its own: an upload is bounded as a whole, by its
            # write and read timeouts together.
            whole = None if not files or None in (write, read) else (write or 0) + (read or 0)
            timeout = aiohttp.ClientTimeout(total=whole, sock_connect=connect, sock_read=read)
            body = _body(fields, files)
            async with session.request(method, url, data=body, timeout=timeout) as response:
                return response.status, await response.read()
        except TimeoutError as error:
            raise TimedOut from error
        except aiohttp.ClientError as error:
            raise NetworkError(f"aiohttp.{type(error).__name__}: {error}") from error
        finally:
            free.release()


def _given(value: ODVInput[float], default: float) -> float | None:
    """A timeout the caller passed (None: none), or the default."""
    return default if isinstance(value, DefaultValue) else value


def _body(
    fields: dict[str, str] | None, files: UploadFileDict | None
) -> aiohttp.FormData | dict[str, str] | None:
    """Form fields, URL-encoded; with files, multipart (as HTTPXRequest sends them)."""
    if not files:
        return fields
    form = aiohttp.FormData()
    for name, value in (fields or {}).items():
        form.add_field(name, value)
    for name, (filename, content, content_type) in files.items():
        form.add_field(name, content, filename=filename, content_type=content_type)
    return form

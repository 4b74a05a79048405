"""The bot's Bot API transport (bot.telegram.transport) against a real HTTP server on loopback:
what it sends (form fields; multipart with files), what it gets, and the errors PTB expects
of a transport: NetworkError, TimedOut, and "not sent" when no connection was free."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from aiohttp import web
from telegram import InputFile
from telegram.error import NetworkError, TimedOut
from telegram.request import RequestData
from telegram.request._requestparameter import RequestParameter

from bot.telegram.transport import AiohttpRequest
from tests.helpers.net import free_port


@asynccontextmanager
async def serving(routes: web.RouteTableDef) -> AsyncIterator[str]:
    app = web.Application()
    app.add_routes(routes)
    runner = web.AppRunner(app)
    await runner.setup()
    port = free_port()
    site = web.TCPSite(runner, "127.0.0.1", port)
    await site.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


@asynccontextmanager
async def transport(pool_size: int = 8) -> AsyncIterator[AiohttpRequest]:
    request = AiohttpRequest(pool_size)
    await request.initialize()
    try:
        yield request
    finally:
        await request.shutdown()


def data(**parameters: object) -> RequestData:
    return RequestData([RequestParameter.from_input(k, v) for k, v in parameters.items()])


async def test_fields_go_as_a_form_and_the_answer_comes_back():
    seen = {}
    routes = web.RouteTableDef()

    @routes.post("/bot1/sendMessage")
    async def send(request: web.Request) -> web.Response:
        seen.update(await request.post())
        seen["agent"] = request.headers["User-Agent"]
        return web.json_response({"ok": True, "result": True})

    async with serving(routes) as url, transport() as http:
        status, body = await http.do_request(
            f"{url}/bot1/sendMessage", "POST", data(chat_id=7, text="سلام", reply_markup={"a": 1})
        )
    assert status == 200 and json.loads(body) == {"ok": True, "result": True}
    assert seen["chat_id"] == "7" and seen["text"] == "سلام"
    assert json.loads(seen["reply_markup"]) == {"a": 1}
    assert "python-telegram-bot" in seen["agent"]


async def test_a_file_goes_as_multipart_with_its_name_and_type():
    seen = {}
    routes = web.RouteTableDef()

    @routes.post("/bot1/sendDocument")
    async def send(request: web.Request) -> web.Response:
        form = await request.post()
        upload = form["document"]
        seen.update(chat=form["chat_id"], name=upload.filename, type=upload.content_type)
        seen["bytes"] = upload.file.read()
        return web.json_response({"ok": True, "result": True})

    pdf = b"%PDF-1.7 " + bytes(range(256)) * 40
    document = InputFile(pdf, filename="PO-2026-0001-v1.pdf")
    async with serving(routes) as url, transport() as http:
        status, _ = await http.do_request(
            f"{url}/bot1/sendDocument", "POST", data(chat_id=7, document=document)
        )
    assert status == 200
    assert seen == {
        "chat": "7", "name": "PO-2026-0001-v1.pdf", "type": "application/pdf", "bytes": pdf,
    }  # fmt: skip


async def test_a_file_is_fetched_with_get():
    routes = web.RouteTableDef()

    @routes.get("/file/bot1/sheet.csv")
    async def fetch(_request: web.Request) -> web.Response:
        return web.Response(body=b"sku,qty\nA-1,4\n")

    async with serving(routes) as url, transport() as http:
        assert await http.retrieve(f"{url}/file/bot1/sheet.csv") == b"sku,qty\nA-1,4\n"


async def test_nobody_listening_is_a_network_error():
    async with transport() as http:
        with pytest.raises(NetworkError) as raised:
            await http.do_request(f"http://127.0.0.1:{free_port()}/bot1/getMe", "POST")
    assert not isinstance(raised.value, TimedOut)


async def test_no_answer_in_time_is_timed_out():
    late = asyncio.Event()
    routes = web.RouteTableDef()

    @routes.post("/bot1/getMe")
    async def slow(_request: web.Request) -> web.Response:
        await late.wait()
        return web.json_response({"ok": True, "result": True})

    async with serving(routes) as url, transport() as http:
        with pytest.raises(TimedOut):
            await http.do_request(f"{url}/bot1/getMe", "POST", read_timeout=0.2)
        late.set()


async def test_no_free_connection_in_time_is_timed_out_and_never_sent():
    arrived = 0
    release = asyncio.Event()
    routes = web.RouteTableDef()

    @routes.post("/bot1/getMe")
    async def held(_request: web.Request) -> web.Response:
        nonlocal arrived
        arrived += 1
        await release.wait()
        return web.json_response({"ok": True, "result": True})

    async with serving(routes) as url, transport(pool_size=1) as http:
        first = asyncio.ensure_future(http.do_request(f"{url}/bot1/getMe", "POST"))
        while arrived == 0:
            await asyncio.sleep(0.01)
        with pytest.raises(TimedOut, match="not\\* sent"):
            await http.do_request(f"{url}/bot1/getMe", "POST", pool_timeout=0.1)
        release.set()
        assert (await first)[0] == 200
    assert arrived == 1  # the second call never reached the server


async def test_a_transport_not_initialized_refuses():
    with pytest.raises(RuntimeError, match="not initialized"):
        await AiohttpRequest().do_request("http://127.0.0.1:1/", "POST")

"""The ASGI application of the web front door and the uvicorn server that runs it in the
caller's event loop: the Telegram webhook (when WEBHOOK_URL is set), /healthz, /metrics, the
Mini App and the supplier's page, every answer with the security headers of bot/web/security.py."""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import socket
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import uvicorn
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.gzip import GZipMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Route

from bot.config import Settings
from bot.web.health import STALE_AFTER_POLLS, Heartbeats
from bot.web.metrics import Metrics
from bot.web.security import SecureAnswers
from bot.web.supplier import supplier_routes
from core.nesting import Syntax, too_deep
from store.sql import SqlStore

if TYPE_CHECKING:
    from telegram.ext import Application

log = logging.getLogger(__name__)

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"  # noqa: S105 - a header name
# Telegram's updates are a few kilobytes; a document's is its metadata, not the file.
MAX_UPDATE_BYTES = 1_000_000
PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8"
# Answers shorter than this go as they are: gzip's header would be most of the saving.
GZIP_FROM = 1_000


def build_web(
    settings: Settings,
    store: SqlStore,
    heartbeats: Heartbeats,
    metrics: Metrics,
    telegram: Application | None = None,  # type: ignore[type-arg]
) -> Starlette:
    """The front door's routes: /healthz, /metrics, the webhook at WEBHOOK_URL's path when
    both a URL and the bot are there, the Mini App (bot/web/miniapp.py) when there is a bot
    token to check its initData with, and always the supplier's page (bot/web/supplier.py)."""
    stale_after = STALE_AFTER_POLLS * settings.manzoori_poll_seconds

    async def healthz(request: Request) -> Response:
        runners = {name: round(age, 3) for name, age in heartbeats.ages().items()}
        body: dict[str, object] = {"status": "ok", "database": "ok", "runners": runners}
        reasons = []
        try:
            async with store.reading() as tx:
                await tx.row_counts()
        except Exception as error:  # any failure to answer is the reason, whatever its type
            body["database"] = f"unreachable: {type(error).__name__}"
            reasons.append(f"the database does not answer ({type(error).__name__})")
        for name, age in runners.items():
            if age > stale_after:
                reasons.append(f"the {name} runner's last pass was {age:.1f}s ago")
        if reasons:
            body.update(status="unhealthy", reason="; ".join(reasons))
            return JSONResponse(body, status_code=503)
        troubles = heartbeats.troubles()  # the bot and the outbox go on without these
        if troubles:
            body.update(troubles)
            body.update(status="degraded", reason="; ".join(troubles.values()))
        return JSONResponse(body)

    token = settings.manzoori_metrics_token

    async def metrics_text(request: Request) -> Response:
        if token is not None:
            given = request.headers.get("Authorization", "")
            expected = f"Bearer {token.get_secret_value()}"
            if not hmac.compare_digest(given.encode(), expected.encode()):
                return PlainTextResponse(
                    "Authorization: Bearer <MANZOORI_METRICS_TOKEN> required", 401
                )
        async with store.reading() as tx:
            metrics.record_rows(await tx.row_counts())
        return Response(metrics.text(), media_type=PROMETHEUS_TEXT)

    from bot.web.miniapp import miniapp_routes  # it reaches PTB's texts: only where served

    routes: list[BaseRoute] = [Route("/healthz", healthz), Route("/metrics", metrics_text)]
    if telegram is not None and settings.webhook_url is not None:
        routes.append(_webhook_route(settings, telegram, metrics))
    routes += miniapp_routes(settings, store, telegram)
    routes += supplier_routes(settings, store)
    secured = Middleware(SecureAnswers, script=settings.manzoori_webapp_script)
    # Pages, scripts and JSON gzipped for a browser that asks: over a slow mobile link the
    # bytes are the wait (a 200-line PO's page: 97 KB of HTML, 9 KB on the wire).
    squeezed = Middleware(GZipMiddleware, minimum_size=GZIP_FROM)
    return Starlette(routes=routes, middleware=[squeezed, secured])


def _webhook_route(
    settings: Settings,
    telegram: Application,  # type: ignore[type-arg]
    metrics: Metrics,
) -> Route:
    """POSTs from Telegram, carrying WEBHOOK_SECRET in SECRET_HEADER (403 otherwise), onto the
    bot's update queue; 200 once queued, as PTB's own webhook server answered, but a tap's
    answer, when it is ready within REPLY_WITHIN, as the response's Bot API call. Each post is
    counted by outcome: behind a load balancer, each front door's count shows its share."""
    from telegram import Update

    assert settings.webhook_url is not None and settings.webhook_secret is not None
    secret = settings.webhook_secret.get_secret_value().encode()
    counted = metrics.webhook_updates

    async def webhook(request: Request) -> Response:
        given = request.headers.get(SECRET_HEADER, "").encode()
        if not hmac.compare_digest(given, secret):
            counted.labels("refused").inc()
            return PlainTextResponse("wrong secret token", 403)
        raw = await request.body()
        if len(raw) > MAX_UPDATE_BYTES:
            counted.labels("unreadable").inc()
            return PlainTextResponse("update too large", 413)
        try:
            update = Update.de_json(_update_json(raw), telegram.bot)
        except Exception as error:  # PTB trips on a wrong shape in any way: AttributeError, …
            log.warning("webhook: an unreadable update (%s)", type(error).__name__)
            counted.labels("unreadable").inc()
            return PlainTextResponse("not a Telegram update", 400)
        counted.labels("queued").inc()
        if update.callback_query is None:
            await telegram.update_queue.put(update)
            return Response(status_code=200)
        # A tap: its answer rides in this response if it is ready in time (TapReplies).
        replies = telegram.bot_data["deps"].replies
        waiting = replies.expect(update.callback_query.id)
        await telegram.update_queue.put(update)
        call = await replies.answer_of(waiting)
        return Response(status_code=200) if call is None else JSONResponse(call)

    path = urlsplit(settings.webhook_url).path or "/"
    return Route(path, webhook, methods=["POST"])


def _update_json(raw: bytes) -> dict[str, Any]:
    """An update's JSON object; ValueError if it is none, or nests deeper than any does."""
    text = raw.decode("utf-8")
    if too_deep(text, Syntax.JSON) is not None:  # before json, whose recursion it exhausts
        raise ValueError("nested too deep")
    update = json.loads(text)
    if not isinstance(update, dict):
        raise ValueError("not a JSON object")
    return update


class _Server(uvicorn.Server):
    """uvicorn without its signal handlers: the caller (`manzoori run`) owns SIGINT/SIGTERM."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


@contextlib.asynccontextmanager
async def serving_web(app: Starlette, settings: Settings) -> AsyncIterator[None]:
    """`app` served on WEB_LISTEN:WEB_PORT until the block ends; a port that cannot be bound
    fails here, before the block."""
    config = uvicorn.Config(
        app,
        host=settings.web_listen,
        port=settings.web_port,
        lifespan="off",
        log_config=None,
        access_log=False,
    )
    server = _Server(config)
    host, port = settings.web_listen, settings.web_port
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:  # bound here: uvicorn would sys.exit on a port in use
        listener = socket.create_server((host, port), family=family)
    except OSError as error:
        raise OSError(f"the web front door could not listen on {host}:{port}: {error}") from error
    task = asyncio.create_task(server.serve(sockets=[listener]))
    try:
        while not server.started:
            if task.done():
                await task  # its error, if it failed; else it stopped before starting
                raise OSError(f"the web front door on {host}:{port} stopped at start-up")
            await asyncio.sleep(0.01)
    except BaseException:
        listener.close()
        raise
    log.info("web front door on http://%s:%d", settings.web_listen, settings.web_port)
    try:
        yield
    finally:
        server.should_exit = True
        await task

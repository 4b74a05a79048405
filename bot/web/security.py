"""What every answer of the web front door carries, and what it answers when a route fails.

The headers are put on by a middleware around the whole application, not by each route: an
answer a route never made (Starlette's own 404 and 405, or the 500 of an exception nobody
foresaw) carries them as well, and is `no-store` unless it says otherwise (the page and its
assets do). An unexpected exception is logged first, then answered as a JSON 500 that says
nothing of what failed; the page retries it as it retries any 5xx. The supplier's page puts on
its own (supplier_headers), which the middleware leaves as they are.
"""

from __future__ import annotations

import logging

from starlette.datastructures import MutableHeaders
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from bot.config import WebAppScript

log = logging.getLogger(__name__)

# Telegram Web shows a Mini App in a frame of its own pages.
_FRAMERS = "'self' https://web.telegram.org https://*.telegram.org"
# An answer that is not the page's data: never kept, by the browser or anything between.
NO_STORE = "no-store"
# The body of an unexpected failure: nothing about what failed, which is in the log.
INTERNAL_ERROR = {"error": "internal error: try again later"}


def _policy(scripts: str, forms: str) -> str:
    """The Content-Security-Policy, with where scripts may come from and forms may post."""
    return (
        f"default-src 'self'; script-src {scripts}; style-src 'self'; img-src 'self' data:; "
        f"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action {forms}; "
        f"frame-ancestors {_FRAMERS}"
    )


def security_headers(script: WebAppScript) -> dict[str, str]:
    """What every answer carries: the CSP, nosniff and no referrer."""
    scripts = "'self'" + (" https://telegram.org" if script is WebAppScript.TELEGRAM else "")
    return {
        "Content-Security-Policy": _policy(scripts, "'none'"),
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
    }


def supplier_headers() -> dict[str, str]:
    """What the supplier's page (bot/web/supplier.py) carries instead: no script at all, its
    own form the one place a form may post; never kept (an answer changes it) and never
    indexed, with no referrer (its URL is the supplier's credential)."""
    return {
        "Content-Security-Policy": _policy("'none'", "'self'"),
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "X-Robots-Tag": "noindex",
        "Cache-Control": NO_STORE,
    }


def default_headers(script: WebAppScript) -> dict[str, str]:
    """What an answer carries unless it says otherwise: the security headers, and no-store."""
    return {**security_headers(script), "Cache-Control": NO_STORE}


class SecureAnswers:
    """ASGI middleware: the default headers on every HTTP answer, and an exception raised
    before the answer started answered as a JSON 500 with them, after it is logged."""

    def __init__(self, app: ASGIApp, script: WebAppScript) -> None:
        self.app = app
        self.headers = default_headers(script)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on, adding the headers to its answer or answering its failure."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def secured(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                headers = MutableHeaders(scope=message)
                for name, value in self.headers.items():
                    headers.setdefault(name, value)
            await send(message)

        try:
            await self.app(scope, receive, secured)
        except Exception:  # whatever it was, the client learns only that it failed
            log.exception("web: %s %s failed", scope["method"], _route(scope["path"]))
            if started:  # half an answer is out: the server closes the connection
                raise
            await JSONResponse(INTERNAL_ERROR, 500)(scope, receive, secured)


def _route(path: str) -> str:
    """The path's first segment: with the traceback, enough to find the route, without a PO
    number or whatever secret a webhook's path may hold."""
    return "/" + path.strip("/").split("/")[0]

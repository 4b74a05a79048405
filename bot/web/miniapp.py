"""The Mini App's routes on the web front door: the page and its assets, and the two API calls
it makes, each authenticated by Telegram's initData (bot/web/initdata.py).

    GET  /app/po/{po}             the page: a static HTML shell, no data in it
    GET  /app/static/{v}/{name}   its scripts (common.js, the helpers both pages share, then
                                  the page's own) and style sheet; `v` is their content's
                                  hash, so they are cached for a year and a new release is a
                                  new URL
    GET  /api/po/{po}             the PO as the viewer sees it, in their language (views.py)
    POST /api/po/{po}/decision    approve, approve with changes, or reject (decisions.py)
    POST /api/po/{po}/pdf         the bot sends the PO's PDF to the viewer's chat, as Details
                                  does: what the supplier gets (marked DRAFT until approved)
    GET  /app/new                 the catalogue page: a requester's cart (issue 28)
    GET  /api/catalogue           what the terms offer, branches, budgets, recent POs
                                  (catalogue.py)
    POST /api/requests            a cart submitted as a sheet (requests.py); the bot answers
                                  in the requester's chat as for a sheet

Every API call carries `Authorization: tma <initData>`: there are no cookies, and no GET
changes anything. The user initData names is the only identity, with the roles the store and
MANZOORI_ADMIN_IDS give them, as for a tap. API answers are `no-store`; every answer carries
a strict Content-Security-Policy (no inline script; Telegram's script host only when the page
loads Telegram's script), `X-Content-Type-Options: nosniff` and `Referrer-Policy: no-referrer`,
put on by the front door's middleware (bot/web/security.py), which also answers a failure.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Awaitable, Callable
from contextlib import nullcontext
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from bot.clock import utcnow
from bot.config import Settings, WebAppScript
from bot.web import bodies, catalogue, decisions, initdata, requests, views, words
from bot.web.security import NO_STORE
from bot.web.urls import CATALOGUE_ROUTE, PAGE_ROUTE
from bot.words.i18n import Translator, language_of, translator
from core.approval.policies import Role
from core.drafting.sheets import MAX_SHEET_BYTES
from store.sql import SqlStore

if TYPE_CHECKING:
    from telegram.ext import Application

log = logging.getLogger(__name__)
T = TypeVar("T")

STATIC = Path(__file__).parent / "static"
TELEGRAM_SCRIPT = "https://telegram.org/js/telegram-web-app.js"
# The assets the page loads, by name, with their media types; nothing else is served.
_ASSETS = {
    "common.js": "text/javascript; charset=utf-8",  # both pages' helpers, before their script
    "miniapp.js": "text/javascript; charset=utf-8",
    "catalogue.js": "text/javascript; charset=utf-8",
    "miniapp.css": "text/css; charset=utf-8",
    "telegram-web-app.js": "text/javascript; charset=utf-8",
}
# A versioned asset never changes under its URL: a year, and no revalidation.
IMMUTABLE = "public, max-age=31536000, immutable"
# The shell is tiny and names the assets' versions: always asked again, so a release shows.
REVALIDATE = "no-cache"
# A decision is a few hundred bytes; a 200-line edit a few kilobytes.
MAX_BODY = 100_000
# A cart is a sheet by other means: no larger than a sheet may be (10,000 lines with notes).
MAX_CART_BODY = MAX_SHEET_BYTES


@cache
def assets() -> tuple[str, dict[str, bytes]]:
    """The assets' shared version (a hash of their contents) and their bytes."""
    contents = {name: (STATIC / name).read_bytes() for name in _ASSETS}
    digest = hashlib.sha256(b"".join(contents[name] for name in sorted(contents)))
    return digest.hexdigest()[:12], contents


@dataclass(frozen=True)
class Viewer:
    """Who an API call comes from: initData's user, their roles and their language."""

    user: initdata.WebAppUser
    roles: frozenset[Role]
    tr: Translator


class MiniApp:
    """The Mini App's handlers over the store, the settings and (beside the bot) the bot,
    which delivers at once what a decision owes."""

    def __init__(
        self,
        settings: Settings,
        store: SqlStore,
        telegram: Application | None,  # type: ignore[type-arg]
    ) -> None:
        assert settings.telegram_bot_token is not None  # routes() mounts nothing without it
        self.settings, self.store, self.telegram = settings, store, telegram
        self.token = settings.telegram_bot_token.get_secret_value()
        version, _ = assets()
        script = settings.manzoori_webapp_script
        telegram_src = (
            TELEGRAM_SCRIPT
            if script is WebAppScript.TELEGRAM
            else f"/app/static/{version}/telegram-web-app.js"
        )
        shell = (STATIC / "index.html").read_text(encoding="utf-8")
        self.shell, self.catalogue_shell = (
            shell.format(
                css=f"/app/static/{version}/miniapp.css",
                common=f"/app/static/{version}/common.js",
                js=f"/app/static/{version}/{script}",
                telegram=telegram_src,
            ).encode()
            for script in ("miniapp.js", "catalogue.js")
        )

    def routes(self) -> list[BaseRoute]:
        """The page, its assets and the API."""
        return [
            Route(PAGE_ROUTE, self.page, methods=["GET"]),
            Route("/app/static/{version}/{name}", self.asset, methods=["GET"]),
            Route("/api/po/{po}", self.authenticated(self.view), methods=["GET"]),
            Route("/api/po/{po}/decision", self.authenticated(self.decide), methods=["POST"]),
            Route("/api/po/{po}/pdf", self.authenticated(self.pdf), methods=["POST"]),
            Route(CATALOGUE_ROUTE, self.catalogue_page, methods=["GET"]),
            Route("/api/catalogue", self.authenticated(self.offers), methods=["GET"]),
            Route("/api/requests", self.authenticated(self.submit), methods=["POST"]),
        ]

    async def page(self, request: Request) -> Response:
        """The HTML shell; the page reads the PO number from its own path."""
        headers = {"Cache-Control": REVALIDATE}
        return Response(self.shell, media_type="text/html; charset=utf-8", headers=headers)

    async def catalogue_page(self, request: Request) -> Response:
        """The catalogue's HTML shell; everything in it comes from /api/catalogue."""
        headers = {"Cache-Control": REVALIDATE}
        shell = self.catalogue_shell
        return Response(shell, media_type="text/html; charset=utf-8", headers=headers)

    async def asset(self, request: Request) -> Response:
        """A versioned asset; any other version or name is not found."""
        version, contents = assets()
        name = request.path_params["name"]
        if request.path_params["version"] != version or name not in _ASSETS:
            return self.json({"error": "not found"}, 404)
        headers = {"Cache-Control": IMMUTABLE}
        return Response(contents[name], media_type=_ASSETS[name], headers=headers)

    def json(self, body: object, status: int = 200) -> JSONResponse:
        """An API answer: never stored by any cache."""
        return JSONResponse(body, status, headers={"Cache-Control": NO_STORE})

    def authenticated(
        self, handler: Callable[[Request, Viewer], Awaitable[Response]]
    ) -> Callable[[Request], Awaitable[Response]]:
        """`handler` for requests whose initData verifies and whose user holds a role; 401
        or 403 with the reason otherwise, before anything is read about a PO."""

        async def endpoint(request: Request) -> Response:
            try:
                raw = initdata.from_header(request.headers.get("Authorization"))
                user = initdata.verify(
                    raw,
                    self.token,
                    now=int(utcnow().timestamp()),
                    max_age=self.settings.manzoori_webapp_max_age_seconds,
                )
            except initdata.InitDataError as refused:
                log.info("mini app: initData refused (%s)", type(refused).__name__)
                return self.json({"error": str(refused)}, 401)
            async with self.store.reading() as tx:
                roles = await tx.roles(user.id)
                chosen = (await tx.languages([user.id])).get(user.id)
            if user.id in self.settings.manzoori_admin_ids:
                roles |= {Role.ADMIN}
            tr = translator(language_of(chosen))
            if not roles:
                return self.json({"error": tr(words.NOT_REGISTERED)}, 403)
            return await handler(request, Viewer(user, roles, tr))

        return endpoint

    async def view(self, request: Request, viewer: Viewer) -> Response:
        """The PO as this viewer may see it."""
        po, who = request.path_params["po"], (viewer.user.id, viewer.roles)
        status, body = await views.po_json(self.store, self.settings, po, who, viewer.tr)
        return self.json(body, status)

    async def decide(self, request: Request, viewer: Viewer) -> Response:
        """A decision from the page, recorded through the same use cases as a tap; the notices
        it owes are delivered at once."""
        raw = await bodies.read(request, MAX_BODY, "decision")
        if isinstance(raw, Response):
            return raw
        answer = await decisions.record(
            self.store, self.settings, request.path_params["po"], raw, viewer.user.id, viewer.tr
        )
        if answer.job_id is not None:
            self._deliver(answer.job_id)
        return self.json(answer.body, answer.status)

    async def pdf(self, request: Request, viewer: Viewer) -> Response:
        """The PO's PDF, sent by the bot to the viewer's chat: a phone's in-app browser cannot
        open a download that needs the page's credentials, a chat can keep and forward it."""
        app, tr = self.telegram, viewer.tr
        status, body, made = await views.pdf_copy(
            self.store, self.settings, request.path_params["po"], viewer.user.id, viewer.roles, tr
        )
        if made is None:
            return self.json(body, status)
        if app is None or not app.running:
            return self.json({"error": tr(words.NO_BOT)}, 503)
        name, pdf = made
        await app.bot.send_document(viewer.user.id, pdf, filename=name)
        return self.json(body, status)

    async def offers(self, request: Request, viewer: Viewer) -> Response:
        """What a requester may order, for the page to keep and search on the phone."""
        if not viewer.roles & {Role.REQUESTER, Role.ADMIN}:
            return self.json({"error": viewer.tr(words.NOT_A_REQUESTER)}, 403)
        body = await catalogue.catalogue_json(self.store, self.settings, viewer.user.id, viewer.tr)
        return self.json(body)

    async def submit(self, request: Request, viewer: Viewer) -> Response:
        """A cart, submitted as a sheet is; the chat is told as for a sheet (not again for a
        cart submitted before)."""
        tr = viewer.tr
        if not viewer.roles & {Role.REQUESTER, Role.ADMIN}:
            return self.json({"status": "refused", "message": tr(words.NOT_A_REQUESTER)}, 403)
        raw = await bodies.read(request, MAX_CART_BODY, "cart")
        if isinstance(raw, Response):
            return raw
        try:
            cart = requests.parse(raw)
        except requests.BadCart as bad:
            return self.json({"status": "invalid", "message": str(bad)}, 400)
        app = self.telegram
        deps = app.bot_data.get("deps") if app is not None else None
        offload = deps.offload if deps is not None else _to_thread
        guard = deps.guards.sheets.hold(viewer.user.id) if deps is not None else nullcontext(True)
        with guard as mine:  # one sheet or cart of a person's at a time, as for sheets
            if not mine:
                return self.json({"status": "busy", "message": tr(words.IN_FLIGHT)}, 429)
            answer = await requests.submit(
                self.store,
                self.settings,
                viewer.user.id,
                cart,
                tr,
                offload,
                admin=Role.ADMIN in viewer.roles,
            )
        if answer.chat is not None:
            self._tell(viewer.user.id, answer.chat)
        return self.json(answer.body, answer.status)

    def _tell(self, user_id: int, text: str) -> None:
        """Send `text` to the user's chat beside the answer, as the bot answers a sheet."""
        app = self.telegram
        if app is None or not app.running:
            return
        from bot.telegram.context import chunks

        async def tell() -> None:
            try:
                for piece in chunks(text):
                    await app.bot.send_message(user_id, piece)
            except Exception:  # the POs stand, and the page showed them
                log.exception("the answer to a catalogue request was not sent to its chat")

        app.create_task(tell(), name=f"deliver-request-{user_id}")

    def _deliver(self, job_id: str) -> None:
        """Deliver the job's owed notices now, beside the answer (a tap's deliver_now); the
        notice runner's next pass has whatever this misses, and all of it without a bot."""
        app = self.telegram
        if app is None or not app.running:
            return
        from bot.telegram.notices import NoticeRunner

        async def deliver() -> None:
            try:
                await NoticeRunner(self.store, app.bot, self.settings).run_once(job_id)
            except Exception:  # the decision stands; the background pass retries the notices
                log.exception("notices of job %s left to the background pass", job_id)

        app.create_task(deliver(), name=f"deliver-{job_id}")  # awaited when the bot stops


async def _to_thread(work: Callable[[], T], /) -> T:
    """CPU work off the event loop, where no bot lends its worker thread."""
    return await asyncio.to_thread(work)


def miniapp_routes(
    settings: Settings,
    store: SqlStore,
    telegram: Application | None = None,  # type: ignore[type-arg]
) -> list[BaseRoute]:
    """The Mini App's routes, when there is a bot token to verify initData with."""
    if settings.telegram_bot_token is None:
        return []
    return MiniApp(settings, store, telegram).routes()

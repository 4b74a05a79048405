"""Webhooks: setWebhook and its kin, the sender that POSTs queued updates, and the test side."""

from __future__ import annotations

import asyncio
import json
import re
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import tornado.httpclient

from .core import EmulatorCore
from .errors import bad_request
from .params import Params, Result
from .snapshots import WebhookDelivery, WebhookInfo, WebhookResponse
from .state import PendingUpdate

_DEFAULT = object()


class WebhookMixin(EmulatorCore):
    """The webhook methods and deliveries; `post_to_webhook` for tests."""

    # -- webhook test side ----------------------------------------------------------------------

    async def post_to_webhook(
        self,
        update: dict[str, Any] | int,
        *,
        secret_token: str | object | None = _DEFAULT,
        content_type: str = "application/json",
        url: str | None = None,
    ) -> WebhookResponse:
        """POST one update to the webhook outside the queue and return the bot server's answer.

        `update` is an update's JSON or an update_id. `secret_token` defaults to the one set with
        setWebhook; pass None to send no header, or another string to send a wrong one. A Bot
        API call in a 2xx answer is executed, as Telegram does.
        """
        with self._lock:
            hook = self._webhook
            body = self._updates[update] if isinstance(update, int) else update
            target = url or (hook.url if hook else None)
            if target is None:
                raise RuntimeError("no webhook is set; pass url=")
            secret = (
                (hook.secret_token if hook else None) if secret_token is _DEFAULT else secret_token
            )
        headers = {"Content-Type": content_type}
        if secret is not None:
            headers["X-Telegram-Bot-Api-Secret-Token"] = str(secret)
        assert self._loop is not None
        future = asyncio.run_coroutine_threadsafe(
            self._posted(target, json.dumps(body).encode(), headers), self._loop
        )
        return await asyncio.wrap_future(future)

    async def _posted(self, url: str, body: bytes, headers: dict[str, str]) -> WebhookResponse:
        """POST an update as Telegram does: the call a 2xx answer carries is executed."""
        answer = await self._http_post(url, body, headers)
        if 200 <= answer.status < 300:
            await self._execute_reply(answer)
        return answer

    async def _http_post(self, url: str, body: bytes, headers: dict[str, str]) -> WebhookResponse:
        client = tornado.httpclient.AsyncHTTPClient(force_instance=True)
        try:
            response = await client.fetch(
                url,
                method="POST",
                body=body,
                headers=headers,
                raise_error=False,
                request_timeout=self.webhook_timeout,
                ca_certs=self.webhook_ca,
            )
        finally:
            client.close()
        if response.code == 599:  # tornado's code for "no HTTP answer"
            raise ConnectionError(f"webhook {url}: {response.error}")
        return WebhookResponse(
            response.code, response.reason, response.body or b"", dict(response.headers)
        )

    async def _webhook_sender(self) -> None:
        """Send pending updates to the webhook as Telegram does: oldest first, up to the
        webhook's max_connections at once but one at a time per chat (so a chat's updates
        arrive in order), a failed one again after webhook_retry_delay; the Bot API call a
        response carries is executed (_execute_reply)."""
        flying: dict[int, asyncio.Task[None]] = {}
        while True:
            with self._lock:
                hook = self._webhook
                if hook is None:
                    self._webhook_task = None
                    return
                for pending in _startable(self._pending, flying, hook.max_connections):
                    self._handed_out.setdefault(pending.update_id, time.monotonic())
                    flying[pending.update_id] = asyncio.ensure_future(self._deliver(pending, hook))
                event = self._updates_event
            assert event is not None
            woken = asyncio.ensure_future(event.wait())
            await asyncio.wait([woken, *flying.values()], timeout=1.0,
                               return_when=asyncio.FIRST_COMPLETED)  # fmt: skip
            woken.cancel()
            for update_id in [u for u, task in flying.items() if task.done()]:
                flying.pop(update_id).result()  # an emulator bug surfaces here

    async def _deliver(self, pending: PendingUpdate, hook: WebhookInfo) -> None:
        """POST one update; on a 2xx it is delivered and its reply's call executed, otherwise
        it is retried after webhook_retry_delay (its chat's later updates wait meanwhile)."""
        headers = {"Content-Type": "application/json"}
        if hook.secret_token:
            headers["X-Telegram-Bot-Api-Secret-Token"] = hook.secret_token
        status: int | None
        try:
            answer = await self._posted(hook.url, json.dumps(pending.payload).encode(), headers)
            status, reason = answer.status, f"{answer.status} {answer.reason}"
        except ConnectionError as exc:
            status, reason = None, str(exc)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # e.g. a URL tornado cannot use: report it like Telegram
            status, reason = None, repr(exc)
        delivered = status is not None and 200 <= status < 300
        with self._lock:
            self._webhook_deliveries.append(
                WebhookDelivery(pending.update_id, status, reason, time.monotonic())
            )
            if delivered:
                self._pending = [p for p in self._pending if p is not pending]
                return
            self._webhook_last_error = (
                int(self._wall()),
                f"Wrong response from the webhook: {reason}" if status is not None else reason,
            )
        await asyncio.sleep(self.webhook_retry_delay)

    if TYPE_CHECKING:  # the Emulator's (it serves the call)

        async def _execute_reply(self, answer: WebhookResponse) -> None: ...

    def _ensure_webhook_sender(self) -> None:
        if self._webhook_task is None or self._webhook_task.done():
            assert self._loop is not None
            self._webhook_task = self._loop.create_task(self._webhook_sender())

    # -- webhook methods ------------------------------------------------------------------------

    def _m_setWebhook(self, p: Params) -> Result:
        url = p.text("url") or ""
        if not url:
            return self._m_deleteWebhook(p)
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https"):
            raise bad_request("bad webhook: An HTTPS URL must be provided for webhook")
        if parts.hostname not in ("127.0.0.1", "localhost", "::1"):
            # A test must never make the emulator send traffic off this machine.
            raise bad_request("bad webhook: emulator delivers only to loopback addresses")
        secret = p.text("secret_token")
        if secret is not None:
            if len(secret) > 256:
                raise bad_request("secret token is too long")
            if not re.fullmatch(r"[A-Za-z0-9_-]+", secret):
                raise bad_request("secret token contains unallowed characters")
        allowed = p.json_value("allowed_updates", "can't parse allowed updates JSON array")
        if allowed is not None:
            self._allowed_updates = tuple(allowed)
        if p.flag("drop_pending_updates"):
            self._pending.clear()
        info = WebhookInfo(
            url,
            secret or None,
            tuple(allowed) if allowed is not None else None,
            p.integer("max_connections") or 40,
            p.text("ip_address"),
        )
        already = self._webhook is not None and self._webhook.url == url
        self._webhook = info
        if self._poller is not None:
            self._poller.conflict = "Conflict: terminated by setWebhook request"
        self._ensure_webhook_sender()
        self._notify()
        return Result(True, "Webhook is already set" if already else "Webhook was set")

    def _m_deleteWebhook(self, p: Params) -> Result:
        if p.flag("drop_pending_updates"):
            self._pending.clear()
        was_set = self._webhook is not None
        self._webhook = None
        self._notify()
        return Result(True, "Webhook was deleted" if was_set else "Webhook is already deleted")

    def _m_getWebhookInfo(self, p: Params) -> dict[str, Any]:
        hook = self._webhook
        info: dict[str, Any] = {
            "url": hook.url if hook else "",
            "has_custom_certificate": False,
            "pending_update_count": len(self._pending),
        }
        if hook is not None:
            info["max_connections"] = hook.max_connections
            if hook.ip_address:
                info["ip_address"] = hook.ip_address
            if hook.allowed_updates is not None:
                info["allowed_updates"] = list(hook.allowed_updates)
            if self._webhook_last_error is not None:
                info["last_error_date"], info["last_error_message"] = self._webhook_last_error
        return info


def _chat_of(payload: dict[str, Any]) -> int | None:
    """The chat an update belongs to: its message's chat, or the user who tapped or asked."""
    for value in payload.values():
        if isinstance(value, dict):
            chat = value.get("chat") or value.get("message", {}).get("chat") or value.get("from")
            if isinstance(chat, dict) and isinstance(chat.get("id"), int):
                return int(chat["id"])
    return None


def _startable(
    pending: list[PendingUpdate], flying: dict[int, Any], connections: int
) -> list[PendingUpdate]:
    """The pending updates to POST now, oldest first: within `connections` in flight, and none
    whose chat has an older update still undelivered."""
    started: list[PendingUpdate] = []
    waiting: set[int] = set()  # chats with an older update not yet delivered
    room = connections - len(flying)
    for update in sorted(pending, key=lambda p: p.update_id):
        chat = _chat_of(update.payload)
        if chat is not None and chat in waiting:
            continue
        if chat is not None:
            waiting.add(chat)
        if update.update_id in flying:
            continue
        if len(started) >= room:
            break
        started.append(update)
    return started

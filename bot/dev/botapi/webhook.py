"""Webhooks: setWebhook and its kin, the sender that POSTs queued updates, and the test side."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
from typing import Any
from urllib.parse import urlsplit

import tornado.httpclient

from .core import EmulatorCore
from .errors import bad_request
from .params import Params, Result
from .snapshots import WebhookDelivery, WebhookInfo, WebhookResponse

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
        setWebhook; pass None to send no header, or another string to send a wrong one.
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
            self._http_post(target, json.dumps(body).encode(), headers), self._loop
        )
        return await asyncio.wrap_future(future)

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
        """Send pending updates to the webhook one at a time, oldest first, retrying failures."""
        while True:
            with self._lock:
                hook = self._webhook
                if hook is None:
                    self._webhook_task = None
                    return
                pending = min(self._pending, key=lambda p: p.update_id, default=None)
                event = self._updates_event
            if pending is None:
                assert event is not None
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(event.wait(), 1.0)
                continue
            with self._lock:
                self._handed_out.setdefault(pending.update_id, time.monotonic())
            headers = {"Content-Type": "application/json"}
            if hook.secret_token:
                headers["X-Telegram-Bot-Api-Secret-Token"] = hook.secret_token
            status: int | None
            try:
                answer = await self._http_post(
                    hook.url, json.dumps(pending.payload).encode(), headers
                )
                status, reason = answer.status, f"{answer.status} {answer.reason}"
            except ConnectionError as exc:
                status, reason = None, str(exc)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # e.g. a URL tornado cannot use: report it like Telegram
                status, reason = None, repr(exc)
            with self._lock:
                self._webhook_deliveries.append(
                    WebhookDelivery(pending.update_id, status, reason, time.monotonic())
                )
                if status is not None and 200 <= status < 300:
                    self._pending = [p for p in self._pending if p is not pending]
                    continue
                self._webhook_last_error = (
                    int(self._wall()),
                    f"Wrong response from the webhook: {reason}" if status is not None else reason,
                )
            await asyncio.sleep(self.webhook_retry_delay)

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

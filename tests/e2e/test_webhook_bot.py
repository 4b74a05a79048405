"""Webhook mode: Telegram's posts carry the secret header; anything else gets 403, unprocessed."""

from __future__ import annotations

import socket

from tests.e2e.test_people_bot import running_bot, said
from tests.factories import REQUESTER, T0

SECRET = "s3cret_Token-for-tests"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_updates_arrive_by_webhook_and_forged_posts_are_refused(botapi, db_url, store):
    port = free_port()
    url = f"http://127.0.0.1:{port}/telegram/hook"
    async with running_bot(botapi, db_url, webhook_url=url, webhook_secret=SECRET,
                           webhook_listen="127.0.0.1", webhook_port=port):  # fmt: skip
        assert botapi.webhook.url == url and botapi.webhook.secret_token == SECRET
        requester = botapi.user(REQUESTER, "Bilal")
        requester.send_text("/start")
        assert await said(requester) == (
            "Hello Bilal. You are registered as requester. /help shows what you can do."
        )
        forged = {"update_id": 999_001, "message": {
            "message_id": 77, "date": 1_700_000_000, "text": "/help",
            "chat": {"id": REQUESTER, "type": "private"},
            "from": {"id": REQUESTER, "is_bot": False, "first_name": "Bilal"},
            "entities": [{"type": "bot_command", "offset": 0, "length": 5}],
        }}  # fmt: skip
        for secret in (None, "wrong-secret"):
            response = await botapi.post_to_webhook(forged, secret_token=secret)
            assert response.status == 403
        requester.send_text("/status")  # a real update after them: its reply proves order
        reply = await said(requester)
        assert reply.startswith("You have no purchase orders yet")  # /help never ran
    async with store.begin() as tx:
        assert await tx.claim_update(999_001, T0)  # the forged update was never even recorded

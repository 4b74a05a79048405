"""Webhook mode: Telegram's posts carry the secret header; anything else gets 403, unprocessed."""

from __future__ import annotations

import asyncio
import time

from cryptography.fernet import Fernet

from bot.telegram.cards import APPROVE_TEXT
from bot.telegram.context import REPLY_WITHIN
from bot.telegram.notices import NoticeRunner
from core.jobs.states import State
from tests.helpers.bot import (
    PO,
    SHEET,
    answer,
    cards_out,
    deliveries_done,
    running_bot,
    said,
    with_terms,
)
from tests.helpers.factories import APPROVER_A, APPROVER_B, REQUESTER, T0
from tests.helpers.net import free_port

SECRET = "s3cret_Token-for-tests"


async def test_updates_arrive_by_webhook_and_forged_posts_are_refused(botapi, db_url, store):
    port = free_port()
    url = f"http://127.0.0.1:{port}/telegram/hook"
    async with running_bot(botapi, db_url, webhook_url=url, webhook_secret=SECRET,
                           web_listen="127.0.0.1", web_port=port):  # fmt: skip
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


async def test_two_webhook_processes_on_one_database_act_once(botapi, db_url, store):
    """Behind a load balancer the same update can reach both processes (a retry after a slow
    answer); each card goes out once although both deliver notices."""
    ports = free_port(), free_port()
    urls = [f"http://127.0.0.1:{port}/telegram/hook" for port in ports]
    key = Fernet.generate_key().decode()  # one deployment: every process signs alike
    hooks = [dict(webhook_url=url, webhook_secret=SECRET, web_listen="127.0.0.1",
                  web_port=port, manzoori_secret_key=key)
             for url, port in zip(urls, ports, strict=True)]  # fmt: skip
    await with_terms(store)
    async with (
        running_bot(botapi, db_url, **hooks[0]) as one,
        running_bot(botapi, db_url, **hooks[1]) as two,
    ):
        ali = botapi.user(APPROVER_A, "Ali", started=True)
        sana = botapi.user(APPROVER_B, "Sana", started=True)
        requester = botapi.user(REQUESTER, "Bilal")
        upload = requester.send_document(SHEET, "restock.csv", "text/csv")  # to the second
        assert (await said(requester)).startswith("restock.csv accepted; 1 purchase order")
        again = await botapi.post_to_webhook(upload.update_id, url=urls[0])  # to the first
        assert again.status == 200
        delivered = await asyncio.gather(*(
            NoticeRunner(run.store, run.app.bot, run.settings).run_once() for run in (one, two)
        ))  # fmt: skip
        assert sorted(delivered) in ([0, 2], [1, 1])  # each card claimed by one process
        ali_card, sana_card = await ali.next_message(), await sana.next_message()
        tap = ali.tap(ali_card, APPROVE_TEXT)  # the queue takes it to the second process
        repeat = await botapi.post_to_webhook(botapi.callback_query(tap).update_id, url=urls[0])
        assert repeat.status == 200  # whichever process took it first answered it
        await botapi.wait_for(lambda: botapi.message(APPROVER_B, sana_card.message_id).edited)
        await deliveries_done(one)  # both processes: one bot, so the same task names
        async with store.begin() as tx:
            jobs = await tx.jobs_in_states(set(State))
            assert [j.state for j in jobs] == [State.APPROVED]
            assert len(await tx.decisions(jobs[0].id)) == 1
            assert len(await tx.effects_for(jobs[0].id)) == 1
        assert len(ali.messages()) == len(sana.messages()) == 1  # one card each, now edited
        assert sum("restock.csv" in (m.text or "") for m in requester.messages()) == 1
        assert len(botapi.calls_to("answerCallbackQuery")) == 1  # the repeat was not handled


async def test_a_tap_is_answered_in_the_webhook_reply_or_else_the_ordinary_way(
    botapi, db_url, store
):
    """Telegram executes a Bot API call a webhook answers with: a tap whose answer is ready in
    time is answered there, without a request of ours; one that is not, the ordinary way.
    Exactly one answer per tap either way."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/telegram/hook"
    async with running_bot(botapi, db_url, webhook_url=url, webhook_secret=SECRET,
                           web_listen="127.0.0.1", web_port=port) as run:  # fmt: skip
        ali, ali_card, sana, sana_card = await cards_out(botapi, run)
        tap = ali.tap(ali_card, APPROVE_TEXT)
        assert await answer(botapi, tap) == "Approved — e-mailing the supplier."
        [answered] = botapi.calls_to("answerCallbackQuery")
        assert answered.in_reply and answered.params["callback_query_id"] == tap
        assert [d.status for d in botapi.webhook_deliveries][-1] == 200
        posted = time.monotonic()  # Telegram delivers the tap again: handled once, so ignored,
        again = await botapi.post_to_webhook(botapi.callback_query(tap).update_id)
        assert (again.status, again.body) == (200, b"")  # and answered at once, without a call
        assert time.monotonic() - posted < REPLY_WITHIN

        run.app.bot_data["deps"].replies.within = 0  # no answer is ever ready in time
        late = sana.tap(sana_card, APPROVE_TEXT)
        assert await answer(botapi, late) == f"Already decided: {PO} is approved."
        await deliveries_done(run)
    calls = botapi.calls_to("answerCallbackQuery")
    assert [(c.in_reply, c.params["callback_query_id"]) for c in calls] == [
        (True, tap),
        (False, late),
    ]

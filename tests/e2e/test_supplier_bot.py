"""The supplier answers through the real bot, web front door and SMTP sink: the link in the PO's
e-mail opens the page over plain HTTP (no script); an accept reaches the requester and the
approver in Telegram; a proposal goes to the approvers as "Supplier proposes", and approved
it is e-mailed as version 2 exactly once, the old link superseded; turned down, the supplier is
e-mailed that its version stands; an ambiguous send is settled by the link with one copy at
the relay; a silent supplier is reminded once, then the team is told, across a restart."""

from __future__ import annotations

import asyncio
import re

import httpx
import pytest

from bot.bootstrap import LadderSweep
from bot.clock import utcnow
from bot.telegram.cards import APPROVE_TEXT, REJECT_TEXT
from core.approval.approval_policy import import_policy
from core.jobs.effects import EffectStatus
from core.jobs.states import State
from tests.helpers.bot import (
    ADMIN,
    PO,
    all_handled,
    answer,
    approved_and_sent,
    delivered,
    deliveries_done,
    job_and_decisions,
    mail_bot,
)
from tests.helpers.factories import REQUESTER
from tests.helpers.net import free_port

LINK = re.compile(r"https?://\S+/s/[A-Za-z0-9_-]{55}")
HIDDEN = re.compile(r'<input type="hidden" name="(\w+)" value="([^"]*)"')


def link_in(mail) -> str:
    """The supplier's link in an e-mail's text."""
    body = mail.get_body(preferencelist=("plain",)).get_content()
    found = LINK.search(body)
    assert found is not None, body
    return found.group(0)


async def form_of(client: httpx.AsyncClient, url: str) -> dict[str, str]:
    """The page's hidden fields: the version and hash it shows."""
    page = await client.get(url)
    assert page.status_code == 200 and "<script" not in page.text
    return dict(HIDDEN.findall(page.text))


async def test_an_accept_from_the_link_reaches_the_requester_and_the_approver(
    botapi, db_url, store, smtp_sink
):
    port = free_port()
    async with mail_bot(botapi, db_url, smtp_sink, port) as run:
        bilal = botapi.user(REQUESTER, "Bilal")
        ali, _ = await approved_and_sent(botapi, run)
        [mail] = smtp_sink.messages
        url = link_in(mail)
        async with httpx.AsyncClient(timeout=10) as client:
            form = await form_of(client, url)
            answered = await client.post(url, data={**form, "answer": "accept"})
            assert answered.status_code == 303
            again = await client.post(url, data={**form, "answer": "accept"})
            assert again.status_code == 303  # the same answer twice: one
            page = await client.get(url)
        assert "Accepted on" in page.text
        await delivered(run)
        told = [m.text for m in bilal.messages()]
        assert sum("accepted PO-" in t for t in told) == 1, told
        assert any("accepted PO-" in m.text for m in ali.messages())
        seen = len(bilal.messages())
        bilal.send_text("/status")
        await botapi.wait_for(lambda: len(bilal.messages()) > seen)
        assert "the supplier accepted" in bilal.messages()[-1].text


async def test_a_decline_and_its_reason_reach_the_requester_in_their_language(
    botapi, db_url, store, smtp_sink
):
    port = free_port()
    async with mail_bot(botapi, db_url, smtp_sink, port) as run:
        bilal = botapi.user(REQUESTER, "Bilal")
        await approved_and_sent(botapi, run)
        async with run.store.begin() as tx:  # the requester reads Urdu (they are known now)
            assert await tx.set_language(REQUESTER, "ur", utcnow())
        url = link_in(smtp_sink.messages[0])
        async with httpx.AsyncClient(timeout=10) as client:
            form = await form_of(client, url)
            missing = await client.post(url, data={**form, "answer": "decline"})
            assert missing.status_code == 400  # a decline needs its reason
            declined = {**form, "answer": "decline", "reason": "Out of stock till March"}
            assert (await client.post(url, data=declined)).status_code == 303
            page = await client.get(url)
        assert "Declined on" in page.text and "<form" not in page.text
        await delivered(run)
        [news] = [m.text for m in bilal.messages() if "Out of stock till March" in m.text]
        assert news.startswith("❌") and "PO-" in news and "انکار" in news
        job, _, _ = await job_and_decisions(run)
        assert job.state is State.SENT  # the PO went: the answer is the supplier's


async def test_a_proposal_approved_goes_out_as_version_2_once_and_supersedes_the_link(
    botapi, db_url, store, smtp_sink
):
    port = free_port()
    async with mail_bot(botapi, db_url, smtp_sink, port) as run:
        _, sana = await approved_and_sent(botapi, run)
        [first] = smtp_sink.messages
        url = link_in(first)
        async with httpx.AsyncClient(timeout=10) as client:
            form = await form_of(client, url)
            proposal = {**form, "answer": "propose", "qty-1": "2", "note": "only 2 in stock"}
            assert (await client.post(url, data=proposal)).status_code == 303
            await delivered(run)
            card = await sana.next_message()
            assert "Supplier proposes" in card.text and "3 → 2 pieces" in card.text, card.text
            assert await answer(botapi, sana.tap(card, APPROVE_TEXT)) == (
                "Approved — e-mailing the supplier."
            )
            await deliveries_done(run)
            assert await run.outbox.run_once() == 1
            assert await run.outbox.run_once() == 0
            old = await client.get(url)
        first_v2 = smtp_sink.messages[1]
        assert len(smtp_sink.messages) == 2
        assert ":v2:" in first_v2["Idempotency-Key"] and "version 2" in first_v2["Subject"]
        assert "replaced by version 2" in old.text and "<form" not in old.text
        assert link_in(first_v2) != url
        job, _, effects = await job_and_decisions(run)
        assert (job.state, job.draft_version) == (State.SENT, 2)
        assert [e.status for e in effects] == [EffectStatus.SUCCEEDED] * 2


async def test_a_proposal_turned_down_tells_the_supplier_and_the_link_works_again(
    botapi, db_url, store, smtp_sink
):
    port = free_port()
    async with mail_bot(botapi, db_url, smtp_sink, port) as run:
        bilal = botapi.user(REQUESTER, "Bilal")
        _, sana = await approved_and_sent(botapi, run)
        url = link_in(smtp_sink.messages[0])
        async with httpx.AsyncClient(timeout=10) as client:
            form = await form_of(client, url)
            proposal = {**form, "answer": "propose", "price-1": "99999"}
            assert (await client.post(url, data=proposal)).status_code == 303
            await delivered(run)
            card = await sana.next_message()
            sana.tap(card, REJECT_TEXT)
            prompt = await sana.next_message()
            sana.reply_to(prompt, "the agreed rate stands")
            await all_handled(botapi, run)
            await delivered(run)
            assert await run.outbox.run_once() == 1
            page = await client.get(url)
        told = smtp_sink.messages[1]
        assert told["Idempotency-Key"].startswith(f"reject-proposal:{PO}:v2:")
        body = told.get_body(preferencelist=("plain",)).get_content()
        assert "the agreed rate stands" in body and url in body
        assert "ack-accept" in page.text  # the first version is open to an answer again
        assert any("turned down" in m.text for m in bilal.messages())
        job, _, _ = await job_and_decisions(run)
        assert (job.state, job.draft_version) == (State.SENT, 1)


async def test_an_ambiguous_send_is_settled_by_the_link_with_one_copy_at_the_relay(
    botapi, db_url, store, smtp_sink
):
    port = free_port()
    smtp_sink.script("DATA", "250 2.0.0 queued", delay=3)  # taken, but answered too late
    async with mail_bot(botapi, db_url, smtp_sink, port, smtp_timeout_seconds=1) as run:
        await approved_and_sent(botapi, run)
        job, _, _ = await job_and_decisions(run)
        assert job.state is State.UNKNOWN_OUTCOME
        url = link_in(smtp_sink.messages[0])
        async with httpx.AsyncClient(timeout=10) as client:
            assert (await client.get(url)).status_code == 200
        job, _, [effect] = await job_and_decisions(run)
        assert job.state is State.SENT and effect.result["evidence"] == "opened"
        for _ in range(3):
            await run.outbox.run_once()
        assert len(smtp_sink.messages) == 1  # never sent again


@pytest.mark.slow  # waits on real time: one-second rungs
@pytest.mark.timed
async def test_a_silent_supplier_is_reminded_once_and_the_team_told_across_a_restart(
    botapi, db_url, store, smtp_sink
):
    """One-second rungs: the reminder in one process, the escalation in the next, and sweeps
    in both that owe nothing twice."""
    port, quick = free_port(), {"manzoori_ladder_check_seconds": 1}
    botapi.user(ADMIN, "Ayesha", started=True)  # the admin can be written to
    async with mail_bot(botapi, db_url, smtp_sink, port, **quick) as run:
        await approved_and_sent(botapi, run)
        await import_policy(run.store, ONE_SECOND_RUNGS, utcnow(), "cli:test")
        await asyncio.sleep(1.1)  # the reminder is due
        await LadderSweep(run.settings, run.store).run_once()
        assert await run.outbox.run_once() == 1
    assert [m["Idempotency-Key"].split(":")[0] for m in smtp_sink.messages] == [
        "send-po",
        "remind-po",
    ]
    reminder = smtp_sink.messages[1]
    assert "Reminder" in reminder["Subject"] and link_in(reminder)
    async with mail_bot(botapi, db_url, smtp_sink, port, **quick) as run:  # a restart
        await asyncio.sleep(1.1)  # the escalation is due, and the last sweep a second old
        sweep = LadderSweep(run.settings, run.store)
        await sweep.run_once()
        await asyncio.sleep(1.1)
        await sweep.run_once()  # nothing twice
        assert await run.outbox.run_once() == 0
        await delivered(run)
    assert len(smtp_sink.messages) == 2  # one reminder, across the restart
    bilal = botapi.user(REQUESTER, "Bilal")
    assert sum("has not answered" in m.text for m in bilal.messages()) == 1
    told = [m for m in botapi.messages(ADMIN) if "has not answered" in m.text]
    assert len(told) == 1


ONE_SECOND_RUNGS = (
    '[groups]\napprovers = "Approvers"\n[[rules]]\nname = "all"\n'
    'stages = [{ group = "approvers" }]\n'
    '[reminders]\nworking_hours = "Mon-Sun 00:00-24:00"\nremind_after = "1h"\n'
    '[suppliers]\nremind_after = "1s"\nescalate_after = "2s"\n'
)

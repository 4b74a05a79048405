"""The runners of `manzoori run` woken by the commit that gives them work (store.wakeups): with
MANZOORI_POLL_SECONDS at 30, the cards of a sheet and the e-mail of an approval still go out
at once, not at the next poll."""

from __future__ import annotations

from bot.telegram.cards import APPROVE_TEXT
from tests.helpers.bot import answer, mail_bot, submitted
from tests.helpers.factories import APPROVER_A, APPROVER_B, T0
from tests.helpers.net import free_port

POLL = 30.0  # seconds: far longer than any wait below


async def test_cards_and_the_e_mail_leave_when_their_commit_lands_not_at_the_next_poll(
    botapi, db_url, store, smtp_sink
):
    ali = botapi.user(APPROVER_A, "Ali", started=True)
    botapi.user(APPROVER_B, "Sana", started=True)
    async with store.begin() as tx:
        await tx.met(APPROVER_A, "Ali", T0, started=True)
        await tx.met(APPROVER_B, "Sana", T0, started=True)
    async with mail_bot(
        botapi, db_url, smtp_sink, free_port(), loops=True, manzoori_poll_seconds=POLL
    ) as run:
        await submitted(botapi, run)
        card = await ali.next_message(timeout=5)  # the notice runner, woken by the sheet
        assert "approval needed" in card.text
        assert await answer(botapi, ali.tap(card, APPROVE_TEXT)) == (
            "Approved — e-mailing the supplier."
        )
        await botapi.wait_for(lambda: smtp_sink.messages, timeout=5)  # the outbox, woken
        await run.outbox.run_once()
    assert len(smtp_sink.messages) == 1

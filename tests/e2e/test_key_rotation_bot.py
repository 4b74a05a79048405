"""MANZOORI_SECRET_KEY rotated under a running team: a card signed with the old key still
is "not valid" while only the new key is configured, and approves once the old key is listed
after the new one."""

from __future__ import annotations

from cryptography.fernet import Fernet

from bot.telegram.cards import APPROVE_TEXT
from bot.telegram.decisions import NOT_VALID
from core.jobs.states import State
from tests.helpers.bot import answer, cards_out, job_and_decisions, running_bot

OLD, NEW = Fernet.generate_key().decode(), Fernet.generate_key().decode()


async def test_an_old_card_works_while_its_key_is_listed_and_not_after(botapi, db_url, store):
    async with running_bot(botapi, db_url, manzoori_secret_key=OLD) as run:
        ali, ali_card, sana, sana_card = await cards_out(botapi, run)
    async with running_bot(botapi, db_url, manzoori_secret_key=NEW) as run:  # the old key gone
        assert await answer(botapi, sana.tap(sana_card, APPROVE_TEXT)) == NOT_VALID
        assert (await job_and_decisions(run))[0].state is State.AWAITING_APPROVAL
    async with running_bot(botapi, db_url, manzoori_secret_key=f"{NEW},{OLD}") as run:
        assert await answer(botapi, ali.tap(ali_card, APPROVE_TEXT)) == (
            "Approved — e-mailing the supplier."
        )
        assert (await job_and_decisions(run))[0].state is State.APPROVED

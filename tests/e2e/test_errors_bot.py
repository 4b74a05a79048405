"""A handler that fails: the error is logged, and the person hears a short, true apology with
nothing of the internals, whether the failure came before or after their decision counted."""

from __future__ import annotations

import asyncio
import logging

from bot.telegram import decisions as decisions_bot
from bot.telegram import texts
from bot.telegram.app import MESSAGE_FAILED, TAP_FAILED
from bot.telegram.cards import APPROVE_TEXT
from bot.telegram.context import answer_tap
from core.approval import decisions as deciding
from core.errors import StaleJob
from core.jobs.states import State
from tests.helpers.bot import ADMIN, PO, answer, cards_out, job_and_decisions, running_bot, said
from tests.helpers.factories import APPROVER_A, APPROVER_B

# What the injected fault says: it must reach the log and never the person.
INTERNALS = "connection to 10.0.0.7 refused (password=hunter2)"


def fail_first_call(real, *, after_committing: bool):
    """`real`, except that its first call raises RuntimeError, before or after doing its work."""
    calls = 0

    async def flaky(*args, **kwargs):
        nonlocal calls
        calls += 1
        if calls == 1:
            if after_committing:
                await real(*args, **kwargs)
            raise RuntimeError(INTERNALS)
        return await real(*args, **kwargs)

    return flaky


def logged_failures(caplog) -> list[logging.LogRecord]:
    return [
        r
        for r in caplog.records
        if r.name == "bot.telegram.app"
        and r.levelno == logging.ERROR
        and r.exc_info is not None
        and str(r.exc_info[1]) == INTERNALS
    ]


async def test_a_tap_that_fails_before_deciding_gets_an_apology_and_a_retry_counts(
    botapi, db_url, store, monkeypatch, caplog
):
    monkeypatch.setattr(
        deciding, "decide_in", fail_first_call(deciding.decide_in, after_committing=False)
    )
    async with running_bot(botapi, db_url) as run:
        ali, ali_card, _sana, _sana_card = await cards_out(botapi, run)
        assert await answer(botapi, ali.tap(ali_card, APPROVE_TEXT)) == TAP_FAILED
        assert len(logged_failures(caplog)) == 1
        job, decisions, _ = await job_and_decisions(run)
        assert job.state is State.AWAITING_APPROVAL and decisions == []
        again = ali.tap(ali_card, APPROVE_TEXT)  # as the apology says
        assert await answer(botapi, again) == "Approved — e-mailing the supplier."


async def test_a_tap_that_fails_after_deciding_gets_an_apology_that_stays_true(
    botapi, db_url, store, monkeypatch, caplog
):
    # The decision commits with its burst; the tap's handler fails before answering.
    monkeypatch.setattr(
        decisions_bot, "answer_tap", fail_first_call(answer_tap, after_committing=False)
    )
    async with running_bot(botapi, db_url) as run:
        ali, ali_card, _sana, _sana_card = await cards_out(botapi, run)
        assert await answer(botapi, ali.tap(ali_card, APPROVE_TEXT)) == TAP_FAILED
        assert len(logged_failures(caplog)) == 1
        job, decisions, _ = await job_and_decisions(run)
        assert job.state is State.APPROVED and len(decisions) == 1  # it did count
        again = ali.tap(ali_card, APPROVE_TEXT)
        assert (await answer(botapi, again)).startswith("Already approved by you at ")


async def test_a_command_that_fails_gets_an_apology_without_internals(
    botapi, db_url, monkeypatch, caplog
):
    def broken(_roles, **_language):
        raise RuntimeError(INTERNALS)

    async with running_bot(botapi, db_url):
        admin = botapi.user(ADMIN, "Ayesha")
        monkeypatch.setattr(texts, "help_text", broken)
        admin.send_text("/help")
        assert await said(admin) == MESSAGE_FAILED
        assert len(logged_failures(caplog)) == 1
        monkeypatch.undo()
        admin.send_text("/help")
        assert (await said(admin)).startswith("You are registered as admin.")


async def test_a_failed_tap_too_old_to_answer_is_only_logged(
    botapi, db_url, store, monkeypatch, caplog
):
    async def slow_then_broken(*_args, **_kwargs):
        botapi.advance(20)  # past Telegram's ~15 s for answering a tap
        raise RuntimeError(INTERNALS)

    monkeypatch.setattr(deciding, "decide_in", slow_then_broken)
    async with running_bot(botapi, db_url) as run:
        ali, ali_card, _sana, _sana_card = await cards_out(botapi, run)
        query = ali.tap(ali_card, APPROVE_TEXT)
        refused = await botapi.wait_for(lambda: botapi.calls_to("answerCallbackQuery"))
        assert refused[0].status == 400 and botapi.callback_answer(query) is None
        ali.send_text("/help")  # the bot carries on
        assert "approver" in await said(ali)
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == logged_failures(caplog) and len(errors) == 1  # not "error in error handler"


async def test_one_tap_that_fails_in_a_burst_costs_only_its_own(
    botapi, db_url, store, monkeypatch, caplog
):
    """Ali and Sana tap at once and are decided together (decisions.decide_taps); Sana's
    decision fails: she hears the apology, Ali's approval counts and is answered."""
    real = deciding.decide_in

    async def failing_for_sana(tx, review, now, rules):
        if review.reviewer_id == APPROVER_B:
            raise RuntimeError(INTERNALS)
        return await real(tx, review, now, rules)

    monkeypatch.setattr(deciding, "decide_in", failing_for_sana)
    async with running_bot(botapi, db_url) as run:
        ali, ali_card, sana, sana_card = await cards_out(botapi, run)
        sanas, alis = await _approved_at_once(botapi, (sana, sana_card), (ali, ali_card))
        assert await answer(botapi, sanas) == TAP_FAILED
        assert await answer(botapi, alis) == "Approved — e-mailing the supplier."
        assert len(logged_failures(caplog)) == 1
        job, decisions, _ = await job_and_decisions(run)
        assert job.state is State.APPROVED and [d.reviewer_id for d in decisions] == [APPROVER_A]


async def test_a_tap_that_fails_after_it_wrote_leaves_its_burst_to_each_tap_alone(
    botapi, db_url, store, monkeypatch, caplog
):
    """The first tap of a burst loses its job's compare-and-set after writing (as when
    another process moved the job): its part has no savepoint, so the whole burst rolls back
    and each tap is decided again alone, answered as if the burst had never been."""
    caplog.set_level(logging.INFO, logger=decisions_bot.__name__)
    real, calls, batches = deciding.decide_in, [], []
    real_taps = decisions_bot.decide_taps

    async def lost_the_first_time(tx, review, now, rules):
        calls.append(review.reviewer_id)
        result = await real(tx, review, now, rules)
        if len(calls) == 1:
            raise StaleJob("another process moved the job")
        return result

    async def counted(deps, asked):
        batches.append(len(asked))
        return await real_taps(deps, asked)

    monkeypatch.setattr(deciding, "decide_in", lost_the_first_time)
    monkeypatch.setattr(decisions_bot, "decide_taps", counted)
    async with running_bot(botapi, db_url) as run:
        ali, ali_card, sana, sana_card = await cards_out(botapi, run)
        queries = await _approved_at_once(botapi, (ali, ali_card), (sana, sana_card))
        texts_heard = sorted([await answer(botapi, q) for q in queries])
        # The burst's first decision, then each alone (once more if the other one's
        # compare-and-set won meanwhile, as on PostgreSQL, where the two run at once).
        assert batches == [2] and len(calls) >= 3
        assert texts_heard == sorted(
            ["Approved — e-mailing the supplier.", f"Already decided: {PO} is approved."]
        )
        assert any("left to each tap alone" in r.getMessage() for r in caplog.records)
        job, decisions, effects = await job_and_decisions(run)
        assert job.state is State.APPROVED and len(decisions) == 1 and len(effects) == 1
        assert len(botapi.calls_to("answerCallbackQuery")) == 2


async def _approved_at_once(botapi, *taps) -> list[str]:
    """Each (user, card) taps Approve, all in one burst; the taps' query ids, in order."""

    def burst() -> list[str]:
        with botapi.at_once():
            return [user.tap(card, APPROVE_TEXT) for user, card in taps]

    return await asyncio.to_thread(burst)

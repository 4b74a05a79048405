"""Budgets through the real bot: a soft budget's card shows the category's month, every
approval over it asks for a reason with a ForceReply, as Reject does, and the owners' stage
follows; a hard budget refuses the sheet with its figures and creates nothing."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.files.sheets import read_csv_text
from bot.telegram.cards import APPROVE_TEXT
from bot.telegram.notices import NoticeRunner
from core.approval.approval_policy import import_policy
from core.approval.budgets import month_of
from core.approval.policies import PAKISTAN, Policy
from core.approval.routes import Route, StageReason
from core.jobs.jobs import Stamp
from core.jobs.states import State
from core.people import people
from core.purchasing import new_terms
from tests.helpers.bot import (
    PO,
    SHEET,
    TERMS,
    answer,
    deliveries_done,
    job_and_decisions,
    running_bot,
    said,
)
from tests.helpers.factories import APPROVER_A, APPROVER_B, REQUESTER, T0

DEFAULT = Policy.default(500_000 * 100)
# The sheet's three chargers at Rs 6,500.50: Rs 19,501.50 of a Rs 10,000 month.
POLICY = """
[groups]
managers = "Managers"
owners = "Owners"

[[rules]]
name = "chargers"
when = { categories = ["chargers"] }
stages = [{ group = "managers" }]

[[rules]]
name = "default"
stages = [{ group = "managers" }]

[budgets]
mode = "soft"
over_budget_stage = { group = "owners" }
monthly_pkr = { chargers = 10_000 }
"""
HARD = POLICY.replace('mode = "soft"\nover_budget_stage = { group = "owners" }', 'mode = "hard"')


async def shop(botapi, run, policy: str) -> None:
    """Terms whose chargers are in category Chargers, the policy in force; Ali is a manager,
    Sana an owner, both reachable."""
    rows = TERMS.read_text(encoding="utf-8").splitlines()
    tagged = [rows[0] + ",category"]
    tagged += [row + (",Chargers" if ",CHG-" in row else ",") for row in rows[1:]]
    terms = read_csv_text("\n".join(tagged).encode())
    assert (await new_terms.import_terms(run.store, terms, T0, "test")).created
    assert (await import_policy(run.store, policy, T0, "cli:test")).created
    for user_id, name, group in ((APPROVER_A, "Ali", "managers"), (APPROVER_B, "Sana", "owners")):
        botapi.user(user_id, name, started=True)
        async with run.store.begin() as tx:
            await tx.met(user_id, name, T0, started=True)
        await people.set_groups(run.store, user_id, [group], Stamp("test", T0), DEFAULT)


async def card_of(botapi, run, user_id: int):
    await deliveries_done(run)
    await NoticeRunner(run.store, run.app.bot, run.settings).run_once()
    card = await botapi.user(user_id).next_message()
    assert "approval needed" in card.text
    return card


async def approved_with_reason(botapi, user_id: int, card, reason: str) -> str:
    """Tap Approve; the bot asks for a reason, records nothing yet; the reply approves."""
    approver = botapi.user(user_id)
    query = approver.tap(card, APPROVE_TEXT)
    assert await answer(botapi, query) == (
        "This approval goes over a monthly budget: reply to my next message with your reason."
    )
    prompt = await approver.next_message()
    assert prompt.text == f"Reason for approving over budget {PO} v1?"
    assert prompt.reply_markup["force_reply"] is True
    approver.reply_to(prompt, reason)
    return await said(approver)


async def test_a_soft_budget_asks_each_approver_for_a_reason_and_adds_the_owners(
    botapi, db_url, store
):
    async with running_bot(botapi, db_url) as run:
        await shop(botapi, run, POLICY)
        requester = botapi.user(REQUESTER, "Bilal")
        requester.send_document(SHEET, "restock.csv", "text/csv")
        assert (await said(requester)).startswith("restock.csv accepted; 1 purchase order")
        ali_card = await card_of(botapi, run, APPROVER_A)
        month = month_of(datetime.now(UTC), PAKISTAN).name
        assert (
            f"⚠️ Chargers: Rs 10,000.00 left of Rs 10,000.00 in {month}; this PO uses "
            "Rs 19,501.50, over by Rs 9,501.50"
        ) in ali_card.text
        assert "🪜 Stage 1 of 2: waiting for Managers" in ali_card.text
        job, decisions, _ = await job_and_decisions(run)
        assert Route.from_plain(job.route).reasons == (StageReason.RULE, StageReason.BUDGET)

        # A tap alone is no approval: asked for a reason, nothing recorded until it comes.
        ali = botapi.user(APPROVER_A)
        query = ali.tap(ali_card, APPROVE_TEXT)
        assert (await answer(botapi, query)).startswith("This approval goes over a monthly")
        prompt = await ali.next_message()
        assert (await job_and_decisions(run))[1] == []
        ali.reply_to(prompt, "Eid stock, agreed with the owners")
        assert await said(ali) == "Recorded. Stage 1 of 2 is complete; it now waits for owners."

        sana_card = await card_of(botapi, run, APPROVER_B)
        assert "🪜 Stage 2 of 2: waiting for Owners" in sana_card.text
        done = await approved_with_reason(botapi, APPROVER_B, sana_card, "Fine this once")
        assert done == "Approved — e-mailing the supplier."
        job, decisions, effects = await job_and_decisions(run)
        assert job.state is State.APPROVED and len(effects) == 1
        assert [(d.reviewer_id, d.stage, d.reason) for d in decisions] == [
            (APPROVER_A, 0, "Eid stock, agreed with the owners"),
            (APPROVER_B, 1, "Fine this once"),
        ]


async def test_a_hard_budget_refuses_the_sheet_with_its_figures(botapi, db_url, store):
    async with running_bot(botapi, db_url) as run:
        await shop(botapi, run, HARD)
        requester = botapi.user(REQUESTER, "Bilal")
        requester.send_document(SHEET, "restock.csv", "text/csv")
        month = month_of(datetime.now(UTC), PAKISTAN).title
        assert (await said(requester)).splitlines() == [
            "restock.csv: not accepted; nothing was created. Please fix:",
            f"Over the {month} budget for chargers: budget Rs 10,000.00, committed Rs 0.00, "
            "this sheet uses Rs 19,501.50, over by Rs 9,501.50.",
        ]
        async with run.store.reading() as tx:
            assert await tx.list_jobs(None, 10) == []
        await deliveries_done(run)
        assert botapi.user(APPROVER_A).messages() == []

"""Price drift through the real bot: a line priced more than `[drift] percent` above the last
sent PO shows on the card as a ▲ line, with that PO and the day it was sent, and the drift's
stage comes after the rule's; a smaller rise is only a flag, and with no sent PO there is no
drift."""

from __future__ import annotations

from datetime import timedelta
from zoneinfo import ZoneInfo

from bot.clock import utcnow
from bot.files.sheets import read_csv_text
from bot.outbox.runner import OutboxRunner
from bot.outbox.smtp import SmtpSender, SmtpServer
from bot.telegram.notices import NoticeRunner
from bot.words.texts import DAY_MONTH, local_time
from core.approval import decisions
from core.approval.approval_policy import import_policy
from core.approval.decisions import Review
from core.approval.policies import Policy, Verdict
from core.jobs.jobs import Stamp
from core.jobs.states import State
from core.people import people
from core.purchasing import new_terms
from tests.helpers.bot import PO, TERMS, YEAR, running_bot, submitted
from tests.helpers.factories import APPROVER_A, APPROVER_B, REQUESTER, T0

DRIFT = (
    '[groups]\nmanagers = "Managers"\nowners = "Owners"\n'
    '[[rules]]\nname = "default"\nstages = [{ group = "managers" }]\n'
    '[drift]\npercent = 3\nadd_stage = { group = "owners" }\n'
)
DEFAULT = Policy.default(500_000 * 100)
SECOND = f"PO-{YEAR}-0002"
CHARGER = "6500.50"  # CHG-65W's price in tests/data/terms/good.csv


async def team(botapi, run) -> None:
    """The drift policy in force; Ali a manager, Sana an owner, both reachable."""
    assert (await import_policy(run.store, DRIFT, T0, "cli:test")).created
    async with run.store.begin() as tx:
        for user_id, name in ((APPROVER_A, "Ali"), (APPROVER_B, "Sana")):
            botapi.user(user_id, name, started=True)
            await tx.met(user_id, name, T0, started=True)
    for user_id, group in ((APPROVER_A, "managers"), (APPROVER_B, "owners")):
        await people.set_groups(run.store, user_id, [group], Stamp("test", T0), DEFAULT)


async def sent_first(botapi, run, smtp_sink):
    """PO-…-0001 (3 chargers at Rs 6,500.50) submitted, approved by Ali and e-mailed; its job."""
    await submitted(botapi, run)
    async with run.store.reading() as tx:
        job = await tx.job_by_po(PO)
    review = Review(PO, APPROVER_A, Verdict.APPROVE, job.draft_version, job.draft_hash)
    await decisions.decide(run.store, review, utcnow(), run.settings.rules())
    server = SmtpServer(host=smtp_sink.host, port=smtp_sink.port, tls="none", timeout=5)
    sender = SmtpSender(server, mail_from="orders@shop.example")
    outbox = OutboxRunner(run.store, sender, run.settings.rules(), lease=timedelta(minutes=1))
    await outbox.run_once()
    async with run.store.reading() as tx:
        job = await tx.job_by_po(PO)
    assert job.state is State.SENT
    return job


async def second_card(botapi, run, price: str):
    """New terms price the charger at `price`; a second sheet makes PO-…-0002; Ali's card of it
    and its job."""
    terms = read_csv_text(TERMS.read_text().replace(CHARGER, price).encode())
    assert (await new_terms.import_terms(run.store, terms, utcnow(), "test")).created
    requester = botapi.user(REQUESTER)
    requester.send_document(b"sku,quantity\nCHG-65W,4\n", "restock-2.csv", "text/csv")
    assert (await requester.next_message()).text.startswith("restock-2.csv accepted")
    notices = NoticeRunner(run.store, run.app.bot, run.settings)
    while await notices.run_once():  # the first PO's card too, if it was never delivered
        pass
    [card] = [m for m in botapi.user(APPROVER_A).messages() if f"{SECOND} — approval" in m.text]
    async with run.store.reading() as tx:
        return card, await tx.job_by_po(SECOND)


async def test_a_five_percent_rise_shows_its_basis_and_adds_the_owners_stage_last(
    botapi, db_url, store, smtp_sink
):
    async with running_bot(botapi, db_url) as run:
        await team(botapi, run)
        first = await sent_first(botapi, run, smtp_sink)
        card, job = await second_card(botapi, run, "6825.53")  # 5.0% more
        day = local_time(first.updated_at, ZoneInfo("Asia/Karachi"), DAY_MONTH)
        assert f"▲ CHG-65W: 5.0% vs last PO {PO}, {day} (Rs 6,825.53, was Rs 6,500.50)" in (
            card.text.splitlines()
        )
        assert "unit price Rs 6,825.53" not in card.text  # the ▲ line says it, once
        assert "🪜 Stage 1 of 2: waiting for Managers" in card.text
        assert job.route["stages"] == [["managers", 1, "rule"], ["owners", 1, "drift"]]


async def test_a_two_percent_rise_is_a_flag_and_no_extra_stage(botapi, db_url, store, smtp_sink):
    async with running_bot(botapi, db_url) as run:
        await team(botapi, run)
        await sent_first(botapi, run, smtp_sink)
        card, job = await second_card(botapi, run, "6630.51")  # 2.0% more
        assert "▲" not in card.text and "Stage" not in card.text
        assert f"⚠️ CHG-65W: unit price Rs 6,630.51, was Rs 6,500.50 on {PO} (+2.0%)" in card.text
        assert job.route["stages"] == [["managers", 1, "rule"]]


async def test_no_sent_po_no_drift(botapi, db_url, store):
    async with running_bot(botapi, db_url) as run:
        await team(botapi, run)
        await submitted(botapi, run)  # the first PO waits: it was never sent
        card, job = await second_card(botapi, run, "6825.53")
        assert "▲" not in card.text and "was Rs 6,500.50 on" not in card.text
        assert job.route["stages"] == [["managers", 1, "rule"]]

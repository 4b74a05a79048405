"""A purged PO in Telegram: an admin's /history still reads it, and says what went and when."""

from __future__ import annotations

from datetime import timedelta

from bot.clock import utcnow
from core.approval.policies import Role
from core.jobs import closing
from core.jobs.jobs import Stamp
from core.records import retention
from core.records.retention import Purge, Retention
from tests.helpers.bot import ADMIN, PO, running_bot, said, submitted
from tests.helpers.factories import REQUESTER, T0

NOTE = "Supplier Priya asked us to wait"


async def test_history_of_a_purged_po_says_what_was_purged_and_when(botapi, db_url):
    async with running_bot(botapi, db_url) as run:
        async with run.store.begin() as tx:
            await tx.grant(REQUESTER, Role.REQUESTER, "test", T0)
        await submitted(botapi, run)
        await closing.cancel(run.store, PO, NOTE, Stamp("cli:admin", utcnow()))
        later = Stamp("runner:test", utcnow() + timedelta(days=401))
        counts = await retention.run(run.store, Purge(later, Retention(), frozenset({ADMIN})))
        assert counts["jobs"] == counts["draft_bodies"] == 1

        admin = botapi.user(ADMIN, "Ayesha")
        admin.send_text(f"/history {PO}")
        history = await said(admin)
        assert history.startswith(f"{PO}  CANCELLED")
        assert "(retention): draft bodies 1, decision reasons 0, audit notes 1" in history
        assert "purged  - -> -" in history and NOTE not in history

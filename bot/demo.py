"""`make demo`: one purchase order from request to supplier e-mail, on the embedded defaults.

SQLite in a temporary folder, a local SMTP sink, fresh keys; nothing leaves this machine.
Every step goes through the same service, store and runner code as production.
"""

from __future__ import annotations

import asyncio
import tempfile
import uuid
from pathlib import Path

from cryptography.fernet import Fernet

from bot import bootstrap, reports
from bot.config import Settings
from bot.devsmtp import smtp_sink
from bot.runner import utcnow
from core import service, workflow
from core.drafts import Draft, DraftLine
from core.errors import ApprovalError
from core.jobs import NewJob
from core.money import format_pkr
from core.policies import Role, Verdict
from store.migrate import upgrade
from store.sql import SqlStore

REQUESTER, MANAGER, DEPUTY = 7_100_001, 7_200_001, 7_200_002


def say(step: str, detail: str = "") -> None:
    """Print one step of the story."""
    print(f"\n== {step}" + (f"\n   {detail}" if detail else ""), flush=True)


def demo_draft(quantity: int) -> Draft:
    """A Hall Road restock order."""
    return Draft(
        po_number="PO-2026-0042",
        supplier_id="SUP-LHR-07",
        supplier_name="Hall Road Traders",
        recipient_email="orders@hallroad.example",
        terms_version="terms-2026-11",
        lines=(
            DraftLine("CBL-USBC-1M", "USB-C cable, 1 m", quantity, 45_000),
            DraftLine("CHG-65W-GAN", "65 W GaN charger", 10, 650_000),
            DraftLine("PB-20K", "20,000 mAh power bank", 6, 899_900),
        ),
    )


async def attempt(label: str, decision: asyncio.Future[object] | object) -> None:
    """Show a decision that the rules refuse."""
    try:
        await decision  # type: ignore[misc]
    except ApprovalError as refused:
        say(label, f"refused: {type(refused).__name__}: {refused}")


async def story(settings: Settings, store: SqlStore, inbox: list) -> None:
    """The demo itself."""
    rules = settings.rules()
    await upgrade(store.engine)
    async with store.begin() as tx:
        for user, role in (
            (REQUESTER, Role.REQUESTER),
            (REQUESTER, Role.APPROVER),  # a manager who also orders: still not their own approver
            (MANAGER, Role.APPROVER),
            (DEPUTY, Role.APPROVER),
        ):
            await tx.grant(user, role, "demo", utcnow())
    say(
        "Users registered",
        f"requester {REQUESTER} (also an approver); approvers {MANAGER}, {DEPUTY}",
    )

    request = NewJob(
        str(uuid.uuid4()), REQUESTER, "demo:restock-sheet.csv", {"supplier_terms": "terms-2026-11"}
    )
    job = await service.open_job(store, request, demo_draft(20), utcnow(), rules)
    say(
        "Requester's sheet drafted as a purchase order",
        f"{job.po_number} v{job.draft_version} {format_pkr(job.total_paisa or 0)} "
        f"hash {job.draft_hash[:12]}… -> {job.state.value}",
    )

    job = await service.revise(
        store, job.po_number, demo_draft(25), f"user:{REQUESTER}", utcnow(), rules
    )
    say(
        "Requester changes a quantity",
        f"new version v{job.draft_version}, hash "
        f"{(job.draft_hash or '')[:12]}…: any approval of v1 would no longer count",
    )

    await attempt(
        "Requester tries to approve their own request",
        service.decide(
            store,
            job.po_number,
            REQUESTER,
            Verdict.APPROVE,
            2,
            job.draft_hash or "",
            utcnow(),
            rules,
        ),
    )
    await attempt(
        "Manager taps Approve on the stale v1 card",
        service.decide(
            store, job.po_number, MANAGER, Verdict.APPROVE, 1, "0" * 64, utcnow(), rules
        ),
    )
    result = await service.decide(
        store, job.po_number, MANAGER, Verdict.APPROVE, 2, job.draft_hash or "", utcnow(), rules
    )
    say(
        "Manager approves v2",
        f"{result.decision.policy_basis}; expires "
        f"{result.decision.expires_at.astimezone(settings.tz):%Y-%m-%d %H:%M %Z} -> "
        f"{result.job.state.value}",
    )
    await attempt(
        "Manager's phone sends the tap again",
        service.decide(
            store, job.po_number, MANAGER, Verdict.APPROVE, 2, job.draft_hash or "", utcnow(), rules
        ),
    )

    first, second = (bootstrap.build_runner(settings, store) for _ in range(2))
    first.owner, second.owner = "demo-runner-1", "demo-runner-2"
    sent = await asyncio.gather(first.run_once(), second.run_once())
    say(
        "Two runners race for the outbox",
        f"rows each performed: {sent}; e-mails at the supplier's server: {len(inbox)}",
    )
    again = await first.run_once()
    say("A runner passes again", f"performed {again}; e-mails: {len(inbox)}")

    mail = inbox[0]
    say(
        "The supplier's e-mail",
        f"Subject: {mail['Subject']}\n   Message-ID: "
        f"{mail['Message-ID']}\n   Idempotency-Key: {mail['Idempotency-Key']}",
    )
    body = mail.get_body(preferencelist=("plain",))
    print("\n".join("   | " + line for line in body.get_content().splitlines()))
    async with store.begin() as tx:
        detail = await reports.job_detail(
            tx, await workflow.load(tx, job.po_number), settings.mail_domain
        )
    say("What `manzoori jobs show` prints")
    print("\n".join("   " + line for line in reports.text(detail, settings.tz).splitlines()))


def main() -> None:
    """Run the demo in a temporary folder."""
    with (
        tempfile.TemporaryDirectory(prefix="manzoori-demo-") as folder,
        smtp_sink() as (port, inbox),
    ):
        settings = Settings(
            _env_file=None,  # type: ignore[call-arg]
            database_url=f"sqlite+aiosqlite:///{Path(folder) / 'demo.db'}",
            manzoori_secret_key=Fernet.generate_key().decode(),
            manzoori_data_key=Fernet.generate_key().decode(),
            smtp_host="127.0.0.1",
            smtp_port=port,
            smtp_tls="none",
            smtp_timeout_seconds=10,
            mail_from="purchasing@lahore-electronics.example",
        )
        say("Manzoori demo", f"SQLite {settings.database_url}\n   SMTP sink 127.0.0.1:{port}")

        async def run() -> None:
            store = bootstrap.build_store(settings)
            try:
                await story(settings, store, inbox)
            finally:
                await store.close()

        asyncio.run(run())
    print("\nDone: one approved purchase order, one e-mail.")


if __name__ == "__main__":
    main()

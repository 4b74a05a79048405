"""`make demo`: one purchase order from request to supplier e-mail, on the embedded defaults.

SQLite in a temporary folder, a local SMTP sink, fresh keys; nothing leaves this machine.
Every step goes through the same service, store and runner code as production.
"""

from __future__ import annotations

import asyncio
import hashlib
import tempfile
import uuid
from pathlib import Path

from cryptography.fernet import Fernet

from bot import bootstrap, messages, reports
from bot.config import Settings
from bot.devsmtp import smtp_sink
from bot.runner import utcnow
from bot.spreadsheets import read_csv_text, read_sheet
from core import purchasing, service, workflow
from core.errors import ApprovalError
from core.policies import Role, Verdict
from core.tables import Table
from store.migrate import upgrade
from store.sql import SqlStore

REQUESTER, MANAGER, DEPUTY = 7_100_001, 7_200_001, 7_200_002
SAMPLES = Path(__file__).resolve().parent.parent / "samples"


def _csv(path: Path) -> Table:
    return read_csv_text(path.read_bytes())


def _sheet(path: Path) -> purchasing.Sheet:
    data = path.read_bytes()
    return purchasing.Sheet(path.name, hashlib.sha256(data).hexdigest(), read_sheet(data))


def _indent(text: str) -> str:
    return text.replace("\n", "\n   ")


def say(step: str, detail: str = "") -> None:
    """Print one step of the story."""
    print(f"\n== {step}" + (f"\n   {detail}" if detail else ""), flush=True)


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

    now = utcnow()
    imported = await purchasing.import_terms(
        store, _csv(SAMPLES / "supplier-terms.csv"), now, "demo"
    )
    say("Admin imports the supplier terms", messages.terms_import(imported, "supplier-terms.csv"))

    for name in ("restock-with-errors.csv", "restock.csv", "restock.csv"):
        sheet = _sheet(SAMPLES / name)
        result = await purchasing.submit_sheet(
            store, REQUESTER, sheet, utcnow(), utcnow().astimezone(settings.tz).year, rules,
            lambda: str(uuid.uuid4()),
        )  # fmt: skip
        say(f"Requester sends {name}", _indent(messages.submission(result, name)))
    (hall, _), (saddar, _) = sorted(result.orders, key=lambda o: o[1].supplier_name)

    await service.decide(store, hall.po_number, MANAGER, Verdict.APPROVE, 1, hall.draft_hash or "",
                         utcnow(), rules)  # fmt: skip
    say("Manager approves " + hall.po_number + " v1", "its e-mail waits for the outbox runner")
    december = _csv(SAMPLES / "supplier-terms-december.csv")
    imported = await purchasing.import_terms(store, december, utcnow(), "demo")
    changed = await purchasing.apply_terms(store, utcnow(), rules)
    say(
        "Hall Road raises the charger price before the e-mail goes out",
        _indent(messages.terms_import(imported, "supplier-terms-december.csv") + "\n"
                + messages.superseded(changed)),
    )  # fmt: skip
    async with store.begin() as tx:
        job = await workflow.load(tx, hall.po_number)

    await attempt(
        "Manager's phone replays the tap on the v1 card",
        service.decide(store, job.po_number, MANAGER, Verdict.APPROVE, 1,
                       hall.draft_hash or "", utcnow(), rules),
    )  # fmt: skip
    await attempt(
        "Requester (also an approver) tries to approve their own request",
        service.decide(store, job.po_number, REQUESTER, Verdict.APPROVE, 2,
                       job.draft_hash or "", utcnow(), rules),
    )  # fmt: skip
    result = await service.decide(
        store, job.po_number, MANAGER, Verdict.APPROVE, 2, job.draft_hash or "", utcnow(), rules
    )
    say(
        f"Manager approves {job.po_number} v2",
        f"{result.decision.policy_basis}; expires "
        f"{messages.local_time(result.decision.expires_at, settings.tz)} -> "
        f"{result.job.state.value}",
    )
    await attempt(
        "Manager's phone sends the tap again",
        service.decide(store, job.po_number, MANAGER, Verdict.APPROVE, 2,
                       job.draft_hash or "", utcnow(), rules),
    )  # fmt: skip
    rejected = await service.decide(
        store, saddar.po_number, DEPUTY, Verdict.REJECT, 1, saddar.draft_hash or "", utcnow(),
        rules, reason="earbuds are cheaper in Hafeez Centre this week",
    )  # fmt: skip
    say(
        f"Deputy rejects {saddar.po_number}",
        f"reason kept for the requester -> {rejected.job.state.value}",
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

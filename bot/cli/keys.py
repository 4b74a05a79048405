"""`manzoori keys rotate`: re-seal every sealed field with MANZOORI_DATA_KEY's first key, while
the bot runs; `manzoori keys status`: how many keys, and until when what an older signing key
signed stays in use; and `manzoori verify`: the checks an IT person runs after a rotation or a
restore (the schema at head, every sealed field opens, every job's state agrees with its
trail)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Annotated

import typer

from bot.cli.common import fail, with_store
from bot.clock import utcnow
from bot.config import Settings
from core.errors import DraftPurged, SealedDataUnreadable, StoredDataError
from core.jobs.states import State
from store import resealing
from store.migrate import current, head_revision
from store.sql import SqlStore

keys_app = typer.Typer(no_args_is_help=True, help="The keys that seal stored fields.")


@keys_app.command("rotate")
def rotate(
    batch: Annotated[int, typer.Option(min=1, max=10_000, help="Rows per transaction.")] = 200,
) -> None:
    """Re-seal every sealed field with the first MANZOORI_DATA_KEY key, a batch at a time; run
    it again at will. Then the older keys can be removed, and `manzoori verify` proves it."""

    async def work(_settings: Settings, store: SqlStore) -> dict[str, int]:
        return await resealing.reseal_all(store, batch)

    counts = with_store(work)
    for table, count in counts.items():
        typer.echo(f"{table}: {count} re-sealed")
    typer.echo(f"re-sealed {sum(counts.values())} fields with the first of the keys")


@keys_app.command("status")
def status() -> None:
    """How many keys each variable holds, and until when what MANZOORI_SECRET_KEY's older keys
    may have signed stays in use: after that, they can be removed."""

    async def work(settings: Settings, store: SqlStore) -> list[str]:
        now = utcnow()
        found = await resealing.signed(store, now)
        days = timedelta(days=settings.manzoori_supplier_link_days)
        ttl = timedelta(seconds=settings.manzoori_approval_ttl_seconds)
        until = {
            "the newest supplier link": found.link_sent_at and found.link_sent_at + days,
            "the newest open invitation": found.invite_expires_at,
            "the newest card awaiting a decision": found.awaiting_since
            and found.awaiting_since + ttl,
        }
        data, secrets = store.sealer.keys, len(settings.secrets)
        lines = [
            f"MANZOORI_DATA_KEY: {data} key{'s' if data > 1 else ''}; the first seals",
            f"MANZOORI_SECRET_KEY: {secrets} key{'s' if secrets > 1 else ''}; the first signs",
        ]
        for what, when in until.items():
            lines.append(f"{what} works until {_when(when, settings)}")
        last = max((when for when in until.values() if when is not None), default=None)
        if secrets > 1:
            lines.append(
                "the older MANZOORI_SECRET_KEY keys can be removed "
                + (f"after {_when(last, settings)}" if last and last > now else "now")
            )
        return lines

    for line in with_store(work):
        typer.echo(line)


def _when(moment: datetime | None, settings: Settings) -> str:
    if moment is None:
        return "— (none)"
    return moment.astimezone(settings.tz).strftime("%Y-%m-%d %H:%M %Z")


def verify() -> None:
    """Check the database: its schema is at the newest revision, every sealed field opens with
    the configured keys, every draft's body hashes to the hash approved, and every job's state
    is where its audit trail left it; exit 1 on any finding."""

    async def work(_settings: Settings, store: SqlStore) -> list[str]:
        findings = []
        at, head = await current(store.engine), head_revision()
        if at != head:
            findings.append(f"schema: at {at}, the newest is {head}: run `manzoori db upgrade`")
        for table, bad in (await resealing.unopened(store)).items():
            if bad:
                findings.append(f"{table}: {bad} sealed fields open with none of the keys")
        findings += await job_findings(store)
        return findings

    findings = with_store(work)
    for finding in findings:
        typer.echo(finding)
    if findings:
        raise fail(f"{len(findings)} findings")
    typer.echo("verified: schema at head, every sealed field opens, every state agrees")


async def job_findings(store: SqlStore) -> list[str]:
    """Each job whose state is not the one its last move in the trail reached, and each draft
    whose sealed body does not hash to the hash that was approved."""
    found = []
    async with store.reading() as tx:
        for job in await tx.jobs_in_states(frozenset(State)):
            moves = [e for e in await tx.audit(job.id) if e.to_state is not None]
            if moves and moves[-1].to_state is not job.state:
                last = moves[-1].to_state
                found.append(f"{job.po_number}: {job.state.value}, but its trail ends at {last}")
            for version in range(1, await tx.latest_draft_version(job.id) + 1):
                try:
                    await tx.draft(job.id, version)
                except (DraftPurged, SealedDataUnreadable):
                    continue  # purged as the retention table says; unopened: counted above
                except StoredDataError as error:
                    found.append(f"{job.po_number}: {error}")
    return found

"""`manzoori`: set-up, the runner, and the admin's view of jobs, users and the review queue."""

from __future__ import annotations

import asyncio
import json
import math
import signal
from pathlib import Path
from typing import Annotated, Any, NamedTuple

import typer

from bot import bootstrap
from bot.cli.audit import audit_app
from bot.cli.backups import backup, restore
from bot.cli.common import JsonFlag, PoNumber, TelegramId, fail, need_note, stamp, with_store
from bot.cli.company import company_app
from bot.cli.demo import demo
from bot.cli.env_file import write_env_file
from bot.cli.keys import keys_app, verify
from bot.cli.mailbox import mailbox_app
from bot.cli.policy import policy_app
from bot.cli.purchasing import sheets_app, suppliers_app
from bot.cli.retention import purge
from bot.config import LogFormat, Settings
from bot.words import reports
from bot.words.arguments import BIGINT_MAX
from bot.words.cancelling import cancel_refusal
from core.approval import opening, standing
from core.approval.policies import Role
from core.errors import CancelRefused, ConfigError
from core.jobs import transitions
from core.jobs.effects import cancel_po_key
from core.jobs.jobs import Job
from core.jobs.states import NEEDS_REVIEW, Action, State
from core.outbox import calling_off
from core.people import people
from core.texts import echo, flatten
from store.migrate import upgrade
from store.sql import SqlStore

app = typer.Typer(no_args_is_help=True, add_completion=False, help=__doc__)
db_app = typer.Typer(no_args_is_help=True, help="The database schema.")
jobs_app = typer.Typer(no_args_is_help=True, help="Purchase-order jobs.")
users_app = typer.Typer(no_args_is_help=True, help="Registered users and their roles.")
app.add_typer(db_app, name="db")
app.add_typer(jobs_app, name="jobs")
app.add_typer(users_app, name="users")
app.add_typer(suppliers_app, name="suppliers")
app.add_typer(sheets_app, name="sheets")
app.add_typer(policy_app, name="policy")
app.add_typer(company_app, name="company")
app.add_typer(audit_app, name="audit")
app.add_typer(mailbox_app, name="mailbox")
app.add_typer(keys_app, name="keys")
app.command("verify")(verify)
app.command("backup")(backup)
app.command("restore")(restore)
app.command("purge")(purge)


@app.command()
def init(
    path: Annotated[Path, typer.Option(help="Where to write the settings.")] = Path(".env"),
    force: Annotated[bool, typer.Option(help="Overwrite an existing file.")] = False,
) -> None:
    """Write a .env with freshly generated keys."""
    try:
        written = write_env_file(path, force=force)
    except ConfigError as error:
        raise fail(str(error)) from None
    typer.echo(f"wrote {written} with new MANZOORI_SECRET_KEY and MANZOORI_DATA_KEY")


@db_app.command("upgrade")
def db_upgrade() -> None:
    """Apply every pending migration."""
    with_store(lambda _s, store: upgrade(store.engine))
    typer.echo("database is at the latest schema")


def _seconds(text: str) -> float:
    """A number of seconds, 0 or more; click's usage error for anything else (nan, which
    never runs out, included)."""
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not 0 <= seconds < math.inf:
        raise typer.BadParameter(f"{echo(text)} is not a number of seconds (0 or more)")
    return seconds


@app.command("runner")
def runner(
    until_idle: Annotated[bool, typer.Option(help="Exit once nothing is due.")] = False,
    max_seconds: Annotated[
        float | None,
        typer.Option(parser=_seconds, metavar="SECONDS", help="Give up after this long."),
    ] = None,
) -> None:
    """Run the outbox runner (migrations are not applied; see `run`)."""

    async def work(settings: Settings, store: SqlStore) -> None:
        bootstrap.setup_logging(as_json=settings.manzoori_log_format is LogFormat.JSON)
        outbox = bootstrap.build_runner(settings, store)
        if until_idle:
            try:
                await outbox.run_until_idle(settings.manzoori_poll_seconds, max_seconds)
            except TimeoutError:
                raise fail(
                    f"the outbox still had work after --max-seconds {max_seconds:g}: run it "
                    "again, or without --max-seconds; `manzoori jobs list` shows what waits"
                ) from None
        else:
            await bootstrap.run_forever(
                outbox.run_once, settings.manzoori_poll_seconds, _stop_on_signals()
            )

    with_store(work)


@app.command()
def run(
    worker: Annotated[
        bool, typer.Option("--worker", help="The outbox runner only, without the Telegram bot.")
    ] = False,
) -> None:
    """Apply migrations, then run the Telegram bot, the outbox runner and the web front door
    (/healthz, /metrics, the webhook, the Mini App) until SIGINT/SIGTERM. A worker serves
    the front door only when WEB_PORT is set for it: several workers on one host would
    otherwise all claim the default port."""

    async def work(settings: Settings, store: SqlStore) -> None:
        bootstrap.setup_logging(as_json=settings.manzoori_log_format is LogFormat.JSON)
        if not worker and settings.telegram_bot_token is None:
            raise fail(
                "TELEGRAM_BOT_TOKEN is required to run the bot (from @BotFather); "
                "`manzoori run --worker` runs the outbox runner alone"
            )
        await upgrade(store.engine)
        stop = _stop_on_signals()
        web = not worker or "web_port" in settings.model_fields_set
        async with bootstrap.running(settings, store, bot=not worker, web=web):
            await stop.wait()

    with_store(work)


app.command()(demo)


def _stop_on_signals() -> asyncio.Event:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    return stop


@jobs_app.command("list")
def jobs_list(
    state: Annotated[str | None, typer.Option(help="Only jobs in this state.")] = None,
    review: Annotated[bool, typer.Option(help="Only the manual-review queue.")] = False,
    # At most BIGINT: the database's LIMIT takes no larger number (SQLite's driver overflows).
    limit: Annotated[
        int, typer.Option(min=1, max=BIGINT_MAX, help="At most this many jobs.")
    ] = 1000,
    as_json: JsonFlag = False,
) -> None:
    """List jobs, newest first."""
    wanted: set[State] | None = {_parse_state(state)} if state else None
    if review:
        wanted = set(NEEDS_REVIEW) if wanted is None else wanted & NEEDS_REVIEW

    async def work(settings: Settings, store: SqlStore) -> list[dict[str, Any]]:
        async with store.reading() as tx:
            found = await tx.list_jobs(wanted, limit)
        return [reports.job_summary(job) for job in found]

    rows = with_store(work)
    typer.echo(json.dumps(rows, indent=2) if as_json else reports.table(rows))
    if len(rows) == limit:
        typer.echo(f"note: only the newest {limit} shown; use --limit", err=True)


def _parse_state(name: str) -> State:
    try:
        return State(name.upper())
    except ValueError:
        raise fail(f"unknown state {name!r}; one of {', '.join(State)}") from None


@jobs_app.command("show")
def jobs_show(po_number: PoNumber, as_json: JsonFlag = False) -> None:
    """Show one job: its draft, approvals, sends and audit trail."""

    async def work(settings: Settings, store: SqlStore) -> str:
        async with store.reading() as tx:
            job = await transitions.load(tx, po_number)
            detail = await reports.job_detail(tx, job, settings.mail_domain)
        return json.dumps(detail, indent=2) if as_json else reports.text(detail, settings.tz)

    typer.echo(with_store(work))


@jobs_app.command("reconcile")
def jobs_reconcile(
    po_number: PoNumber,
    note: Annotated[str, typer.Option(help="What you checked with the supplier.")],
    sent: Annotated[bool, typer.Option("--sent", help="The supplier has the e-mail.")] = False,
    not_sent: Annotated[
        bool,
        typer.Option(
            "--resend",
            "--not-sent",
            help="It never arrived (no copy in the relay's Sent folder, say): send once more "
            "with the same key and Message-ID.",
        ),
    ] = False,
    failed: Annotated[bool, typer.Option("--failed", help="Give up on this send.")] = False,
    settled: Annotated[
        bool,
        typer.Option(
            "--settled",
            help="CANCEL_FAILED: the supplier was told of the cancellation another way (phoned).",
        ),
    ] = False,
) -> None:
    """Record a person's finding on a send whose outcome is unknown (UNKNOWN_OUTCOME, or a
    cancellation's: CANCEL_UNKNOWN), or settle a cancellation that failed (CANCEL_FAILED)."""
    chosen = [
        a
        for flag, a in (
            (sent, Action.RECONCILE_SENT),
            (not_sent, Action.RECONCILE_NOT_SENT),
            (failed, Action.RECONCILE_FAILED),
            (settled, Action.SETTLE_CANCEL),
        )
        if flag
    ]
    if len(chosen) != 1:
        raise fail("give exactly one of --sent, --resend, --failed, --settled")
    need_note(note)
    job = with_store(
        lambda _s, store: calling_off.reconcile(store, po_number, chosen[0], note, stamp())
    )
    typer.echo(f"{job.po_number} is now {job.state.value}")


@jobs_app.command("reissue")
def jobs_reissue(
    po_number: PoNumber,
    note: Annotated[str, typer.Option(help="Why it is sent for approval again.")],
) -> None:
    """Put an EXPIRED or FAILED job's draft up for approval again, as a new version."""

    need_note(note)

    async def work(settings: Settings, store: SqlStore) -> Job:
        return await opening.reissue(store, po_number, note, stamp(), settings.rules())

    job = with_store(work)
    typer.echo(f"{job.po_number} v{job.draft_version} is now {job.state.value}")


@jobs_app.command("cancel")
def jobs_cancel(
    po_number: PoNumber,
    reason: Annotated[
        str,
        typer.Option(
            "--reason",
            "--note",
            help="Why it is cancelled; for a PO that was sent it goes in the supplier's e-mail.",
        ),
    ],
) -> None:
    """Cancel a job at once: one not sent yet is withdrawn, nothing goes to the supplier; one
    that was sent (SENT) is called off, and the runner e-mails the supplier a cancellation."""
    need_note(reason, "--reason/--note")

    async def work(settings: Settings, store: SqlStore) -> calling_off.CalledOff:
        request = calling_off.CallOff(po_number, reason)
        try:
            return await calling_off.call_off(store, request, frozenset(), stamp())
        except CancelRefused as refused:
            raise fail(cancel_refusal(refused)) from None

    done = with_store(work)
    job = done.job
    if done.repeat:
        typer.echo(f"{job.po_number} is already {job.state.value}: nothing changed")
    elif done.after_sending:
        key = cancel_po_key(job.po_number, job.draft_version or 0, job.draft_hash or "")
        typer.echo(
            f"{job.po_number} is now {job.state.value}: the supplier will be e-mailed a "
            f"cancellation ({key})"
        )
    else:  # withdrawn before it was sent: nothing goes to the supplier
        typer.echo(f"{job.po_number} is now {job.state.value}")


class Granted(NamedTuple):
    """What `users grant` did: whether the role is new, and the groups and branch it set."""

    added: bool
    groups: people.GroupChange | None
    branch: people.BranchChange | None


@users_app.command("grant")
def users_grant(
    user_id: TelegramId,
    role: Role,
    group: Annotated[
        list[str] | None,
        typer.Option(help="An approver's group of the approval policy (repeat for several)."),
    ] = None,
    branch: Annotated[
        str | None,
        typer.Option(help="A requester's branch of the company file: where their POs go."),
    ] = None,
) -> None:
    """Give a Telegram user a role (admin, approver or requester); an approver joins the
    policy's first group, or exactly the --group ones; a requester orders for the company's
    default branch, or the --branch one."""
    if group and role is not Role.APPROVER:
        raise fail("--group is for approvers")
    if branch is not None and role is not Role.REQUESTER:
        raise fail("--branch is for requesters")

    async def grant(settings: Settings, store: SqlStore) -> Granted:
        default, who = settings.rules().approval.default_policy, stamp()
        # Checked before the role is granted, so that a typo grants nothing.
        async with store.reading() as tx:
            if group:
                people.require_groups(await standing.policy_now(tx, default), group)
            if branch is not None:
                people.require_branch(await tx.current_company(), branch)
        added = await people.grant_role(store, user_id, role, who, default)
        groups = None if not group else await people.set_groups(store, user_id, group, who, default)
        chosen = None if branch is None else await people.set_branch(store, user_id, branch, who)
        return Granted(added, groups, chosen)

    granted = with_store(grant)
    had = "now has" if granted.added else "already had"
    typer.echo(f"user {user_id} {had} role {role.value}")
    if granted.groups is not None:
        held = ", ".join(sorted(granted.groups.groups)) or "approvers"
        typer.echo(f"user {user_id} is in groups: {held}")
    if granted.branch is not None:
        chosen = granted.branch
        typer.echo(f"user {user_id} orders for {flatten(chosen.name)} ({chosen.branch})")


@users_app.command("revoke")
def users_revoke(user_id: TelegramId) -> None:
    """Take every role from a Telegram user."""

    held = with_store(
        lambda settings, store: people.revoke_roles(
            store,
            user_id,
            stamp(),
            settings.manzoori_admin_ids,
            settings.rules().approval.default_policy,
        )
    )
    if not held:
        raise fail(f"user {user_id} holds no role")
    typer.echo(f"user {user_id} lost roles: {', '.join(sorted(r.value for r in held))}")


def main() -> None:
    """Console entry point."""
    app()


if __name__ == "__main__":
    main()

"""The composition root: settings in, the store, the sender, the runners and the bot out.

`running` is the one way the pieces are started together: `manzoori run` (and `run --worker`),
`manzoori demo` and the end-to-end tests all enter it, so what they run is what production runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING

from bot import logs
from bot.clock import Runtime
from bot.config import Settings
from bot.documents import rendering
from bot.mailbox.runner import MailboxRunner
from bot.outbox.runner import PAUSE_SECONDS, SENDS_PER_CONNECTION, OutboxRunner
from bot.outbox.smtp import SmtpSender, SmtpServer
from bot.web.app import build_web, serving_web
from bot.web.health import Heartbeats
from bot.web.metrics import Metrics
from core.jobs.jobs import Stamp
from core.messaging import nudges
from core.records import retention
from core.records.retention import Purge
from core.suppliers import chasing
from store import backups, wakeups
from store.engine import make_engine
from store.sql import SqlStore

if TYPE_CHECKING:  # PTB is imported only where the bot runs: it slows every other command
    from telegram.ext import Application

    from bot.telegram.notices import NoticeRunner

log = logging.getLogger(__name__)

# Seconds one getUpdates long poll waits for news; Telegram allows up to 50. Shorter polls only
# cost requests; a stop waits for the poll in flight, which is why the tests pass 1.
LONG_POLL_SECONDS = 10.0
# httpx and httpcore log every request at INFO, and a Bot API request's URL holds the bot token
# (`/bot<token>/sendMessage`): their warnings and errors are enough. fontTools logs each table
# it drops while fpdf2 subsets a PO's fonts, 14 lines a PDF, 1,400 for a burst of 100.
_QUIET_LOGGERS = ("httpx", "httpcore", "fontTools")
_FORMAT = logs.TEXT
# How often each process asks whether the daily purge is due: one read when it is not, and a
# purge a few minutes late is no loss.
PURGE_CHECK_SECONDS = 300.0
# Seconds without a tap after which the outbox beside a bot renders and sends (OutboxRunner.
# pause): long enough to see a burst's next taps coming, short beside the e-mail's wait, which
# follows every approval tap.
OUTBOX_QUIET = 0.01
# The daily backup (MANZOORI_BACKUP_DIR): its chore's name, how often, and how long one
# process may take before another takes it over.
BACKUP_CHORE, BACKUP_EVERY, BACKUP_LEASE = "backup", timedelta(days=1), timedelta(minutes=30)


def setup_logging(level: int = logging.INFO, fmt: str = _FORMAT, *, as_json: bool = False) -> None:
    """The one logging set-up: `level` to stderr, as text in `fmt` or one JSON object a line
    (MANZOORI_LOG_FORMAT=json), each with the update and the PO it is about (bot.logs), and
    without the HTTP clients' request lines."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logs.json_formatter() if as_json else logging.Formatter(fmt))
    handler.addFilter(logs.Fields())
    logging.basicConfig(level=level, handlers=[handler], force=True)
    for name in _QUIET_LOGGERS:
        logging.getLogger(name).setLevel(max(level, logging.WARNING))


def build_store(settings: Settings) -> SqlStore:
    """The durable store at DATABASE_URL, sealing with MANZOORI_DATA_KEY."""
    return SqlStore(
        make_engine(settings.database_url), settings.manzoori_data_key.get_secret_value()
    )


def build_sender(settings: Settings, metrics: Metrics | None = None) -> SmtpSender:
    """The SMTP sender the settings describe, timing its sends into `metrics` if given; its PO
    e-mails carry the supplier's link when MANZOORI_PUBLIC_URL is set, and go to
    MAIL_JOURNAL_BCC too when it is."""
    password = settings.smtp_password.get_secret_value() if settings.smtp_password else None
    server = SmtpServer(
        host=settings.smtp_host,
        port=settings.smtp_port,
        tls=settings.smtp_tls,
        timeout=settings.smtp_timeout_seconds,
        username=settings.smtp_username,
        password=password,
    )
    timer = metrics.smtp_send if metrics is not None else None
    links, journal = settings.supplier_links(), settings.mail_journal_bcc
    return SmtpSender(
        server, mail_from=settings.mail_from, timer=timer, links=links, journal=journal
    )


def build_runner(
    settings: Settings,
    store: SqlStore,
    metrics: Metrics | None = None,
    pause: Callable[[float], Awaitable[None]] | None = None,
) -> OutboxRunner:
    """An outbox runner sending through SMTP under the configured lease and policies; the PDF
    it makes for a send carries the supplier's link when MANZOORI_PUBLIC_URL is set. Beside a
    bot, `pause` waits for a pause in its taps (OutboxRunner.pause)."""
    lease = settings.manzoori_lease_seconds
    # The renders of a claim wait for the taps within half the time its lease leaves beside
    # its sends (the renders themselves take some of the rest).
    spare = lease - settings.smtp_timeout_seconds * SENDS_PER_CONNECTION
    return OutboxRunner(
        store,
        build_sender(settings, metrics),
        settings.rules(),
        lease=timedelta(seconds=lease),
        connections=settings.manzoori_smtp_connections,
        fault_point=settings.manzoori_fault_point,
        links=settings.supplier_links(),
        pause=pause,
        render_wait=min(PAUSE_SECONDS, spare / 2),
    )


async def run_forever(
    run_once: Callable[[], Awaitable[int]],
    poll: float,
    stop: asyncio.Event,
    beat: Callable[[], None] | None = None,
    wake: asyncio.Event | None = None,
) -> None:
    """Run passes until `stop` is set, waiting after a pass that found nothing until `poll`
    seconds have passed or `wake` is set (store.wakeups: work for this runner committed); a
    failing pass is logged and retried, so one bad row never stops a runner. `beat` is called
    after each pass that completed (the heartbeat /healthz reads)."""
    wake = wake or asyncio.Event()
    while not stop.is_set():
        wake.clear()  # a commit from here on wakes the next wait
        try:
            claimed = await run_once()
            if beat is not None:
                beat()
        except Exception:
            log.exception("%s failed; retrying after %.1fs", run_once.__qualname__, poll)
            await _first(poll, stop)  # a failing pass waits out its poll, however woken
            continue
        if claimed == 0:
            await _first(poll, stop, wake)


async def _first(seconds: float, *events: asyncio.Event) -> None:
    """Wait until one of `events` is set, or `seconds` have passed."""
    waits = [asyncio.ensure_future(event.wait()) for event in events]
    try:
        await asyncio.wait(waits, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiting in waits:
            waiting.cancel()


def build_mailbox(
    settings: Settings, store: SqlStore, heartbeats: Heartbeats, metrics: Metrics
) -> MailboxRunner | None:
    """The mailbox's pass (bot.mailbox.runner) when IMAP_HOST is set; None without."""
    config = settings.mailbox()
    if config is None:
        return None
    from bot.mailbox.imap import Mailbox  # imap-tools, only where a mailbox is read

    trouble = functools.partial(heartbeats.trouble, "mailbox")
    return MailboxRunner(
        store,
        Mailbox(config),
        mail_domain=settings.mail_domain,
        grace=settings.reconcile_grace(),
        counters=metrics.mailbox,
        trouble=trouble,
    )


@dataclass(frozen=True)
class DailyPurge:
    """The runner's daily purge (core.records.retention): one process a day does it, whichever asks
    first once it is due."""

    settings: Settings
    store: SqlStore
    runtime: Runtime = field(default_factory=lambda: Runtime.of_process("purge"))

    async def run_once(self) -> int:
        """Purge if due; always 0, so the loop waits PURGE_CHECK_SECONDS before asking again."""
        stamp = Stamp(f"runner:{self.runtime.owner}", self.runtime.now())
        purge = Purge(stamp, self.settings.retention(), self.settings.manzoori_admin_ids)
        counts = await retention.run_if_due(self.store, purge, self.runtime.owner)
        if counts is not None:
            log.info("daily purge removed %s", dict(counts))
        return 0


@dataclass(frozen=True)
class DailyBackup:
    """The runner's daily backup into MANZOORI_BACKUP_DIR (store.backups), keeping the newest
    MANZOORI_BACKUP_KEEP: one process a day takes it, under the chores' lease, whichever asks
    first once it is due; a backup that died is taken over when its lease ends."""

    settings: Settings
    store: SqlStore
    runtime: Runtime = field(default_factory=lambda: Runtime.of_process("backup"))

    async def run_once(self) -> int:
        """Back up if due; always 0, so the loop waits PURGE_CHECK_SECONDS before asking."""
        folder = self.settings.manzoori_backup_dir
        if folder is None:
            return 0
        now, owner = self.runtime.now(), self.runtime.owner
        async with self.store.begin() as tx:
            due_before, until = now - BACKUP_EVERY, now + BACKUP_LEASE
            if not await tx.claim_chore(BACKUP_CHORE, owner, now, due_before, until):
                return 0
        manifest = await backups.backup(self.store.engine, folder, now)
        gone = await asyncio.to_thread(backups.prune, folder, self.settings.manzoori_backup_keep)
        async with self.store.begin() as tx:
            await tx.finish_chore(BACKUP_CHORE, owner, now)
        log.info("daily backup %s written; %d older removed", manifest.file, len(gone))
        return 0


@dataclass(frozen=True)
class LadderSweep:
    """The reminder ladder's sweep (core.messaging.nudges) and the chase of silent suppliers
    (core.suppliers.chasing): each owes what is due, at most once every
    MANZOORI_LADDER_CHECK_SECONDS across all processes."""

    settings: Settings
    store: SqlStore
    runtime: Runtime = field(default_factory=lambda: Runtime.of_process("ladder"))

    async def run_once(self) -> int:
        """Sweep if due; always 0, so the loop waits its interval before asking again."""
        settings, approval = self.settings, self.settings.approval_policy()
        run = nudges.Sweep(
            stamp=Stamp("ladder", self.runtime.now()),
            configured=settings.ladder(),
            default=approval.default_policy,
            zone=settings.tz,
            every=timedelta(seconds=settings.manzoori_ladder_check_seconds),
        )
        owed = await nudges.sweep(self.store, run, self.runtime.owner)
        if owed:
            log.info("the ladder owed %d nudges", owed)
        chased = await chasing.sweep(self.store, run, self.runtime.owner)
        if chased:
            log.info("silent suppliers: %d reminders and escalations owed", chased)
        return 0


@dataclass(frozen=True)
class Running:
    """What `running` started: the store, the settings, and the bot with its notice runner
    (None for an outbox worker); the outbox runner, the runners' heartbeats and the metrics
    always."""

    settings: Settings
    store: SqlStore
    outbox: OutboxRunner
    app: Application | None  # type: ignore[type-arg]
    notices: NoticeRunner | None
    heartbeats: Heartbeats
    metrics: Metrics
    mailbox: MailboxRunner | None = None  # with IMAP_HOST: the Sent folder and the inbox


@contextlib.asynccontextmanager
async def running(
    settings: Settings,
    store: SqlStore,
    *,
    bot: bool = True,
    loops: bool = True,
    long_poll: float = LONG_POLL_SECONDS,
    web: bool = False,
) -> AsyncIterator[Running]:
    """Start the Telegram bot (long polling, or the webhook when WEBHOOK_URL is set) unless
    `bot` is False, the web front door (bot/web) on WEB_LISTEN:WEB_PORT when `web` is True or
    the bot takes a webhook, then the runners' loops unless `loops` is False (a test drives
    their passes itself); when the block ends, stop the loops, the web server, then the bot.
    Migrations are the caller's."""
    await rendering.prepare()  # the renderer's workers and fonts now, not in the first send
    async with contextlib.AsyncExitStack() as stack:
        app, notices = None, None
        heartbeats, metrics = Heartbeats(), Metrics()
        pause = None
        if bot:
            from bot.telegram.app import build_application
            from bot.telegram.fairness import taps_paused
            from bot.telegram.notices import NoticeRunner

            app = build_application(settings, store, metrics)
            await stack.enter_async_context(_serving(app, settings, long_poll))
            notices = NoticeRunner(store, app.bot, settings)
            pause = functools.partial(taps_paused, app, quiet=OUTBOX_QUIET)
        outbox = build_runner(settings, store, metrics, pause)
        if web or (app is not None and settings.webhook_url is not None):
            front = build_web(settings, store, heartbeats, metrics, app)
            await stack.enter_async_context(serving_web(front, settings))
        mailbox = build_mailbox(settings, store, heartbeats, metrics)
        run = Running(settings, store, outbox, app, notices, heartbeats, metrics, mailbox)
        if loops:
            await stack.enter_async_context(_looping(run))
        yield run


@contextlib.asynccontextmanager
async def _serving(
    app: Application,  # type: ignore[type-arg]
    settings: Settings,
    long_poll: float,
) -> AsyncIterator[None]:
    """The application started and taking updates; stopped however the block ends."""
    from bot.telegram.app import start_updates

    async with app:
        await app.start()
        try:
            await start_updates(app, settings, long_poll)
            yield
        finally:  # a failure inside the block still stops the bot, so its error is the last word
            if app.updater is not None and app.updater.running:
                await app.updater.stop()
            await app.stop()


@contextlib.asynccontextmanager
async def _looping(run: Running) -> AsyncIterator[None]:
    """The outbox runner's loop, the notice runner's beside a bot, the daily purge's and the
    reminder ladder's sweep, until the block ends."""
    stop, poll = asyncio.Event(), run.settings.manzoori_poll_seconds
    woken = run.store.wakeups  # and, on PostgreSQL, every other process's commits:
    listening = wakeups.listening(run.settings.database_url, woken)
    passes = {"outbox": (run.outbox.run_once, woken.event(wakeups.OUTBOX))}
    if run.notices is not None:
        passes["notice"] = (run.notices.run_once, woken.event(wakeups.NOTICES))
    tasks = []
    for name, (run_once, wake) in passes.items():
        run.heartbeats.expect(name)
        beat = functools.partial(run.heartbeats.beat, name)
        tasks.append(asyncio.create_task(run_forever(run_once, poll, stop, beat, wake)))
    for chore in (DailyPurge(run.settings, run.store), DailyBackup(run.settings, run.store)):
        tasks.append(asyncio.create_task(run_forever(chore.run_once, PURGE_CHECK_SECONDS, stop)))
    ladder, every = LadderSweep(run.settings, run.store), run.settings.manzoori_ladder_check_seconds
    tasks.append(asyncio.create_task(run_forever(ladder.run_once, every, stop)))
    if run.mailbox is not None:  # no heartbeat: an IMAP outage is degraded, not unhealthy
        every = run.settings.manzoori_mailbox_check_seconds
        tasks.append(asyncio.create_task(run_forever(run.mailbox.run_once, every, stop)))
    try:
        async with listening:
            yield
    finally:
        stop.set()
        await asyncio.gather(*tasks)

"""Taps from outside: the bot as its own process (`manzoori run`), as deployed, the Bot API
emulator in another (bench.emulator_server), 100 approvers tapping Approve at once; per tap,
from the update leaving the emulator (its getUpdates answer, or its webhook POST) to the tap's
answer reaching it. Beside it, in the same run and the same way, the floor: a bare
python-telegram-bot application that only answers (bench.ptb_floor_app). Each subject taps
twice, one card each; the second burst is measured (the first warms connections and caches).
`python -m bench.bot_process` prints the figures alone."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import tempfile
from dataclasses import dataclass
from typing import IO

from cryptography.fernet import Fernet

from bench.bot_harness import REQUESTER, import_terms, median, percentile
from bench.bot_taps import hand_cards, open_jobs
from bench.common import Context, Result
from bench.databases import Database, databases, migrated
from bench.report import render
from bench.smtp_server import SinkProcess
from bot.clock import utcnow
from bot.config import Settings
from bot.dev.demo import free_port
from bot.telegram.cards import APPROVE_TEXT
from bot.telegram.fairness import Shares
from core.approval.policies import Role
from store.engine import make_engine
from store.sql import SqlStore

SECTION = "Taps from outside"
TAPS, QUICK_TAPS = 100, 20
FIRST = 40_001  # the approvers' ids
ADMIN = 9001
PATIENCE = 120.0
APPROVED = "Approved — e-mailing the supplier."
POLLING_RATIO = 1.3  # long polling: p99 ≤ 1.3 × the floor's p99
# The floor twice: as stack.py's (256 updates at a time, where 100 answers contend for the
# emulator at once) and at manzoori's own bound on taps in flight (fairness.Shares.taps); the
# targets are held to the lower p99 of the two.
FLOOR_CONCURRENCY = (256, Shares().taps)
WEBHOOK_SECRET = "bench-secret"  # noqa: S105 - the bench's own, on loopback


@dataclass(frozen=True)
class Burst:
    """One measured burst: ms per tap, the answers' texts, how many came in a webhook reply."""

    ms: list[float]
    texts: list[str]
    in_reply: int

    @property
    def p99(self) -> float:
        return percentile(self.ms, 99)


class EmulatorProcess:
    """The parent's handle on a `bench.emulator_server` child."""

    def __init__(self) -> None:
        self.port, self.token = 0, ""
        self._proc: asyncio.subprocess.Process | None = None

    async def __aenter__(self) -> EmulatorProcess:
        self._proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bench.emulator_server",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        )  # fmt: skip
        ready = (await asyncio.wait_for(self._readline(), 30)).split()
        if ready[:1] != ["READY"]:
            raise RuntimeError(f"the emulator did not start: {ready}")
        self.port, self.token = int(ready[1]), ready[2]
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        proc = self._proc
        if proc is not None and proc.stdin is not None:
            proc.stdin.close()
            await asyncio.wait_for(proc.wait(), 30)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def ask(self, command: str) -> str:
        proc = self._proc
        assert proc is not None and proc.stdin is not None
        proc.stdin.write(f"{command}\n".encode())
        await proc.stdin.drain()
        return await asyncio.wait_for(self._readline(), PATIENCE + 10)

    async def burst(self, count: int) -> Burst:
        """Every approver taps Approve on their oldest card that has it, at once."""
        if await self.ask(f"tap {FIRST} {count} {APPROVE_TEXT}") != "ok":
            raise RuntimeError("the taps were not made")
        answered = json.loads(await self.ask("answers"))
        if len(answered["ms"]) != count:
            raise RuntimeError(
                f"{len(answered['ms'])} of {count} taps answered; "
                f"{answered['untaken']} never taken by the bot"
            )
        return Burst(answered["ms"], answered["texts"], answered["in_reply"])

    async def _readline(self) -> str:
        assert self._proc is not None and self._proc.stdout is not None
        line = await self._proc.stdout.readline()
        if not line:
            raise RuntimeError("the emulator exited")
        return line.decode().strip()


async def _cards_held(emu: EmulatorProcess, count: int, many: int) -> None:
    """Once each approver holds exactly `many` cards with Approve on."""
    if await emu.ask(f"cards {FIRST} {count} {many} {APPROVE_TEXT}") != "ok":
        raise RuntimeError(f"the approvers do not hold {many} cards each")


async def _stopped(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), 30)
        except TimeoutError:
            proc.kill()
            await proc.wait()


async def floor(
    emu: EmulatorProcess, count: int, concurrent: int, transport: str = "httpx"
) -> Burst:
    """The bare python-telegram-bot application's second burst, handling `concurrent` updates
    at a time, on PTB's own transport or (`aiohttp`) on manzoori's."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bench.ptb_floor_app",
        emu.url, emu.token, str(FIRST), str(count), APPROVE_TEXT, str(concurrent), transport,
        stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = await asyncio.wait_for(proc.stdout.readline(), 60)
        if line.strip() != b"READY":
            raise RuntimeError(f"the floor did not start: {line!r}")
        await _cards_held(emu, count, 1)
        await emu.burst(count)
        await asyncio.sleep(0.5)
        return await emu.burst(count)  # the same cards: this bot never edits them
    finally:
        await _stopped(proc)


async def _prepared(db: Database, count: int, data_key: bytes) -> None:
    """A fresh database with 2 × `count` POs waiting, two cards owed to each approver."""
    await (await migrated(db)).dispose()
    store = SqlStore(make_engine(db.url), data_key)
    try:
        settings = Settings(
            _env_file=None,
            database_url=db.url,
            manzoori_data_key=data_key.decode(),
            manzoori_secret_key=Fernet.generate_key().decode(),
        )  # the defaults of `manzoori run`: its time zone and approval rules
        version = await import_terms(store, 1)
        jobs = await open_jobs(store, settings, version, 2 * count)
        now = utcnow()
        async with store.begin() as tx:
            await tx.grant(REQUESTER, Role.REQUESTER, "bench", now)
            await tx.met(REQUESTER, "Requester", now, started=True)
            for user_id in range(FIRST, FIRST + count):
                await tx.grant(user_id, Role.APPROVER, "bench", now)
                await tx.met(user_id, f"U{user_id}", now, started=True)
        approvers = [*range(FIRST, FIRST + count)] * 2
        await hand_cards(store, list(zip(jobs, approvers, strict=True)))
    finally:
        await store.close()


async def manzoori(
    emu: EmulatorProcess, db: Database, count: int, sink: SinkProcess, *, webhook: bool
) -> Burst:
    """`manzoori run`'s second burst, long polling or in webhook mode."""
    data_key = Fernet.generate_key()
    await _prepared(db, count, data_key)
    keep = {k: v for k, v in os.environ.items() if k.lower() not in Settings.model_fields}
    env = dict(
        keep,
        DATABASE_URL=db.url,
        MANZOORI_DATA_KEY=data_key.decode(),
        MANZOORI_SECRET_KEY=Fernet.generate_key().decode(),
        MANZOORI_ADMIN_IDS=str(ADMIN),
        MAIL_FROM="orders@shop.example",
        SMTP_HOST=sink.host,
        SMTP_PORT=str(sink.port),
        SMTP_TLS="none",
        TELEGRAM_BOT_TOKEN=emu.token,
        TELEGRAM_API_URL=emu.url,
    )
    if webhook:
        port = free_port()
        env.update(
            WEBHOOK_URL=f"http://127.0.0.1:{port}/telegram/hook",
            WEBHOOK_SECRET=WEBHOOK_SECRET,
            WEB_LISTEN="127.0.0.1",
            WEB_PORT=str(port),
        )
    with tempfile.TemporaryDirectory() as cwd, _bot_log() as log:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot.cli", "run", cwd=cwd, env=env,
            stdout=asyncio.subprocess.DEVNULL, stderr=log,
        )  # fmt: skip
        try:
            await _cards_held(emu, count, 2)
            await emu.burst(count)
            await _cards_held(emu, count, 1)  # the first cards edited, the second ones left
            await asyncio.sleep(1.0)  # the first burst's news and e-mails go out
            return await emu.burst(count)
        finally:
            await _stopped(proc)


def _bot_log() -> IO[bytes]:
    """Where `manzoori run`'s log goes: BENCH_BOT_LOG, appended to, or nowhere."""
    return open(os.environ.get("BENCH_BOT_LOG", os.devnull), "ab")


def _row(name: str, burst: Burst, target: str, met: bool | None, notes: str) -> Result:
    return Result(
        SECTION,
        name,
        {
            "taps": str(len(burst.ms)),
            "p50 ms": f"{median(burst.ms):.1f}",
            "p99 ms": f"{burst.p99:.1f}",
            "max ms": f"{max(burst.ms):.1f}",
        },
        target=target,
        met=met,
        notes=notes,
    )


async def run(ctx: Context) -> list[Result]:
    """The floor once, then `manzoori run` long polling and in webhook mode on each database."""
    count = QUICK_TAPS if ctx.quick else TAPS
    # A smoke run starts each kind of process once: one floor, one database.
    concurrency = FLOOR_CONCURRENCY[:1] if ctx.quick else FLOOR_CONCURRENCY
    dbs = databases(ctx.sqlite_dir, ctx.postgres_url, "bot-process")
    rows: list[Result] = []
    floors = []
    for concurrent in concurrency:
        async with EmulatorProcess() as emu:
            await emu.ask(f"users {FIRST} {count}")
            floors.append(await floor(emu, count, concurrent))
        rows.append(
            _row(
                f"python-telegram-bot alone, {count} taps at once, long polling, "
                f"{concurrent} updates at a time",
                floors[-1], "the floor", None, "its own process; a handler that only answers",
            )
        )  # fmt: skip
    bare = min(floors, key=lambda burst: burst.p99)  # the stricter floor
    if not ctx.quick:  # context: how much of a tap's cost is PTB's default transport, httpx
        async with EmulatorProcess() as emu:
            await emu.ask(f"users {FIRST} {count}")
            ours = await floor(emu, count, FLOOR_CONCURRENCY[-1], "aiohttp")
        rows.append(
            _row(
                f"python-telegram-bot alone, {count} taps at once, long polling, "
                f"{FLOOR_CONCURRENCY[-1]} updates at a time, on manzoori's transport", ours,
                "context", None, "the floor with bot.telegram.transport (aiohttp) for PTB's "
                "httpx; the targets stay on the floors above, PTB's defaults",
            )
        )  # fmt: skip
    async with SinkProcess() as sink:
        for db in dbs[:1] if ctx.quick else dbs:
            for webhook in (False, True):
                async with EmulatorProcess() as emu:
                    for first, many in ((FIRST, count), (ADMIN, 1), (REQUESTER, 1)):
                        await emu.ask(f"users {first} {many}")
                    burst = await manzoori(emu, db, count, sink, webhook=webhook)
                counted = sum(text == APPROVED for text in burst.texts)
                short = "" if counted == count else f"; only {counted} answered as approved"
                if webhook:
                    limit = bare.p99
                    rows.append(_row(
                        f"manzoori run, {count} taps at once, webhook, {db.label}", burst,
                        f"p99 ≤ the floor's ({limit:.0f} ms)",
                        burst.p99 <= limit and counted == count,
                        f"POST → answer; {burst.in_reply} of {count} answered in the "
                        f"webhook's reply{short}",
                    ))  # fmt: skip
                else:
                    limit = POLLING_RATIO * bare.p99
                    rows.append(_row(
                        f"manzoori run, {count} taps at once, long polling, {db.label}", burst,
                        f"p99 ≤ {POLLING_RATIO:g} × the floor's ({limit:.0f} ms)",
                        burst.p99 <= limit and counted == count,
                        f"getUpdates → answer; {burst.p99 / bare.p99:.2f} × the floor{short}",
                    ))  # fmt: skip
    return rows


if __name__ == "__main__":

    async def _main() -> None:
        with tempfile.TemporaryDirectory() as directory:
            quick = "--quick" in sys.argv
            ctx = Context(quick=quick, sqlite_dir=directory, postgres_url=None)
            print(render(await run(ctx)))

    asyncio.run(_main())

"""Two `manzoori run` processes in webhook mode on one PostgreSQL database, behind the shipped
Caddyfile over HTTPS (Caddy's `tls internal`), as docs/operations.md deploys them.

The Bot API emulator posts every update to Caddy, which takes turns between the front ends;
each front end's `manzoori_webhook_updates_total` (read from its own port) shows which one
took each update. Through them: a delegation, a sheet, cards, an approval on one process and
its double tap on the other, a Reject whose reason reply reaches the other process, a
delegate's approval, and the Mini App in Chromium over HTTPS (trusting exactly Caddy's key),
its requests spread by Caddy like the updates. Everything happens once, as with one process:
one decision per tap, one e-mail, one card per stage and person. What a process keeps in
memory (docs/operations.md, "One process or several") is never needed by the other.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import re
import signal
import ssl
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest
from cryptography import x509
from cryptography.fernet import Fernet
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from playwright.async_api import expect

from bot.dev.botapi import Emulator
from bot.telegram.cards import APPROVE_TEXT, REJECT_TEXT, REVIEW_TEXT
from core.jobs.states import State
from tests.helpers.bot import ADMIN, SHEET, YEAR, said, with_terms
from tests.helpers.browser import phone_context
from tests.helpers.caddy import caddy, caddyfile_for
from tests.helpers.cli import base_env
from tests.helpers.factories import APPROVER_A, APPROVER_B, REQUESTER
from tests.helpers.net import free_port
from tests.helpers.routing import APPROVER_C, CHAIN, team

pytestmark = pytest.mark.slow  # Caddy, two bots and a browser are processes
SECRET = "two-front-ends_secret"
QUEUED = re.compile(r'^manzoori_webhook_updates_total\{outcome="queued"\} (\S+)$', re.M)
STAGE_ONE = "Recorded. Stage 1 of 2 is complete; it now waits for owners."


@dataclass
class FrontEnds:
    """The `manzoori run` processes, by web port, and how many updates each has taken."""

    botapi: Emulator
    ports: list[int]
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    logs: list[Path] = field(default_factory=list)
    counts: list[int] = field(default_factory=list)

    async def queued(self) -> list[int]:
        """Each front end's count of updates queued from its webhook, from its /metrics."""
        async with httpx.AsyncClient(timeout=10) as web:
            pages = [(await web.get(f"http://127.0.0.1:{p}/metrics")).text for p in self.ports]
        return [int(float(m.group(1))) if (m := QUEUED.search(p)) else 0 for p in pages]

    async def took(self) -> list[int]:
        """Once the emulator has delivered every update: how many each front end took since the
        last call. A post is counted before its 200, and the emulator posts one at a time."""
        await self.botapi.wait_for(lambda: not self.botapi.pending_update_ids, timeout=10)
        now = await self.queued()
        taken = [n - before for n, before in zip(now, self.counts, strict=True)]
        self.counts = now
        return taken


def _env(db_url: str, botapi: Emulator, smtp_sink, port: int, public: str, key: str):
    return dict(
        base_env(db_url),
        MANZOORI_SECRET_KEY=key,  # one deployment: every process signs alike
        MANZOORI_ADMIN_IDS=str(ADMIN),
        TELEGRAM_BOT_TOKEN=botapi.token,
        TELEGRAM_API_URL=f"http://127.0.0.1:{botapi.port}",
        WEBHOOK_URL=f"{public}/telegram/hook",
        WEBHOOK_SECRET=SECRET,
        WEB_LISTEN="127.0.0.1",
        WEB_PORT=str(port),
        MANZOORI_PUBLIC_URL=public,
        MANZOORI_WEBAPP_SCRIPT="local",
        MANZOORI_POLL_SECONDS="0.2",
        MANZOORI_LOG_FORMAT="json",
        SMTP_HOST=smtp_sink.host,
        SMTP_PORT=str(smtp_sink.port),
        SMTP_TLS="none",
    )


@contextlib.asynccontextmanager
async def front_ends(
    db_url: str, botapi: Emulator, smtp_sink, public: str, tmp: Path
) -> AsyncIterator[FrontEnds]:
    """Two `manzoori run` processes, each serving /healthz; stopped with SIGTERM at the end,
    which each must survive with exit code 0 and no traceback."""
    ends = FrontEnds(botapi, [free_port(), free_port()])
    key = Fernet.generate_key().decode()
    try:
        for n, port in enumerate(ends.ports):
            log = tmp / f"front-end-{n}.log"
            ends.logs.append(log)
            with log.open("wb") as out:
                ends.processes.append(
                    subprocess.Popen(
                        [sys.executable, "-m", "bot.cli", "run"],
                        cwd=tmp,
                        env=_env(db_url, botapi, smtp_sink, port, public, key),
                        stdout=out,
                        stderr=subprocess.STDOUT,
                    )
                )
        async with httpx.AsyncClient(timeout=5) as web:
            for process, port, log in zip(ends.processes, ends.ports, ends.logs, strict=True):
                await _healthy(web, process, port, log)
        ends.counts = await ends.queued()
        yield ends
    finally:
        for process in ends.processes:
            process.send_signal(signal.SIGTERM)
        for process in ends.processes:
            await asyncio.to_thread(process.wait, 30)
    for process, log in zip(ends.processes, ends.logs, strict=True):
        text = log.read_text()
        assert process.returncode == 0, text[-3000:]
        assert "Traceback" not in text and botapi.token not in text, text[-3000:]
        assert "fontTools" not in text  # its INFO lines, 14 a PDF, are kept out
        records = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
        assert records and not [r for r in records if r["level"] in ("ERROR", "CRITICAL")]


async def _healthy(web: httpx.AsyncClient, process, port: int, log: Path) -> None:
    """Wait until the process answers /healthz with 200 (imports, migrations, setWebhook)."""
    async with asyncio.timeout(60):
        while True:
            if process.poll() is not None:
                raise AssertionError(f"manzoori run exited:\n{log.read_text()[-3000:]}")
            with contextlib.suppress(httpx.TransportError):
                if (await web.get(f"http://127.0.0.1:{port}/healthz")).status_code == 200:
                    return
            await asyncio.sleep(0.2)


def spki_of(port: int) -> str:
    """The base64 SHA-256 of the public key Caddy serves on `port`: what Chromium's
    --ignore-certificate-errors-spki-list trusts, and nothing else."""
    pem = ssl.get_server_certificate(("127.0.0.1", port))
    key = x509.load_pem_x509_certificate(pem.encode()).public_key()
    der = key.public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo)
    return base64.b64encode(hashlib.sha256(der).digest()).decode()


@contextlib.contextmanager
def proxied(tmp: Path, port: int, upstreams: list[int], botapi: Emulator) -> Iterator[None]:
    """The shipped Caddyfile on `port` in front of `upstreams`, its CA the emulator's for
    the webhook."""
    with caddy(caddyfile_for(tmp, port, upstreams), port) as root:
        botapi.webhook_ca = str(root)
        yield


def po(n: int) -> str:
    return f"PO-{YEAR}-{n:04}"


async def test_two_front_ends_behind_caddy_act_once_whichever_takes_an_update(
    botapi, db_url, store, smtp_sink, tmp_path
):
    if not db_url.startswith("postgresql"):
        pytest.skip("several processes share PostgreSQL (docs/operations.md)")
    await with_terms(store)
    await team(botapi, SimpleNamespace(store=store), CHAIN)  # Ali, Chand managers; Sana owner
    ali, sana, chand = (botapi.user(u) for u in (APPROVER_A, APPROVER_B, APPROVER_C))
    bilal = botapi.user(REQUESTER, "Bilal")
    port = free_port()
    public = f"https://127.0.0.1:{port}"
    async with front_ends(db_url, botapi, smtp_sink, public, tmp_path) as ends:
        assert botapi.webhook is not None and botapi.webhook.url == f"{public}/telegram/hook"
        with proxied(tmp_path, port, ends.ports, botapi):
            # A delegation taken by one front end, the sheet by the other.
            sana.send_text(f"/away 3d {APPROVER_C}")
            assert (await said(sana)).startswith("You are away until ")
            assert (await chand.next_message()).text.startswith(f"Sana ({APPROVER_B}) is away")
            first = await ends.took()
            bilal.send_document(SHEET, "restock.csv", "text/csv")
            assert (await said(bilal)).startswith("restock.csv accepted; 1 purchase order")
            assert sorted([first, await ends.took()]) == [[0, 1], [1, 0]]

            # The managers' cards, each delivered once by one front end's notice runner.
            ali_card, chand_card = await ali.next_message(10), await chand.next_message(10)
            assert po(1) in ali_card.text and po(1) in chand_card.text

            # Ali taps Approve twice before the card changes: the front ends take one each.
            taps = ali.tap(ali_card, APPROVE_TEXT), ali.tap(ali_card, APPROVE_TEXT)
            assert await ends.took() == [1, 1]
            answers = [await _answer(botapi, q) for q in taps]
            assert sorted(answers, key=lambda a: a != STAGE_ONE)[0] == STAGE_ONE, answers
            assert answers.count(STAGE_ONE) == 1, answers
            assert next(a for a in answers if a != STAGE_ONE).startswith("Already approved by")

            # The owners' stage: Sana is away, so her card goes to Chand, marked for her.
            held = await _next(chand, f"🧾 {po(1)} — approval needed for Sana")
            assert await _answer(botapi, chand.tap(held, APPROVE_TEXT)) == (
                "Approved — e-mailing the supplier."
            )
            assert sum(await ends.took()) == 1
            await botapi.wait_for(lambda: len(smtp_sink.messages) == 1, timeout=15)
            assert po(1) in smtp_sink.messages[0]["Subject"]

            # A Reject on one front end; the reason, its reply, on the other.
            bilal.send_document(b"sku,quantity\nCHG-65W,5\n", "second.csv", "text/csv")
            assert await _next(bilal, "second.csv accepted; 1 purchase order")
            await ends.took()
            card = await _next(ali, f"🧾 {po(2)} — approval needed")
            await _next(chand, f"🧾 {po(2)} — approval needed")
            assert await _answer(botapi, ali.tap(card, REJECT_TEXT)) == (
                "Why reject it? Reply to my next message with the reason."
            )
            asked_on = await ends.took()
            prompt = await ali.next_message()
            assert prompt.text == f"Reason for rejecting {po(2)} v1?"
            ali.reply_to(prompt, "Stock in Saddar covers it.")
            assert (await ali.next_message()).text == (
                f"Rejected {po(2)}. The requester is told your reason."
            )
            replied_on = await ends.took()
            assert sorted([asked_on, replied_on]) == [[0, 1], [1, 0]]
            news = await _next(bilal, f"{po(2)} was rejected")
            assert news.text == f"{po(2)} was rejected: Stock in Saddar covers it."

            # The Mini App over HTTPS: its page, script and API calls take turns too.
            bilal.send_document(b"sku,quantity\nCHG-65W,7\n", "third.csv", "text/csv")
            assert await _next(bilal, "third.csv accepted; 1 purchase order")
            card = await _next(ali, f"🧾 {po(3)} — approval needed")
            url = ali.open_web_app(card, REVIEW_TEXT)
            assert url.startswith(f"{public}/app/po/{po(3)}")
            trusted = f"--ignore-certificate-errors-spki-list={spki_of(port)}"
            async with phone_context(trusted) as phone:
                page = await phone.new_page()
                served: list[str] = []
                page.on("response", lambda r: served.append(r.url))
                await page.goto(url)
                await expect(page.get_by_test_id("po-line")).to_have_count(1)
                await page.get_by_test_id("approve").click()
                status = page.get_by_test_id("decision-status")
                await expect(status).to_have_text(STAGE_ONE, timeout=10_000)
                await page.reload()  # answered by whichever front end's turn it is
                await expect(page.get_by_test_id("refusal")).to_contain_text(
                    "Already approved by you at"
                )
            assert len({u for u in served if u.startswith(public)}) >= 3
            await ends.took()
            delivered = [d for d in botapi.webhook_deliveries if d.status == 200]
            assert sum(ends.counts) == len(delivered)  # each update taken by one front end

    async with store.reading() as tx:
        jobs = {j.po_number: j for j in await tx.jobs_in_states(set(State))}
        assert {n: j.state for n, j in jobs.items()} == {
            po(1): State.SENT,
            po(2): State.REJECTED,
            po(3): State.AWAITING_APPROVAL,
        }
        decided = {n: await tx.decisions(j.id) for n, j in jobs.items()}
        effects = {n: await tx.effects_for(j.id) for n, j in jobs.items()}
    assert [(d.reviewer_id, d.on_behalf_of) for d in decided[po(1)]] == [
        (APPROVER_A, None),
        (APPROVER_C, APPROVER_B),
    ]
    assert [d.reviewer_id for d in decided[po(3)]] == [APPROVER_A]  # once, from the page
    assert [len(e) for e in effects.values()] == [1, 0, 0]
    assert len(smtp_sink.messages) == 1  # after both outboxes ran to the end
    cards = {
        person.id: [n for n in (1, 2, 3) for m in person.messages() if _is_card(m, n)]
        for person in (ali, chand, sana)
    }  # one card per stage a person decides, though two front ends deliver notices:
    # Chand has the managers' card and, for Sana, the owners' of each PO past its first stage
    assert cards == {APPROVER_A: [1, 2, 3], APPROVER_C: [1, 1, 2, 3, 3], APPROVER_B: []}


async def _answer(botapi: Emulator, query_id: str) -> str:
    """The text the bot answered this tap with, once it has."""
    return (await botapi.wait_for(lambda: botapi.callback_answer(query_id), timeout=10)).text


def _is_card(message, n: int) -> bool:
    """Whether this message was sent as a card for PO n (its first version: a decided card is
    edited)."""
    return (message.versions[0].text or "").startswith(f"🧾 {po(n)} — approval needed")


async def _next(person, start: str):
    """This person's next message that starts with `start`, once a front end has sent it;
    the messages before it (news, cards of other POs) are passed over."""
    while True:
        message = await person.next_message(10)
        if (message.text or "").startswith(start):
            return message

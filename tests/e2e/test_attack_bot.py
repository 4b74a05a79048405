"""`manzoori run` as a real process under attack: hostile workbooks and a burst of sixteen
maximum-size uploads arrive while an approver taps Approve. The tap is recorded and answered
within a second, /status still works, every upload gets its answer, and the process lives."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bot.files.limits import TOO_MUCH_TEXT, UNUSUAL_PARTS
from bot.files.sheets import read_csv_text
from bot.telegram.cards import APPROVE_TEXT
from bot.telegram.orders import SHEET_IN_FLIGHT
from core.approval.policies import Role, Verdict
from core.drafting.sheets import MAX_DATA_ROWS, MAX_NOTE, MAX_SHEET_BYTES
from core.purchasing import new_terms
from tests.helpers.bot import TERMS, YEAR, answer, said
from tests.helpers.cli import base_env
from tests.helpers.factories import APPROVER_A, REQUESTER, T0

# spawns `manzoori run`; answers are timed
pytestmark = [pytest.mark.slow, pytest.mark.timed]

CORPUS = Path(__file__).parent.parent / "corpus" / "files"
# The workbook that aborted the interpreter, and the one that asked for 8 GB: each refused
# as any sheet is, naming the file.
ATTACKS = {
    name: f"{name}: not accepted; nothing was created. Please fix:\n{reason}"
    for name, reason in {
        "dotdot_literal_member.xlsx": UNUSUAL_PARTS,
        "amplification_14k.xlsx": TOO_MUCH_TEXT.format(limit=f"{64_000_000:,}"),
    }.items()
}
# Four small POs made before the burst, one card each for the approver to tap during it.
SHEETS = [f"sku,quantity\nCHG-65W,{n}\n".encode() for n in range(1, 5)]
POS = [f"PO-{YEAR}-{n:04d}" for n in range(1, 5)]
# One attacker per file: each person has one sheet in flight at a time.
ATTACKERS = (1201, 1202)
# Eight more requesters, two uploads each: sixteen uploads, at most one in flight per person.
BURST = tuple(range(1101, 1109))
UPLOADS_EACH = 2


# Ten thousand SKUs of one supplier, beside the usual terms: a sheet of 10,000 lines is legal.
SKUS = [f"SKU-{n:05d}" for n in range(MAX_DATA_ROWS)]
BIG_TERMS = (
    TERMS.read_bytes()
    + "".join(
        f"SUP-BIG-09,Big Bazaar,orders@bigbazaar.pk,{sku},Item {sku},10.00,,\n" for sku in SKUS
    ).encode()
)


def big_sheet(requester: int, n: int) -> bytes:
    """A legal sheet as large as one can be: 10,000 rows with the longest notes, padded with
    blank rows to just under 5 MB; each differs from every other, so none is a repeat."""
    note = f"{requester}-{n}-".ljust(MAX_NOTE, "x")
    body = "sku,quantity,notes\n" + "".join(f"{sku},1,{note}\n" for sku in SKUS)
    padding = ",,\n" * ((MAX_SHEET_BYTES - 1024 - len(body)) // 3)
    return (body + padding).encode()


def rss_mb(pid: int, field: str) -> float:
    """A memory figure of the process from /proc, in MB: VmRSS now, VmHWM its peak so far."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no {field} for process {pid}")


async def replies(user, count: int, timeout: float) -> list[str]:
    """The bot's next `count` messages to this user."""
    return [(await user.next_message(timeout=timeout)).text for _ in range(count)]


async def test_an_attack_and_an_upload_burst_cost_only_their_senders(
    botapi, db_url, store, tmp_path, capsys
):
    terms = read_csv_text(BIG_TERMS)
    assert (await new_terms.import_terms(store, terms, T0, "test")).created
    async with store.begin() as tx:
        for user_id in (*BURST, *ATTACKERS):
            await tx.grant(user_id, Role.REQUESTER, "test", T0)
    # Timed: the bot runs as in production, without coverage's tracer, which `make test` puts
    # in every process it starts (pyproject: patch = ["subprocess"]) and which makes the loop
    # several times slower; the code it runs here is covered by the other tests.
    untraced = {k: v for k, v in base_env(db_url).items() if not k.startswith("COVERAGE_")}
    env = dict(
        untraced,
        TELEGRAM_BOT_TOKEN=botapi.token,
        TELEGRAM_API_URL=f"http://127.0.0.1:{botapi.port}",
        MANZOORI_POLL_SECONDS="0.2",
    )
    log = (tmp_path / "run.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "bot.cli", "run"], cwd=tmp_path, env=env,
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        ali = botapi.user(APPROVER_A, "Ali")
        ali.send_text("/start")
        await ali.next_message(timeout=30)  # start-up: imports, migrations, getMe
        requester = botapi.user(REQUESTER, "Bilal")
        cards = {}
        for n, sheet in enumerate(SHEETS, start=1):
            requester.send_document(sheet, f"restock-{n}.csv", "text/csv")
            assert "accepted; 1 purchase order" in (await said(requester))
        for _ in SHEETS:  # the notice runner's cards, in whatever order they went out
            card = await ali.next_message(timeout=10)
            cards[next(po for po in POS if po in card.text)] = card

        ali.skip_messages()
        idle = rss_mb(process.pid, "VmHWM")  # started, four POs made, before the burst
        before = len(botapi.calls_to("getFile"))  # the burst's downloads are counted from here
        attackers = [botapi.user(user_id, f"M{user_id}") for user_id in ATTACKERS]
        for attacker, name in zip(attackers, ATTACKS, strict=True):
            attacker.send_document((CORPUS / name).read_bytes(), name)
        burst = [botapi.user(user_id, f"R{user_id}") for user_id in BURST]
        for user in burst:
            for n in range(UPLOADS_EACH):
                user.send_document(big_sheet(user.id, n), f"big-{n}.csv", "text/csv")
        # A tap each time two more of the burst's files are being read, so the taps span it
        # (a second sheet of the same person is refused before it is downloaded).
        taps = []
        for n, po in enumerate(POS, start=1):
            await botapi.wait_for(lambda n=n: len(botapi.calls_to("getFile")) >= before + 2 * n, 60)
            query = ali.tap(cards[po], APPROVE_TEXT)
            assert await answer(botapi, query) == "Approved — e-mailing the supplier."
            taps.append(botapi.callback_answer(query).age)
        asked, seen = time.monotonic(), len(requester.messages())
        requester.send_text("/status")

        def status_reply():  # the requester also hears of each approval meanwhile
            later = requester.messages()[seen:]
            return next((m for m in later if all(po in m.text for po in POS)), None)

        await botapi.wait_for(status_reply, timeout=30)
        status_seconds = time.monotonic() - asked

        for attacker, refusal in zip(attackers, ATTACKS.values(), strict=True):
            assert await replies(attacker, 1, timeout=30) == [refusal]
        for user in burst:
            answered = await replies(user, UPLOADS_EACH, timeout=120)
            accepted = [text for text in answered if text != SHEET_IN_FLIGHT]
            assert accepted, answered  # the first at least; a second may have had to wait
            assert all("accepted; 1 purchase order" in text for text in accepted), answered
        assert process.poll() is None  # alive: the bot and both runners
        peak = rss_mb(process.pid, "VmHWM")
        async with store.reading() as tx:
            for po in POS:
                job = await tx.job_by_po(po)
                assert job is not None
                decided = [(d.reviewer_id, d.verdict) for d in await tx.decisions(job.id)]
                assert decided == [(APPROVER_A, Verdict.APPROVE)], po
        assert max(taps) < 1.0, taps
        assert status_seconds < 1.0
        with capsys.disabled():
            shown = ", ".join(f"{age:.3f}" for age in taps)
            print(
                f"\nattack+burst: taps answered in {shown} s; /status in {status_seconds:.3f} s;"
                f" peak RSS of the bot {peak:.0f} MB ({idle:.0f} MB before the burst)"
            )
    finally:
        process.send_signal(signal.SIGTERM)
        await asyncio.to_thread(process.wait, timeout=60)
        log.close()
    assert process.returncode == 0, (tmp_path / "run.log").read_text()[-3000:]

"""`make demo` / `manzoori demo`: the whole story in Telegram, on this machine, with no accounts.

The real bot runs in-process, as `manzoori run` runs it: the PTB application polling a local Bot
API emulator (bot.dev.botapi), the notice runner delivering cards and requesters' news, and the
outbox runner e-mailing suppliers through a local SMTP sink (bot.dev.smtp). Scripted people type,
send sheets and tap buttons; the transcript shows what each of them sees. SQLite and fresh keys;
the database is left in the demo folder to inspect. A step that does not happen within
STEP_TIMEOUT stops the demo with exit status 1.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import signal
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from email.message import EmailMessage
from functools import partial
from html.parser import HTMLParser
from pathlib import Path
from typing import TypeVar, cast
from urllib.parse import parse_qs, urlsplit

import httpx
from cryptography.fernet import Fernet
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource

from bot.bootstrap import build_store, running, setup_logging
from bot.clock import utcnow
from bot.config import Settings
from bot.dev.botapi import EmulatedUser, Emulator, Message
from bot.dev.smtp import running_sink
from bot.files.parsing import parse_isolated
from bot.files.sheets import read_csv_text
from bot.telegram.cards import APPROVE_TEXT, REJECT_TEXT, REVIEW_TEXT
from bot.words.texts import terms_import
from core.purchasing import new_terms
from store.migrate import upgrade
from store.sql import SqlStore

T = TypeVar("T")
SAMPLES = Path(__file__).resolve().parents[2] / "samples"
ADMIN, APPROVER, REQUESTER, STRANGER = 1_000_001, 2_000_002, 3_000_003, 4_000_004
# Each step takes well under a second here; ten seconds without it means it is not coming.
STEP_TIMEOUT = 10.0
# The runners' idle sleep (MANZOORI_POLL_SECONDS): short, so the story moves at once.
POLL_SECONDS = 0.2
REASON = "Power banks are still in stock at Liberty; send it again without them."
PO = re.compile(r"PO-\d{4}-\d{4}")
LOOK_INSIDE = "select po_number, state from jobs"  # a first look at the database left behind
# The link in the PO's e-mail to the supplier's page, and what the page says was recorded.
SUPPLIER_LINK = re.compile(r"https?://\S+/s/[A-Za-z0-9_-]+")
STATUS_TEXT = re.compile(r'data-testid="ack-status"[^>]*>(.*?)<', re.DOTALL)
ACCEPT_BY = "2026-12-31"


class _Hidden(HTMLParser):
    """The hidden fields of a page's forms: what the page names (its version and hash)."""

    def __init__(self) -> None:
        super().__init__()
        self.fields: dict[str, str] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        named = dict(attrs)
        if tag == "input" and named.get("type") == "hidden" and named.get("name"):
            self.fields.setdefault(str(named["name"]), named.get("value") or "")


def hidden_fields(page: str) -> dict[str, str]:
    """The hidden fields of the supplier's page, first of each name."""
    parser = _Hidden()
    parser.feed(page)
    return parser.fields


class DemoSettings(Settings):
    """Settings from the arguments only: the user's environment and .env stay out of the demo."""

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings,)


class StepFailed(Exception):
    """A step of the story did not happen (in time, or at all)."""


@dataclass
class Person:
    """A scripted Telegram user and how far the transcript has read their chat."""

    name: str
    role: str
    user: EmulatedUser
    seen: int = 0  # the last bot message id already printed

    def __str__(self) -> str:
        return f"{self.name} ({self.role})"


def show(who: str, text: str, buttons: list[list[str]] | None = None) -> None:
    """Print one utterance; several lines, or a keyboard, go in an indented block."""
    lines = text.splitlines() or [""]
    rows = ["  ".join(f"[ {b} ]" for b in row) for row in buttons or []]
    if len(lines) == 1 and not rows:
        print(f"{who}: {lines[0]}", flush=True)
        return
    print(f"{who}:")
    print("\n".join(f"    │ {line}".rstrip() for line in [*lines, *rows]), flush=True)


def act(title: str) -> None:
    """Print the heading of a part of the story."""
    print(f"\n── {title} " + "─" * max(3, 72 - len(title)), flush=True)


def po_of(card: Message) -> str:
    """The PO number a card is about."""
    found = PO.search(card.text or "")
    if found is None:
        raise StepFailed(f"a card without a PO number: {card.text!r}")
    return found.group(0)


def keyboard(message: Message) -> list[list[str]]:
    """The message's inline buttons by row, as texts."""
    return [[b.text for b in row] for row in message.buttons]


def show_mail(mail: EmailMessage, folder: Path) -> None:
    """Print the e-mail as the supplier's server received it: the headers that matter, the body;
    its PDF is saved in the demo folder, to open."""
    names = ("From", "To", "Subject", "Message-ID", "Idempotency-Key")
    head = [f"{name}: {mail[name]}" for name in names if mail[name]]
    body = mail.get_body(preferencelist=("plain",))
    text = body.get_content().rstrip() if body is not None else "(no plain-text body)"
    attachments = []
    for part in mail.iter_attachments():
        name = Path(str(part.get_filename())).name
        if part.get_content_type() == "application/pdf":
            (folder / name).write_bytes(part.get_content())
            attachments.append(f"📎 {name}  (saved as {_near(folder / name)})")
        else:
            attachments.append(f"📎 {name}")
    show("SMTP sink ← e-mail", "\n".join([*head, "", text, *attachments]))


class Story:
    """The scripted people, the emulator and the SMTP inbox, and the story itself."""

    def __init__(self, emu: Emulator, inbox: list[EmailMessage], folder: Path) -> None:
        self.emu, self.inbox, self.folder = emu, inbox, folder
        self.admin = Person("Ayesha", "admin", emu.user(ADMIN, "Ayesha"))
        self.ali = Person("Ali", "approver", emu.user(APPROVER, "Ali"))
        self.bilal = Person("Bilal", "requester", emu.user(REQUESTER, "Bilal"))
        self.zara = Person("Zara", "stranger", emu.user(STRANGER, "Zara"))
        self.review_url: str | None = None  # the Mini App opened from a card, as signed then

    async def until(self, what: str, check: Callable[[], T | None]) -> T:
        """Wait for `check()` to be truthy; StepFailed naming `what` if it never is."""
        try:
            return cast(T, await self.emu.wait_for(check, STEP_TIMEOUT))
        except AssertionError:
            calls = "\n".join(
                f"  {c.method} {c.status} {c.description or ''}".rstrip()
                for c in self.emu.calls[-8:]
            )
            raise StepFailed(
                f"{what}: did not happen within {STEP_TIMEOUT:g} s\n"
                f"the bot's last calls to the Bot API:\n{calls}"
            ) from None

    async def hear(self, person: Person, expected: str) -> Message:
        """Wait for the bot's message containing `expected`; print it and any before it."""
        fresh: list[Message] = []

        def arrived() -> Message | None:
            fresh[:] = [m for m in person.user.messages() if m.message_id > person.seen]
            return next((m for m in fresh if expected in (m.text or "")), None)

        found = await self.until(f"{person.name} hears {expected!r}", arrived)
        for message in fresh[: fresh.index(found) + 1]:
            show(f"bot → {person}", message.text or "", keyboard(message))
        person.seen = found.message_id
        return found

    async def say(self, person: Person, text: str, expected: str) -> Message:
        """The person sends a text; the bot's answer containing `expected`."""
        show(f"{person} → bot", text)
        person.user.send_text(text)
        return await self.hear(person, expected)

    async def answer(self, person: Person, *query_ids: str) -> None:
        """The bot's answers to taps, printed as the pop-ups the person sees, in the order they
        came (taps made at once are handled side by side, and either may win)."""
        got = [
            await self.until(
                f"the answer to {person.name}'s tap", partial(self.emu.callback_answer, q)
            )
            for q in query_ids
        ]
        for answer in sorted(got, key=lambda a: a.at):
            show(f"bot → {person} (pop-up)", answer.text or "")

    async def edited(self, person: Person, card: Message, headline: str) -> None:
        """Wait for the card to be edited to `headline`…, and print it."""

        def done() -> Message | None:
            now = self.emu.message(person.user.id, card.message_id)
            return now if (now.text or "").startswith(headline) else None

        now = await self.until(f"{person.name}'s card edited to {headline!r}", done)
        show(f"bot edits {person.name}'s card", now.text or "", keyboard(now))

    async def people(self) -> None:
        """The admin invites an approver and a requester; a stranger is turned away."""
        act("1. People: the admin invites an approver and a requester")
        await self.say(self.admin, "/start", "registered as admin")
        for person in (self.ali, self.bilal):
            link = await self.say(self.admin, f"/invite {person.role}", "?start=")
            code = (link.text or "").rsplit("?start=", 1)[1]
            print(f"   (Ayesha forwards the link to {person.name}, who opens it and taps Start)")
            await self.say(person, f"/start {code}", "registered as")
        await self.say(self.zara, "/start", "not registered")
        await self.say(self.admin, "/users", "approver")

    async def terms(self, store: SqlStore) -> None:
        """The admin sends the company file (the buyer, its branches) to the bot, and puts the
        supplier terms in force, as `manzoori suppliers import` does."""
        act("2. The buyer, its branches and the supplier terms")
        show(f"{self.admin} → bot", "📎 company.toml")
        company = (SAMPLES / "company.toml").read_bytes()
        self.admin.user.send_document(company, "company.toml", "application/toml")
        await self.hear(self.admin, "now in force for new POs")
        name = "supplier-terms.csv"
        print(f"Ayesha (admin) $ manzoori suppliers import samples/{name}")
        table = parse_isolated(read_csv_text, (SAMPLES / name).read_bytes())
        result = await new_terms.import_terms(store, table, utcnow(), "cli:ayesha")
        print("   " + terms_import(result, name), flush=True)
        if result.problems:
            raise StepFailed(f"the sample terms were refused: {result.problems}")

    async def send_sheet(self, name: str, expected: str) -> None:
        """The requester sends a sample sheet as a Telegram document."""
        show(f"{self.bilal} → bot", f"📎 {name}")
        self.bilal.user.send_document((SAMPLES / name).read_bytes(), name, "text/csv")
        await self.hear(self.bilal, expected)

    async def cards(self) -> list[Message]:
        """The approver's two cards, in PO order."""
        act("4. Cards reach the approver")
        first = await self.hear(self.ali, "approval needed")
        second = await self.hear(self.ali, "approval needed")
        return sorted((first, second), key=po_of)

    async def review(self, card: Message) -> None:
        """The approver opens the Mini App from a card: its URL, with the initData Telegram
        would hand the page, and what the page is given to show."""
        po = po_of(card)
        url = self.review_url = self.ali.user.open_web_app(card, REVIEW_TEXT)
        print(f"Ali (approver) taps [ {REVIEW_TEXT} ] on {po}: the Mini App opens at")
        print(f"    {url}", flush=True)
        parts = urlsplit(url)
        [initdata] = parse_qs(parts.fragment)["tgWebAppData"]  # what the page sends as `tma …`
        base = f"{parts.scheme}://{parts.netloc}"
        async with httpx.AsyncClient(base_url=base, timeout=STEP_TIMEOUT) as web:
            page = await web.get(parts.path)
            answer = await web.get(f"/api/po/{po}", headers={"Authorization": f"tma {initdata}"})
        if page.status_code != 200 or answer.status_code != 200:
            raise StepFailed(f"the Mini App answered {page.status_code} / {answer.status_code}")
        view = answer.json()
        shown = [view["heading"], view["supplier"], view["version_text"], view["total_text"]]
        shown += [f"{line['sku']} × {line['quantity']}" for line in view["lines"]]
        show("Mini App (what the page shows)", "\n".join(shown))

    async def double_tap(self, card: Message) -> str:
        """Approve tapped twice at once: one decision, one e-mail; the requester hears both."""
        po = po_of(card)
        act(f"5. Ali double-taps Approve on {po}")
        print(f"Ali (approver) taps [ {APPROVE_TEXT} ] twice, at once")
        taps = [self.ali.user.tap(card, APPROVE_TEXT) for _ in range(2)]
        await self.answer(self.ali, *taps)
        await self.edited(self.ali, card, "✅ Approved")
        await self.hear(self.bilal, f"{po} was approved")
        mail = await self.until("the supplier's e-mail", lambda: self.inbox[:1])
        show_mail(mail[0], self.folder)
        await self.hear(self.bilal, f"{po} was e-mailed")
        return po

    async def reject(self, card: Message) -> None:
        """Reject asks for a reason; the reason reaches the requester."""
        po = po_of(card)
        act(f"6. Ali rejects {po}, with a reason")
        print(f"Ali (approver) taps [ {REJECT_TEXT} ]")
        await self.answer(self.ali, self.ali.user.tap(card, REJECT_TEXT))
        prompt = await self.hear(self.ali, "Reason for rejecting")
        show(f"{self.ali} replies to it", REASON)
        self.ali.user.reply_to(prompt, REASON)
        await self.hear(self.ali, f"Rejected {po}")
        await self.edited(self.ali, card, "❌ Rejected")
        await self.hear(self.bilal, f"{po} was rejected")

    async def supplier_accepts(self, po: str) -> None:
        """The supplier opens the link in the e-mail, as a phone's browser would (no script),
        and accepts with a delivery date; the requester and the approver hear it."""
        act(f"7. The supplier accepts {po} from the link in the e-mail")
        body = self.inbox[0].get_body(preferencelist=("plain",))
        found = SUPPLIER_LINK.search(body.get_content() if body is not None else "")
        if found is None:
            raise StepFailed("the supplier's e-mail carries no link to answer it")
        url = found.group(0)
        async with httpx.AsyncClient(timeout=STEP_TIMEOUT) as client:
            page = await client.get(url)
            if page.status_code != 200:
                raise StepFailed(f"the supplier's page answered HTTP {page.status_code}")
            fields = hidden_fields(page.text)
            show("Supplier's phone ← page", f"GET {url}\n{len(page.content):,} bytes of HTML")
            form = {**fields, "answer": "accept", "date": ACCEPT_BY}
            print(f"The supplier taps [ Accept ], delivery by {ACCEPT_BY}")
            answered = await client.post(url, data=form, follow_redirects=True)
        status = STATUS_TEXT.search(answered.text)
        show("Supplier's phone ← page", status.group(1).strip() if status else answered.text[:200])
        await self.hear(self.bilal, f"accepted {po}")
        await self.hear(self.ali, f"accepted {po}")

    async def run(self, store: SqlStore) -> None:
        """The story, from the first /start to the audit trail."""
        await self.people()
        await self.terms(store)
        act("3. The requester sends restock sheets")
        await self.send_sheet("restock-with-errors.csv", "not accepted")
        await self.send_sheet("restock.csv", "sent for approval")
        approved, rejected = await self.cards()
        await self.review(approved)
        po = await self.double_tap(approved)
        await self.reject(rejected)
        await self.supplier_accepts(po)
        act("8. Looking back")
        await self.say(self.bilal, "/status", "Your recent purchase orders")
        await self.say(self.admin, f"/history {po}", "audit")
        if len(self.inbox) != 1:
            raise StepFailed(f"the supplier got {len(self.inbox)} e-mails instead of one")
        problems = self.emu.internal_errors + self.emu.unimplemented_calls
        if problems:
            raise StepFailed(f"the Bot API emulator reports: {problems}")


def free_port() -> int:
    """A port on 127.0.0.1 nobody listens on now, for the web front door."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def demo_settings(emu: Emulator, smtp_port: int, database: Path) -> Settings:
    """Fresh keys, the local Bot API and SMTP sink, SQLite in the demo folder, and the web
    front door on this machine, where the Mini App loads the local Telegram stand-in."""
    web_port = free_port()
    return DemoSettings(
        database_url=f"sqlite+aiosqlite:///{database}",
        manzoori_secret_key=Fernet.generate_key().decode(),
        manzoori_data_key=Fernet.generate_key().decode(),
        manzoori_admin_ids=frozenset({ADMIN}),
        telegram_bot_token=emu.token,
        telegram_api_url=f"http://127.0.0.1:{emu.port}",
        smtp_host="127.0.0.1",
        smtp_port=smtp_port,
        smtp_timeout_seconds=10,
        mail_from="purchasing@lahore-electronics.example",
        manzoori_poll_seconds=POLL_SECONDS,
        web_port=web_port,
        manzoori_public_url=f"http://127.0.0.1:{web_port}",
        manzoori_webapp_script="local",
    )


def fresh_folder(folder: Path) -> Path:
    """The demo folder, without an earlier run's database; the database's path."""
    folder.mkdir(parents=True, exist_ok=True)
    database = folder.resolve() / "manzoori.sqlite3"
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{database}{suffix}").unlink(missing_ok=True)
    return database


def keep_keys(folder: Path, settings: Settings) -> Path:
    """A .env beside the database, so `manzoori jobs show` can open its sealed fields later."""
    path = folder / ".env"
    lines = [
        "# Written by `manzoori demo`: the throwaway keys of the demo database beside this file.",
        f"DATABASE_URL={settings.database_url}",
        f"MANZOORI_SECRET_KEY={settings.manzoori_secret_key.get_secret_value()}",
        f"MANZOORI_DATA_KEY={settings.manzoori_data_key.get_secret_value()}",
        f"MANZOORI_ADMIN_IDS={ADMIN}",
    ]
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    return path


def _near(path: Path) -> str:
    """The path relative to the current directory when it is below it."""
    path = path.resolve()
    return os.path.relpath(path) if path.is_relative_to(Path.cwd()) else str(path)


def epilogue(database: Path, seconds: float) -> None:
    """Where the database is, and how to look inside."""
    act("9. The database is yours to inspect")
    shown, folder = _near(database), _near(database.parent)
    print(f"SQLite file: {shown}   (its throwaway keys: {folder}/.env)")
    print(f"  sqlite3 {shown} '{LOOK_INSIDE}'")
    print(f"  cd {folder} && uv run manzoori jobs list")
    print(
        f"\nDone in {seconds:.1f} s: one PO approved, e-mailed once and accepted by its "
        "supplier, one rejected."
    )


async def serve_on(story: Story) -> None:
    """Keep the bot and its front door up after the story, for the Mini App opened from a
    card to be seen in a browser (its initData is good for an hour), until SIGINT or SIGTERM."""
    print(
        f"\nThe Mini App stays up (Ctrl-C stops it). Open, within the hour:\n    {story.review_url}"
    )
    stop, loop = asyncio.Event(), asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()


async def play(folder: Path, serve: bool = False) -> Path:
    """Start the emulator, the sink and the bot; run the story (then, with `serve`, keep it
    all up for a browser until Ctrl-C); stop everything. The database."""
    database = fresh_folder(folder)
    with Emulator(bot_username="manzoori_demo_bot") as emu, running_sink() as sink:
        port, inbox = sink.port, sink.messages
        settings = demo_settings(emu, port, database)
        keep_keys(folder, settings)
        print(
            f"Manzoori demo: Bot API emulator on 127.0.0.1:{emu.port}, "
            f"SMTP sink on 127.0.0.1:{port}, SQLite at {database}"
        )
        store = build_store(settings)
        try:
            await upgrade(store.engine)
            async with running(settings, store, web=True):  # as `manzoori run` starts them
                story = Story(emu, inbox, database.parent)
                await story.run(store)
                if serve:
                    await serve_on(story)
        finally:
            await store.close()
    return database


def run_demo(folder: Path, serve: bool = False) -> int:
    """The demo with its database in `folder` (`serve`: its Mini App kept up afterwards);
    the exit status."""
    setup_logging(logging.WARNING, "%(levelname)s %(name)s: %(message)s")
    started = time.monotonic()
    try:
        database = asyncio.run(play(folder, serve))
    except StepFailed as failed:
        print(f"\ndemo failed: {failed}", file=sys.stderr)
        return 1
    epilogue(database, time.monotonic() - started)
    return 0

"""The IMAP client (bot.mailbox.imap) against a real Dovecot: logging in and each way that
fails, mapped to MailboxError; the relay's copies found by Message-ID or Idempotency-Key, two
as two, none as none; new inbox messages after a UID, oldest first, never marked seen, one over
5 MB as its header only; an outage while it lasts and a recovery after."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from email.message import EmailMessage

import pytest

from bot.mailbox import MailboxConfig, MailboxError
from bot.mailbox.imap import Mailbox
from bot.outbox.smtp import TlsMode
from core.outbox.evidence import SentCopy
from core.suppliers.mail import MAX_MAIL_BYTES
from tests.helpers.cli import Cli, base_env, ok, plain
from tests.helpers.dovecot import PASSWORD, USER, Dovecot

pytestmark = pytest.mark.slow  # each test starts a Dovecot (under a second)

FILED = datetime(2026, 12, 5, 10, 31, 7, tzinfo=UTC)


def config(server: Dovecot, **changes: object) -> MailboxConfig:
    values: dict[str, object] = {
        "host": server.host,
        "port": server.port,
        "tls": TlsMode.NONE,
        "username": USER,
        "password": PASSWORD,
        "sent_folder": "Sent",
        "inbox_folder": "INBOX",
        "timeout": 5.0,
    }
    return MailboxConfig(**{**values, **changes})  # type: ignore[arg-type]


def message(mid: str, key: str = "", subject: str = "Purchase order", body: str = "Hello") -> bytes:
    mail = EmailMessage()
    mail["From"], mail["To"] = "orders@shop.example", "orders@supplier.example"
    mail["Subject"], mail["Message-ID"] = subject, f"<{mid}>"
    if key:
        mail["Idempotency-Key"] = key
    mail.set_content(body)
    return mail.as_bytes()


async def test_the_folders_and_their_counts(dovecot):
    dovecot.append("INBOX", message("a@x"))
    async with Mailbox(config(dovecot)).session() as session:
        assert sorted(await session.folders()) == ["INBOX", "Sent"]
        assert (await session.count("INBOX"), await session.count("Sent")) == (1, 0)
        assert await session.uid_validity("INBOX") > 0


async def test_copies_are_found_by_message_id_or_key_two_as_two_none_as_none(dovecot):
    ours = ("send-po.PO-1.v1.abc@shop.example", "send-po:PO-1:v1:abc")
    twice = ("send-po.PO-2.v1.def@shop.example", "send-po:PO-2:v1:def")
    by_key = ("send-po.PO-3.v1.fed@shop.example", "send-po:PO-3:v1:fed")
    missing = ("send-po.PO-4.v1.aaa@shop.example", "send-po:PO-4:v1:aaa")
    longer = ("send-po.PO-10.v1.abc@shop.example", "send-po:PO-10:v1:abc")
    dovecot.append("Sent", message(ours[0], ours[1]), date=FILED)
    dovecot.append("Sent", message(twice[0]), date=FILED)
    dovecot.append("Sent", message(twice[0]), date=FILED)
    dovecot.append("Sent", message("rewritten-by-relay@relay.example", by_key[1]), date=FILED)
    dovecot.append("Sent", message(longer[0], longer[1]), date=FILED)  # not a PO-1 copy
    async with Mailbox(config(dovecot)).session() as session:
        found = await session.find_copies("Sent", [ours, twice, by_key, missing])
    assert found == {
        ours[0]: [SentCopy("Sent", 1, FILED, ours[0])],
        twice[0]: [SentCopy("Sent", 2, FILED, twice[0]), SentCopy("Sent", 3, FILED, twice[0])],
        by_key[0]: [SentCopy("Sent", 4, FILED, by_key[0])],
        missing[0]: [],
    }


async def test_new_messages_after_a_uid_oldest_first_and_never_marked_seen(dovecot):
    for n in range(1, 6):
        read = ("\\Seen",) if n == 4 else ()  # one the team has read already
        dovecot.append("INBOX", message(f"m{n}@x", body=f"reply {n}"), flags=read)
    async with Mailbox(config(dovecot)).session() as session:
        first = await session.new_messages("INBOX", 0, 3)
        rest = await session.new_messages("INBOX", first[-1].uid, 10)
        none = await session.new_messages("INBOX", 5, 10)  # "6:*" still matches UID 5: not new
    assert [m.uid for m in first] == [1, 2, 3] and [m.uid for m in rest] == [4, 5]
    assert none == []
    assert b"reply 1" in first[0].raw and not first[0].truncated
    assert first[0].size == len(first[0].raw) and first[0].internaldate is not None
    assert dovecot.seen("INBOX") == 1  # still only the one read before


async def test_a_message_over_5_mb_comes_as_its_header_only(dovecot):
    big = message("big@x", body="x" * (MAX_MAIL_BYTES + 10))
    dovecot.append("INBOX", big)
    async with Mailbox(config(dovecot)).session() as session:
        [fetched] = await session.new_messages("INBOX", 0, 10)
    assert fetched.truncated and fetched.size > MAX_MAIL_BYTES
    assert b"Message-ID: <big@x>" in fetched.raw and b"xxxx" not in fetched.raw


async def test_a_wrong_password_a_closed_port_and_a_missing_folder_are_mailbox_errors(dovecot):
    with pytest.raises(MailboxError, match="the login was refused"):
        async with Mailbox(config(dovecot, password="wrong")).session():
            pass
    async with Mailbox(config(dovecot)).session() as session:
        with pytest.raises(MailboxError, match="refused a command"):
            await session.new_messages("Nowhere", 0, 10)
    dovecot.stop()
    with pytest.raises(MailboxError, match="connection was refused"):
        async with Mailbox(config(dovecot)).session():
            pass
    dovecot.start()  # back, on the same port and Maildir
    async with Mailbox(config(dovecot)).session() as session:
        assert await session.count("INBOX") == 0


async def test_tls_against_a_plain_server_is_a_mailbox_error(dovecot):
    with pytest.raises(MailboxError):
        async with Mailbox(config(dovecot, tls=TlsMode.TLS, timeout=2.0)).session():
            pass


def test_the_password_is_never_in_the_config_repr(dovecot):
    assert PASSWORD not in repr(config(dovecot))


def test_mailbox_check_says_what_it_found_or_why_not(dovecot, db_url, tmp_path):
    base = base_env(db_url)
    imap = {
        "IMAP_HOST": dovecot.host,
        "IMAP_PORT": str(dovecot.port),
        "IMAP_TLS": "none",
        "IMAP_USERNAME": USER,
        "IMAP_PASSWORD": PASSWORD,
    }
    journal_folder = {"IMAP_SENT_FOLDER": "Journal", "MAIL_JOURNAL_BCC": "journal@shop.example"}
    dovecot.append("INBOX", message("a@x"))
    # Side by side: each command's start-up dominates, and the server has no login penalty.
    runs = [
        Cli(tmp_path, {**base, **imap}),
        Cli(tmp_path, {**base, **imap, **journal_folder}),
        Cli(tmp_path, base),  # no IMAP_HOST
        Cli(tmp_path, {**base, **imap, "IMAP_PASSWORD": "nope"}),
        Cli(tmp_path, {**base, **imap, "IMAP_TLS": "ssl"}),
    ]
    with ThreadPoolExecutor(len(runs)) as pool:
        found, journal, unset, wrong, bad = pool.map(lambda cli: cli("mailbox", "check"), runs)

    assert ok(found).splitlines() == [
        f"connected to {dovecot.host}:{dovecot.port} (none) as {USER}",
        "folders: INBOX, Sent",
        "Sent folder 'Sent': 0 messages",
        "inbox folder 'INBOX': 1 messages",
        "journal: none (MAIL_JOURNAL_BCC unset; the relay's own Sent copies are used)",
    ]
    assert journal.returncode == 1
    assert "Sent folder 'Journal': not found (see IMAP_SENT_FOLDER)" in journal.stdout
    assert "also sent to journal@shop.example" in journal.stdout
    assert unset.returncode == 1 and "IMAP_HOST is not set" in unset.stderr
    assert wrong.returncode == 1 and "the login was refused" in wrong.stderr
    assert PASSWORD not in wrong.stderr + wrong.stdout and "Traceback" not in wrong.stderr
    assert bad.returncode == 1 and "IMAP_TLS" in plain(bad.stderr)

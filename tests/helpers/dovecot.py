"""A throwaway Dovecot IMAP server for the mailbox's tests: Debian's `dovecot` (installed by
`make imap`) started with a configuration of its own on a free 127.0.0.1 port, a Maildir in a
temporary directory, one user with a plain password over an unencrypted connection (the tests'
loopback only), and the folders INBOX and Sent. `stop()` and `start()` take it down and bring
it back on the same port and Maildir, as an outage would.

As root (CI), Dovecot's processes run as Debian's `dovecot` and `dovenull` users and the mail
belongs to `dovecot`; as anyone else, everything runs as that user and its group. Nothing is
chrooted (only root may chroot; the tests' loopback needs no jail). A failed login costs the
next one nothing: the auth penalty (a delay of seconds per client IP, doubling with each
failure) is off, so a test of a wrong password stays fast.
"""

from __future__ import annotations

import contextlib
import grp
import imaplib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path

import pytest

from tests.helpers.net import free_port

USER, PASSWORD = "buyer", "imap-secret"
START_TIMEOUT = 10.0


class Dovecot:
    """One Dovecot instance and its Maildir; started by `start()`."""

    def __init__(self) -> None:
        binary = shutil.which("dovecot") or "/usr/sbin/dovecot"
        if not Path(binary).exists():
            raise RuntimeError("Dovecot is not installed: run `make imap` (Debian's dovecot-imapd)")
        self.binary = binary
        # Not under pytest's tmp_path: Dovecot's own users must be able to reach it.
        self.root = Path(tempfile.mkdtemp(prefix="manzoori-dovecot-"))
        self.root.chmod(0o755)
        self.host, self.port = "127.0.0.1", free_port()
        self._process: subprocess.Popen[bytes] | None = None
        self._configure()

    @property
    def log(self) -> str:
        path = self.root / "dovecot.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def _configure(self) -> None:
        root = self.root
        for sub in ("run", "state", "mail", "home"):
            (root / sub).mkdir()
        if os.geteuid() == 0:
            internal, login = "dovecot", "dovenull"
            mail_user = pwd.getpwnam("dovecot")
            for sub in ("mail", "home"):
                os.chown(root / sub, mail_user.pw_uid, mail_user.pw_gid)
        else:
            internal = login = pwd.getpwuid(os.geteuid()).pw_name
            mail_user = pwd.getpwuid(os.geteuid())
        # The group of the internal sockets (stats, dict, hibernate): Debian's `dovecot` by
        # default, which a user not in it cannot chown a socket to.
        group = grp.getgrgid(mail_user.pw_gid).gr_name
        users = root / "users"
        users.write_text(f"{USER}:{{PLAIN}}{PASSWORD}::::::\n")
        users.chmod(0o644)
        (root / "dovecot.conf").write_text(
            f"""\
base_dir = {root}/run
state_dir = {root}/state
log_path = {root}/dovecot.log
protocols = imap
listen = {self.host}
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login
auth_failure_delay = 0
mail_location = maildir:{root}/mail/%u
first_valid_uid = {mail_user.pw_uid}
default_internal_user = {internal}
default_internal_group = {group}
default_login_user = {login}
passdb {{
  driver = passwd-file
  args = scheme=PLAIN username_format=%u {users}
}}
userdb {{
  driver = static
  args = uid={mail_user.pw_uid} gid={mail_user.pw_gid} home={root}/home/%u
}}
service imap-login {{
  chroot =
  inet_listener imap {{
    address = {self.host}
    port = {self.port}
  }}
  inet_listener imaps {{
    port = 0
  }}
}}
service anvil {{
  chroot =
  # No process may reach the penalty socket, so auth runs without the penalty.
  unix_listener anvil-auth-penalty {{
    mode = 0
  }}
}}
service stats {{
  unix_listener stats-reader {{
    mode = 0666
  }}
  unix_listener stats-writer {{
    mode = 0666
  }}
}}
namespace inbox {{
  inbox = yes
  separator = /
  mailbox Sent {{
    auto = create
    special_use = \\Sent
  }}
}}
"""
        )

    def start(self) -> None:
        """Start it, and wait until it greets on its port."""
        config = str(self.root / "dovecot.conf")
        self._process = subprocess.Popen(
            [self.binary, "-F", "-c", config],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                error = (
                    self._process.stderr.read().decode(errors="replace")
                    if self._process.stderr
                    else ""
                )
                raise RuntimeError(f"dovecot exited at start: {error}\n{self.log}")
            if self._greets():
                return
            time.sleep(0.02)
        raise RuntimeError(f"dovecot did not greet on {self.port} in {START_TIMEOUT} s\n{self.log}")

    def _greets(self) -> bool:
        try:
            with socket.create_connection((self.host, self.port), 0.5) as probe:
                return probe.recv(64).startswith(b"* OK")
        except OSError:
            return False

    def stop(self) -> None:
        """Stop it (its Maildir stays); the port refuses connections until `start()`."""
        process, self._process = self._process, None
        if process is None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:  # its children let go of the port too
            try:
                socket.create_connection((self.host, self.port), 0.2).close()
            except OSError:
                return
            time.sleep(0.02)

    def close(self) -> None:
        """Kill it and remove its Maildir (its children see their master gone and exit)."""
        process, self._process = self._process, None
        if process is not None:
            process.kill()
            process.wait()
        shutil.rmtree(self.root, ignore_errors=True)

    @contextlib.contextmanager
    def client(self) -> Iterator[imaplib.IMAP4]:
        """A plain imaplib connection, logged in: the test's own hands on the mailbox."""
        imap = imaplib.IMAP4(self.host, self.port, timeout=10)
        try:
            imap.login(USER, PASSWORD)
            yield imap
        finally:
            with contextlib.suppress(Exception):
                imap.logout()

    def append(
        self,
        folder: str,
        raw: bytes,
        *,
        date: datetime | None = None,
        flags: Sequence[str] = (),
    ) -> None:
        """File `raw` in `folder` (INTERNALDATE `date`, now by default; `flags` such as
        "\\Seen"), as a relay files its copy or a supplier's reply arrives."""
        with self.client() as imap:
            when = imaplib.Time2Internaldate(date.timestamp() if date else time.time())
            listed = f"({' '.join(flags)})" if flags else None
            status, data = imap.append(folder, listed, when, raw)
            assert status == "OK", data

    def count(self, folder: str) -> int:
        """How many messages `folder` holds."""
        with self.client() as imap:
            status, data = imap.select(folder, readonly=True)
            assert status == "OK", data
            return int(data[0] or 0)

    def seen(self, folder: str) -> int:
        """How many messages of `folder` are flagged \\Seen."""
        with self.client() as imap:
            imap.select(folder, readonly=True)
            status, data = imap.search(None, "SEEN")
            assert status == "OK", data
            return len((data[0] or b"").split())


@pytest.fixture
def dovecot() -> Iterator[Dovecot]:
    """A running Dovecot with an empty INBOX and Sent, removed after the test."""
    server = Dovecot()
    try:
        server.start()
        yield server
    finally:
        server.close()

"""Caddy in front of a test's front doors: the shipped deploy/Caddyfile, pointed at the test's
ports with Caddy's internal CA (`tls internal`), run as Debian's `caddy` (`make proxy`)."""

from __future__ import annotations

import contextlib
import shutil
import socket
import ssl
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

DEPLOY = Path(__file__).parents[2] / "deploy"


def caddyfile_for(tmp: Path, port: int, upstreams: list[int]) -> Path:
    """The shipped Caddyfile, pointed at this test: its site on 127.0.0.1:`port` with Caddy's
    internal CA, its storage and log in `tmp`, its upstreams the test's front doors. Every
    route is the shipped one."""
    text = (DEPLOY / "Caddyfile").read_text()
    text = text.replace(
        "{\n\t# Where Caddy",
        "{\n\tadmin off\n\tskip_install_trust\n\tauto_https disable_redirects\n\t# Where Caddy",
    )
    text = text.replace("/var/lib/caddy/.local/share/caddy", str(tmp / "caddy"))
    text = text.replace("/var/log/caddy/manzoori.log", str(tmp / "access.log"))
    text = text.replace("{$MANZOORI_HOST} {", f"https://127.0.0.1:{port} {{\n\ttls internal")
    text = text.replace(
        "reverse_proxy 127.0.0.1:8080 127.0.0.1:8081",
        "reverse_proxy " + " ".join(f"127.0.0.1:{p}" for p in upstreams),
    )
    path = tmp / "Caddyfile"
    path.write_text(text)
    return path


@contextlib.contextmanager
def caddy(config: Path, port: int) -> Iterator[Path]:
    """Caddy running `config` until the block ends; the root certificate of its CA."""
    binary = shutil.which("caddy")
    if binary is None:
        raise RuntimeError("Caddy is not installed: run `make proxy` (Debian's caddy)")
    log = config.with_name("caddy.log").open("wb")
    process = subprocess.Popen(
        [binary, "run", "--config", str(config), "--adapter", "caddyfile"],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    root = config.parent / "caddy" / "pki" / "authorities" / "local" / "root.crt"
    try:
        deadline = time.monotonic() + 20
        while not root.exists() or not _serves_tls(port, root):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(config.with_name("caddy.log").read_text()[-2000:])
            time.sleep(0.05)
        yield root
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def _serves_tls(port: int, root: Path) -> bool:
    """Whether Caddy completes a TLS handshake on `port` with a certificate its CA signed: a
    port that listens may still be waiting for its certificate."""
    context = ssl.create_default_context(cafile=str(root))
    try:
        with (
            socket.create_connection(("127.0.0.1", port), 0.5) as raw,
            context.wrap_socket(raw, server_hostname="127.0.0.1"),
        ):
            return True
    except (OSError, ssl.SSLError):
        return False

"""deploy/Caddyfile in front of two web front doors over HTTPS (Caddy's `tls internal`, its own
CA trusted by the client): the supplier's page and /healthz through the proxy, /metrics never
public, and a front door that stops is left out while the other answers. The unit files pass
`systemd-analyze verify` where the machine has it."""

from __future__ import annotations

import contextlib
import re
import shutil
import socket
import ssl
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from bot.clock import utcnow
from bot.web.app import build_web, serving_web
from bot.web.health import Heartbeats
from bot.web.metrics import Metrics
from core.suppliers.links import link_for, sign_link
from tests.helpers import suppliers
from tests.helpers.bot import settings_for
from tests.helpers.factories import make_draft
from tests.helpers.net import free_port

pytestmark = pytest.mark.slow  # Caddy is a process
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


@contextlib.asynccontextmanager
async def front_doors(store, db_url: str, ports: list[int]) -> AsyncIterator[list]:
    """One web front door per port on the one store, as two `manzoori run` would serve."""
    async with contextlib.AsyncExitStack() as stack:
        public = "https://127.0.0.1"
        settings = [settings_for(db_url, web_port=p, manzoori_public_url=public) for p in ports]
        secret = settings[0].manzoori_secret_key
        for one in settings:
            same = one.model_copy(update={"manzoori_secret_key": secret})
            app = build_web(same, store, Heartbeats(), Metrics())
            await stack.enter_async_context(serving_web(app, same))
        yield settings


async def test_the_shipped_caddyfile_serves_https_to_either_front_door(store, db_url, tmp_path):
    port, ports = free_port(), [free_port(), free_port()]
    config = caddyfile_for(tmp_path, port, ports)
    async with front_doors(store, db_url, ports) as settings:
        effect = await suppliers.sent(store, make_draft(), utcnow(), settings[0].rules())
        token = sign_link(settings[0].secret, link_for(effect, 30))
        with caddy(config, port) as root:
            base = f"https://127.0.0.1:{port}"
            async with httpx.AsyncClient(
                verify=ssl.create_default_context(cafile=root), timeout=10
            ) as client:
                for _ in range(4):  # round robin: both front doors answer alike
                    health = await client.get(f"{base}/healthz")
                    assert health.status_code == 200 and health.json()["status"] == "ok"
                page = await client.get(f"{base}/s/{token}")
                assert page.status_code == 200 and "PO-2026-001" in page.text
                assert (await client.get(f"{base}/metrics")).status_code == 404
                assert (await client.get(f"{base}/metrics/x")).status_code == 404
    log = (tmp_path / "access.log").read_text()
    assert token not in log and "/s/REDACTED" in log  # the supplier's credential is not logged
    assert re.search(r'"status":\s*404', log)


async def test_a_front_door_that_stops_is_left_out(store, db_url, tmp_path):
    port, ports = free_port(), [free_port(), free_port()]
    config = caddyfile_for(tmp_path, port, ports)
    async with front_doors(store, db_url, ports[:1]):  # the second never came up
        with caddy(config, port) as root:
            base = f"https://127.0.0.1:{port}"
            async with httpx.AsyncClient(
                verify=ssl.create_default_context(cafile=root), timeout=10
            ) as client:
                answers = [(await client.get(f"{base}/healthz")).status_code for _ in range(6)]
    assert answers == [200] * 6


def test_the_units_pass_systemd_analyze_verify(tmp_path):
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("this machine has no systemd-analyze")
    program = shutil.which("manzoori")
    assert program is not None
    units = []
    named = (
        ("manzoori.service", "manzoori.service"),
        ("manzoori@.service", "manzoori@8081.service"),
    )
    for name, unit in named:
        text = (DEPLOY / name).read_text().replace("/opt/manzoori/.venv/bin/manzoori", program)
        (tmp_path / name).write_text(text)
        units.append(str(tmp_path / unit))
    checked = subprocess.run(
        [analyze, "verify", "--man=no", *units], capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0 and checked.stdout == checked.stderr == "", checked.stderr

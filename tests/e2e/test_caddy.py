"""deploy/Caddyfile in front of two web front doors over HTTPS (Caddy's `tls internal`, its own
CA trusted by the client): the supplier's page and /healthz through the proxy, /metrics never
public, and a front door that stops is left out while the other answers. The unit files pass
`systemd-analyze verify` where the machine has it."""

from __future__ import annotations

import contextlib
import re
import shutil
import ssl
import subprocess
from collections.abc import AsyncIterator

import httpx
import pytest

from bot.clock import utcnow
from bot.web.app import build_web, serving_web
from bot.web.health import Heartbeats
from bot.web.metrics import Metrics
from core.suppliers.links import link_for, sign_link
from tests.helpers import suppliers
from tests.helpers.bot import settings_for
from tests.helpers.caddy import DEPLOY, caddy, caddyfile_for
from tests.helpers.factories import make_draft
from tests.helpers.net import free_port

pytestmark = pytest.mark.slow  # Caddy is a process


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

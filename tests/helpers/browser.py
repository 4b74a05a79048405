"""The `phone` fixture: a real Chromium (Debian's, at /usr/bin/chromium) driven by Playwright, as
a browser context the size of a phone, for the Mini App's tests.

Playwright's own browser download is not reachable here, so it launches the executable that
`make browser` installs from Debian's packages (MANZOORI_CHROMIUM overrides the path). The
browser is a process: a test that takes `phone` must be marked `slow` (tests/conftest.py's
guard fails it otherwise), and `make test-fast` leaves it out.

    from tests.helpers.browser import phone_fixture  # noqa: F401 - provides the `phone` fixture
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from playwright.async_api import BrowserContext, ViewportSize, async_playwright

CHROMIUM = Path(os.environ.get("MANZOORI_CHROMIUM", "/usr/bin/chromium"))
# An iPhone 12–15's CSS viewport, the phone size the issue names; scale 2 for sharp screenshots.
PHONE = ViewportSize(width=390, height=844)
SCALE = 2


@asynccontextmanager
async def phone_context(*args: str) -> AsyncIterator[BrowserContext]:
    """A headless Chromium launched with the command-line `args`, and a fresh browser context
    in it at phone size with touch; both closed when the block ends. The benches' phone
    (bench/miniapp_page.py, bench/catalogue_page.py) is this one too."""
    if not CHROMIUM.exists():
        pytest.fail(f"no Chromium at {CHROMIUM}: `make browser` installs Debian's chromium")
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=str(CHROMIUM), args=args)
        try:
            context = await browser.new_context(
                viewport=PHONE,
                device_scale_factor=SCALE,
                is_mobile=True,
                has_touch=True,
            )
            yield context
            await context.close()
        finally:
            await browser.close()


@pytest.fixture(name="phone")
async def phone_fixture() -> AsyncIterator[BrowserContext]:
    """A fresh, headless browser context at phone size with touch, closed after the test."""
    async with phone_context() as context:
        yield context

"""The demo's approval card as an approver's phone shows it: the card the demo's bot sent,
drawn as Telegram draws it (tests/helpers/telegram_page.py) in a real browser at phone size,
with every character and all four buttons in view.

MANZOORI_SCREENSHOTS=docs also writes it to docs/card-en.png (README, docs/approver.md)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from playwright.async_api import BrowserContext, expect

from bot.dev import demo
from bot.dev.botapi import Message
from store.sql import SqlStore
from tests.helpers.browser import PHONE, phone_fixture  # noqa: F401 - provides the `phone` fixture
from tests.helpers.telegram_page import entity_html, message_page

SCREENSHOTS = os.environ.get("MANZOORI_SCREENSHOTS")
REPO = Path(__file__).resolve().parents[2]


async def demo_cards(monkeypatch: pytest.MonkeyPatch, folder: Path) -> list[Message]:
    """The demo, run as `make demo` runs it; the cards its bot sent the approver, in order."""
    stories: list[demo.Story] = []
    told = demo.Story.run

    async def telling(story: demo.Story, store: SqlStore) -> None:
        stories.append(story)  # to read its Bot API emulator's messages once it is over
        await told(story, store)

    monkeypatch.setattr(demo.Story, "run", telling)
    await demo.play(folder)
    [story] = stories
    sent = story.emu.messages(demo.APPROVER)
    return [m for m in sent if "approval needed" in (m.versions[0].text or "")]


def test_entities_are_drawn_on_the_characters_they_cover() -> None:
    # 🧾 is two UTF-16 code units: the bold starts after it, as the Bot API counts.
    entities = [
        {"type": "bold", "offset": 3, "length": 12},
        {"type": "italic", "offset": 10, "length": 5},
        {"type": "code", "offset": 16, "length": 3},
    ]
    assert entity_html("🧾 PO-2026-0001 SKU <&>", entities) == (
        "🧾 <b>PO-2026<i>-0001</i></b> <code>SKU</code> &lt;&amp;&gt;"
    )


@pytest.mark.slow  # the demo's bot and a browser
async def test_the_demos_card_reads_whole_on_a_phone(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, phone: BrowserContext
) -> None:
    cards = await demo_cards(monkeypatch, tmp_path / "demo")
    assert len(cards) == 2
    # The rejected PO's card as Ali first saw it: three lines, a note, a flag, four buttons.
    [card] = [c for c in cards if "Hall Road Traders" in (c.versions[0].text or "")]
    sent = card.versions[0]
    page = await phone.new_page()
    await page.set_content(message_page(sent, date=card.date, bot_name="Manzoori"))
    await expect(page.get_by_test_id("text")).to_have_text(sent.text or "")
    await expect(page.locator("b").first).to_have_text(demo.PO.search(sent.text or "")[0])
    await expect(page.locator("i")).to_have_text("for the Liberty branch")  # the sheet's note
    buttons = page.get_by_role("button")
    await expect(buttons).to_have_text(["✅ Approve", "❌ Reject", "📄 Details", "🔍 Review"])
    for n in range(4):
        await expect(buttons.nth(n)).to_be_in_viewport()
    assert await page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    if SCREENSHOTS:
        message = page.get_by_test_id("message")
        box = await message.bounding_box()
        assert box is not None
        height = box["y"] + box["height"] + 16  # the chat down to just below the buttons
        await page.screenshot(
            path=str(REPO / SCREENSHOTS / "card-en.png"),
            clip={"x": 0, "y": 0, "width": PHONE["width"], "height": height},
        )

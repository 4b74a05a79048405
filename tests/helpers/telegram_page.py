"""A bot's message drawn as Telegram's phone app draws it in a private chat, as one HTML page:
the text with its entities (bold, italic, code…), the time, and the inline keyboard below it.

The Bot API emulator keeps what the bot sent (text, entities and reply markup, every version),
but has no client to show it; the docs' picture of a card (docs/card-en.png) is this page in
Chromium. Only the drawing is ours: every character, entity and button comes from the message.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from html import escape
from itertools import pairwise
from typing import Any
from zoneinfo import ZoneInfo

from bot.dev.botapi.snapshots import Version

# The HTML each entity type is drawn with; a type not listed is drawn as plain text.
_TAGS = {
    "bold": ("<b>", "</b>"),
    "italic": ("<i>", "</i>"),
    "underline": ("<u>", "</u>"),
    "strikethrough": ("<s>", "</s>"),
    "code": ("<code>", "</code>"),
    "pre": ("<pre>", "</pre>"),
    "spoiler": ('<span class="spoiler">', "</span>"),
    "blockquote": ("<blockquote>", "</blockquote>"),
}
# The people the bot writes to are in Pakistan; a message's time is shown in theirs.
KARACHI = ZoneInfo("Asia/Karachi")

# Telegram's light theme on a phone: the wallpaper's green, white bubbles, translucent buttons.
_STYLE = """
* { box-sizing: border-box; margin: 0; }
body { background: #99ba92; font: 15px/1.35 "Noto Sans", sans-serif; color: #000;
       -webkit-font-smoothing: antialiased; }
header { display: flex; align-items: center; gap: 12px; padding: 10px 14px; background: #517da2;
         color: #fff; }
header .avatar { width: 38px; height: 38px; border-radius: 50%; background: #f9a825;
                 display: grid; place-items: center; font-weight: 600; font-size: 17px; }
header .name { font-weight: 600; font-size: 16px; }
header .status { font-size: 13px; opacity: .8; }
main { padding: 12px 8px 16px; }
.message { width: fit-content; max-width: 94%; }
.bubble { background: #fff; border-radius: 14px 14px 14px 4px; padding: 7px 10px 6px;
          box-shadow: 0 1px 1px rgba(0,0,0,.15); }
.text { white-space: pre-wrap; overflow-wrap: anywhere; }
.text code { font: 13.5px "Noto Sans Mono", monospace; color: #d04d4d; }
.time { text-align: right; margin-top: 1px; font-size: 11.5px; color: #8b9aa6; }
.keyboard { display: flex; flex-direction: column; gap: 4px; margin-top: 4px; }
.row { display: flex; gap: 4px; }
.row button { flex: 1 1 0; min-width: 0; border: 0; border-radius: 8px; padding: 10px 6px;
              background: rgba(62, 92, 62, .42); color: #fff; font: 500 14px "Noto Sans",
              sans-serif; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
"""


def entity_html(text: str, entities: Iterable[Mapping[str, Any]]) -> str:
    """The text as HTML, each entity drawn with its tag; offsets and lengths count UTF-16 code
    units, as the Bot API's do."""
    units = text.encode("utf-16-le")
    spans = sorted(
        ((int(e["offset"]), int(e["offset"]) + int(e["length"]), str(e["type"])) for e in entities),
        key=lambda span: (span[0], -span[1]),  # the outer of two spans that start together first
    )
    cuts = sorted({0, len(units) // 2, *(p for s in spans for p in s[:2])})
    out: list[str] = []
    open_: list[tuple[int, int, str]] = []
    for start, end in pairwise(cuts):
        while open_ and open_[-1][1] <= start:  # Telegram's entities nest: close innermost first
            out.append(_TAGS.get(open_.pop()[2], ("", ""))[1])
        for span in spans:
            if span[0] == start:
                out.append(_TAGS.get(span[2], ("", ""))[0])
                open_.append(span)
        out.append(escape(units[start * 2 : end * 2].decode("utf-16-le"), quote=False))
    out.extend(_TAGS.get(span[2], ("", ""))[1] for span in reversed(open_))
    return "".join(out)


def message_page(version: Version, *, date: int, bot_name: str) -> str:
    """A whole page: the chat's header, then one version of a message of the bot (an emulator
    snapshot's `text`, `entities` and `reply_markup`) sent at `date` (Unix time)."""
    keyboard = (version.reply_markup or {}).get("inline_keyboard", [])
    rows = "".join(
        '<div class="row">'
        + "".join(f"<button>{escape(button['text'])}</button>" for button in row)
        + "</div>"
        for row in keyboard
    )
    at = datetime.fromtimestamp(date, KARACHI).strftime("%H:%M")
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<style>{_STYLE}</style></head><body>"
        f'<header><div class="avatar">{escape(bot_name[:1])}</div><div>'
        f'<div class="name">{escape(bot_name)}</div><div class="status">bot</div></div></header>'
        '<main><div class="message" data-testid="message"><div class="bubble">'
        f'<div class="text" data-testid="text">{entity_html(version.text or "", version.entities)}'
        f'</div><div class="time">{at}</div></div>'
        f'<div class="keyboard">{rows}</div></div></main></body></html>'
    )

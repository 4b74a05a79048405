"""Text: TDLib's HTML and MarkdownV2 parsers, then the trimming and limits of fix_formatted_text."""

from __future__ import annotations

import re
from typing import Any

MAX_TEXT_LENGTH = 4096  # Unicode code points, counted after entity parsing (TDLib's utf8_length)
MAX_CAPTION_LENGTH = 1024


class EntityParseError(Exception):
    """The text is not valid for its parse mode; str() is TDLib's message."""


_HTML_TAGS = frozenset(
    {
        "a",
        "b",
        "strong",
        "i",
        "em",
        "s",
        "strike",
        "del",
        "u",
        "ins",
        "tg-spoiler",
        "tg-emoji",
        "span",
        "pre",
        "code",
        "blockquote",
    }
)
_SIMPLE_HTML = {
    "b": "bold",
    "strong": "bold",
    "i": "italic",
    "em": "italic",
    "u": "underline",
    "ins": "underline",
    "s": "strikethrough",
    "strike": "strikethrough",
    "del": "strikethrough",
    "tg-spoiler": "spoiler",
    "span": "spoiler",
}


def _is_space(c: int) -> bool:
    # TDLib's is_space counts NUL, which is also what reading past the end returns.
    return c in (0x20, 0x09, 0x0A, 0x0D, 0x0B, 0x00)


def _is_alnum(c: int) -> bool:
    return 0x30 <= c <= 0x39 or 0x41 <= c <= 0x5A or 0x61 <= c <= 0x7A


def _utf16_units(lead: int) -> int:
    """UTF-16 code units of the character that starts with this UTF-8 byte (0 for a tail)."""
    if 0x80 <= lead < 0xC0:
        return 0
    return 2 if lead >= 0xF0 else 1


def utf16_len(text: str) -> int:
    """Length in UTF-16 code units, the unit of entity offsets."""
    return len(text.encode("utf-16-le")) // 2


def _decode_html_entity(data: bytes, pos: int) -> tuple[int, int]:
    """TDLib's decode_html_entity: (code point, end) or (0, pos) if none starts at pos."""

    def at(i: int) -> int:
        return data[i] if i < len(data) else 0

    end = pos + 1
    code = 0
    if at(pos + 1) == ord("#"):
        end += 1
        if at(pos + 2) == ord("x"):
            end += 1
            while chr(at(end)) in "0123456789abcdefABCDEF" and at(end):
                code = code * 16 + int(chr(at(end)), 16)
                end += 1
        else:
            while ord("0") <= at(end) <= ord("9"):
                code = code * 10 + at(end) - ord("0")
                end += 1
        if code == 0 or code >= 0x10FFFF or end - pos >= 10:
            return 0, pos
    else:
        while 0x41 <= at(end) <= 0x5A or 0x61 <= at(end) <= 0x7A:
            end += 1
        code = {b"lt": 0x3C, b"gt": 0x3E, b"amp": 0x26, b"quot": 0x22}.get(data[pos + 1 : end], 0)
        if code == 0:
            return 0, pos
    return code, end + 1 if at(end) == ord(";") else end


def parse_html(text: str, *, strict_ampersand: bool = True) -> tuple[str, list[dict[str, Any]]]:
    """Plain text and entities of Telegram HTML, or EntityParseError with TDLib's message."""
    data = text.encode("utf-8")
    n = len(data)

    def at(i: int) -> int:
        return data[i] if i < n else 0

    out = bytearray()
    entities: list[dict[str, Any]] = []
    nested: list[tuple[str, str, int, int]] = []  # tag, argument, utf16 offset, byte in out
    u16 = 0
    bad_surrogate = False
    i = 0
    while i < n:
        c = data[i]
        if c == ord("&"):
            code, end = _decode_html_entity(data, i)
            if code:
                u16 += 2 if code > 0xFFFF else 1
                if 0xD800 <= code <= 0xDFFF:
                    bad_surrogate = True
                    code = 0xFFFD
                out += chr(code).encode("utf-8")
                i = end
                continue
            if strict_ampersand:
                raise EntityParseError(
                    f'Character "&" at byte offset {i} starts no entity; escape it as "&amp;" '
                    "(the emulator is stricter than Telegram here)"
                )
        if c != ord("<"):
            u16 += _utf16_units(c)
            out.append(c)
            i += 1
            continue
        begin = i
        i += 1
        if at(i) != ord("/"):
            while not _is_space(at(i)) and at(i) != ord(">"):
                i += 1
            if at(i) == 0:
                raise EntityParseError(f"Unclosed start tag at byte offset {begin}")
            tag = data[begin + 1 : i].decode("utf-8", "replace").lower()
            if tag not in _HTML_TAGS:
                raise EntityParseError(f'Unsupported start tag "{tag}" at byte offset {begin}')
            argument = ""
            while at(i) != ord(">"):
                while at(i) != 0 and _is_space(at(i)):
                    i += 1
                if at(i) == ord(">"):
                    break
                attr_begin = i
                while not _is_space(at(i)) and at(i) not in b"=>/\"'":
                    i += 1
                attribute = data[attr_begin:i].decode("utf-8", "replace")
                if not attribute:
                    raise EntityParseError(
                        f'Empty attribute name in the tag "{tag}" at byte offset {begin}'
                    )
                while at(i) != 0 and _is_space(at(i)):
                    i += 1
                if at(i) != ord("="):
                    if at(i) == 0:
                        raise EntityParseError(f'Unclosed start tag "{tag}" at byte offset {begin}')
                    if tag == "blockquote" and attribute == "expandable":
                        argument = "1"
                    continue
                i += 1
                while at(i) != 0 and _is_space(at(i)):
                    i += 1
                if at(i) == 0:
                    raise EntityParseError(f'Unclosed start tag "{tag}" at byte offset {begin}')
                value, i = _html_attribute_value(data, i)
                if at(i) == 0:
                    raise EntityParseError(f"Unclosed start tag at byte offset {begin}")
                if (tag, attribute) in (("a", "href"), ("tg-emoji", "emoji-id")):
                    argument = value
                elif tag == "code" and attribute == "class" and value.startswith("language-"):
                    argument = value[9:]
                elif tag == "span" and attribute == "class" and value.startswith("tg-"):
                    argument = value[3:]
                elif tag == "blockquote" and attribute == "expandable":
                    argument = "1"
            if tag == "span" and argument != "spoiler":
                raise EntityParseError(
                    f'Tag "span" must have class "tg-spoiler" at byte offset {begin}'
                )
            nested.append((tag, argument, u16, len(out)))
            i += 1
            continue
        if not nested:
            raise EntityParseError(f"Unexpected end tag at byte offset {begin}")
        while not _is_space(at(i)) and at(i) != ord(">"):
            i += 1
        end_tag = data[begin + 2 : i].decode("utf-8", "replace").lower()
        while _is_space(at(i)) and at(i) != 0:
            i += 1
        if at(i) != ord(">"):
            raise EntityParseError(f"Unclosed end tag at byte offset {begin}")
        tag, argument, offset, out_pos = nested[-1]
        if end_tag and end_tag != tag:
            raise EntityParseError(
                f'Unmatched end tag at byte offset {begin}, expected "</{tag}>", '
                f'found "</{end_tag}>"'
            )
        if u16 > offset:
            _add_html_entity(entities, tag, argument, offset, u16 - offset, bytes(out[out_pos:]))
        nested.pop()
        i += 1
    if nested:
        raise EntityParseError(f'Can\'t find end tag corresponding to start tag "{nested[-1][0]}"')
    for entity in entities:
        if entity["type"] == "code":
            entity.pop("language", None)  # a language counts only inside pre
    if bad_surrogate:
        raise EntityParseError(
            "Text contains invalid Unicode characters after decoding HTML entities, check for "
            "unmatched surrogate code units"
        )
    return out.decode("utf-8"), sorted_entities(entities)


def _html_attribute_value(data: bytes, i: int) -> tuple[str, int]:
    def at(j: int) -> int:
        return data[j] if j < len(data) else 0

    if at(i) not in b"'\"":
        token_begin = i
        while _is_alnum(at(i)) or at(i) in b".-":
            i += 1
        if not _is_space(at(i)) and at(i) != ord(">"):
            raise EntityParseError(f"Unexpected end of name token at byte offset {token_begin}")
        return data[token_begin:i].decode("utf-8", "replace").lower(), i
    quote = at(i)
    i += 1
    value = bytearray()
    while at(i) != quote and at(i) != 0:
        if at(i) == ord("&"):
            code, end = _decode_html_entity(data, i)
            if code:
                value += chr(code).encode("utf-8", "replace")
                i = end
                continue
        value.append(at(i))
        i += 1
    if at(i) == quote:
        i += 1
    return value.decode("utf-8", "replace"), i


def _add_html_entity(
    entities: list[dict[str, Any]],
    tag: str,
    argument: str,
    offset: int,
    length: int,
    inner: bytes,
) -> None:
    last = entities[-1] if entities else None
    same_span = last is not None and last["offset"] == offset and last["length"] == length
    if tag in _SIMPLE_HTML:
        entities.append({"type": _SIMPLE_HTML[tag], "offset": offset, "length": length})
    elif tag == "tg-emoji":
        if not argument.isdigit() or not 0 < int(argument) < 2**63:
            raise EntityParseError("Invalid custom emoji identifier specified")
        entities.append(
            {
                "type": "custom_emoji",
                "offset": offset,
                "length": length,
                "custom_emoji_id": argument,
            }
        )
    elif tag == "a":
        url = argument or inner.decode("utf-8")
        if url:  # Telegram drops a link it cannot use rather than failing
            entities.append({"type": "text_link", "offset": offset, "length": length, "url": url})
    elif tag == "pre":
        if last is not None and same_span and last["type"] == "code" and "language" in last:
            last["type"] = "pre"
        else:
            entities.append({"type": "pre", "offset": offset, "length": length})
    elif tag == "code":
        if last is not None and same_span and last["type"] == "pre" and argument:
            last["language"] = argument
        else:
            entity = {"type": "code", "offset": offset, "length": length}
            if argument:
                entity["language"] = argument
            entities.append(entity)
    elif tag == "blockquote":
        kind = "expandable_blockquote" if argument else "blockquote"
        entities.append({"type": kind, "offset": offset, "length": length})


_MDV2_RESERVED = b"_*[]()~`>#+-=|{}.!"
_MDV2_NAMES = {
    "bold": "Bold",
    "italic": "Italic",
    "underline": "Underline",
    "strikethrough": "Strikethrough",
    "spoiler": "Spoiler",
    "code": "Code",
    "pre": "Pre",
    "pre_code": "PreCode",
    "text_link": "TextUrl",
    "custom_emoji": "CustomEmoji",
}


def parse_markdown_v2(text: str) -> tuple[str, list[dict[str, Any]]]:
    """Plain text and entities of MarkdownV2 (TDLib's parser, without block quotes)."""
    data = text.encode("utf-8")
    n = len(data)

    def at(i: int) -> int:
        return data[i] if i < n else 0

    def reserved(c: int) -> EntityParseError:
        return EntityParseError(
            f"Character '{chr(c)}' is reserved and must be escaped with the preceding '\\'"
        )

    out = bytearray()
    entities: list[dict[str, Any]] = []
    nested: list[list[Any]] = []  # kind, argument, utf16 offset, byte offset in text, byte in out
    u16 = 0
    i = 0
    while i < n:
        c = data[i]
        if c == ord("\\") and 0 < at(i + 1) <= 126:
            out.append(data[i + 1])
            u16 += 1
            i += 2
            continue
        in_code = bool(nested) and nested[-1][0] in ("code", "pre", "pre_code")
        if c not in (b"`" if in_code else _MDV2_RESERVED):
            u16 += _utf16_units(c)
            out.append(c)
            i += 1
            continue
        closing = False
        if nested:
            kind = nested[-1][0]
            closing = {
                "bold": c == ord("*"),
                "italic": c == ord("_") and at(i + 1) != ord("_"),
                "code": c == ord("`"),
                "pre": c == ord("`") and at(i + 1) == ord("`") and at(i + 2) == ord("`"),
                "pre_code": c == ord("`") and at(i + 1) == ord("`") and at(i + 2) == ord("`"),
                "text_link": c == ord("]"),
                "underline": c == ord("_") and at(i + 1) == ord("_"),
                "strikethrough": c == ord("~"),
                "spoiler": c == ord("|") and at(i + 1) == ord("|"),
                "custom_emoji": c == ord("]"),
            }[kind]
        if not closing:
            byte_offset = i
            argument = ""
            if c == ord("_"):
                kind = "underline" if at(i + 1) == ord("_") else "italic"
                i += kind == "underline"
            elif c == ord("*"):
                kind = "bold"
            elif c == ord("~"):
                kind = "strikethrough"
            elif c == ord("|") and at(i + 1) == ord("|"):
                kind = "spoiler"
                i += 1
            elif c == ord("["):
                kind = "text_link"
            elif c == ord("`") and at(i + 1) == ord("`") and at(i + 2) == ord("`"):
                i += 3
                kind = "pre"
                language_end = i
                while not _is_space(at(language_end)) and at(language_end) != ord("`"):
                    language_end += 1
                if i != language_end and language_end < n and at(language_end) != ord("`"):
                    kind = "pre_code"
                    argument = data[i:language_end].decode("utf-8", "replace")
                    i = language_end
                if at(i) in b"\r\n" and at(i):
                    pair = at(i + 1) in b"\r\n" and at(i + 1) and at(i) != at(i + 1)
                    i += 2 if pair else 1
                i -= 1
            elif c == ord("`"):
                kind = "code"
            elif c == ord("!") and at(i + 1) == ord("["):
                kind = "custom_emoji"
                i += 1
            else:
                raise reserved(c)
            nested.append([kind, argument, u16, byte_offset, len(out)])
            i += 1
            continue
        kind, argument, offset, _, out_pos = nested[-1]
        skip = u16 == offset
        url = ""
        if kind in ("underline", "spoiler"):
            i += 1
        elif kind in ("pre", "pre_code"):
            i += 2
        elif kind in ("text_link", "custom_emoji"):
            if at(i + 1) != ord("("):
                if kind == "custom_emoji":
                    raise EntityParseError("Custom emoji entity must contain a tg://emoji URL")
                url = out[out_pos:].decode("utf-8")
            else:
                i += 2
                url_begin = i
                raw = bytearray()
                while i < n and data[i] != ord(")"):
                    if data[i] == ord("\\") and 0 < at(i + 1) <= 126:
                        raw.append(data[i + 1])
                        i += 2
                        continue
                    raw.append(data[i])
                    i += 1
                if at(i) != ord(")"):
                    raise EntityParseError(f"Can't find end of a URL at byte offset {url_begin}")
                url = raw.decode("utf-8", "replace")
            if kind == "custom_emoji":
                emoji_id = url.removeprefix("tg://emoji?id=")
                if emoji_id == url or not emoji_id.isdigit() or int(emoji_id) <= 0:
                    raise EntityParseError("Invalid custom emoji identifier specified")
                argument = emoji_id
            elif not url:
                skip = True
        if not skip:
            entity: dict[str, Any] = {"offset": offset, "length": u16 - offset}
            if kind == "pre_code":
                entity.update(type="pre", language=argument)
            elif kind == "text_link":
                entity.update(type="text_link", url=url)
            elif kind == "custom_emoji":
                entity.update(type="custom_emoji", custom_emoji_id=argument)
            else:
                entity["type"] = kind
            entities.append(entity)
        nested.pop()
        i += 1
    if nested:
        kind, _, _, byte_offset, _ = nested[-1]
        raise EntityParseError(
            f"Can't find end of {_MDV2_NAMES[kind]} entity at byte offset {byte_offset}"
        )
    return out.decode("utf-8"), sorted_entities(entities)


def sorted_entities(entities: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(entities, key=lambda e: (e["offset"], -e["length"]))


_TRIM = " \t\n\r\v\f"


def finish_text(
    text: str, entities: list[dict[str, Any]], *, limit: int, allow_empty: bool
) -> tuple[str, list[dict[str, Any]]]:
    """Trim surrounding white space as Telegram does, clip the entities, check the length.

    Raises ValueError("empty") or ValueError("long") for the caller to word.
    """
    stripped = text.lstrip(_TRIM)
    shift = utf16_len(text) - utf16_len(stripped)
    stripped = stripped.rstrip(_TRIM)
    total = utf16_len(stripped)
    clipped = []
    for entity in entities:
        start = max(entity["offset"] - shift, 0)
        end = min(entity["offset"] - shift + entity["length"], total)
        if end > start:
            clipped.append({**entity, "offset": start, "length": end - start})
    if not stripped and not allow_empty:
        raise ValueError("empty")
    if len(stripped) > limit:
        raise ValueError("long")
    return stripped, clipped


def bot_command_entities(text: str) -> list[dict[str, Any]]:
    """The bot_command entities Telegram marks in a user's text."""
    found = []
    for match in re.finditer(r"(?<![\w/])/[A-Za-z0-9_]{1,64}(?:@[A-Za-z0-9_]{3,32})?", text):
        offset = utf16_len(text[: match.start()])
        found.append({"type": "bot_command", "offset": offset, "length": utf16_len(match[0])})
    return found

"""A CSV file as rows: UTF-8 or Windows-1252, comma, semicolon or tab, every record numbered as a
spreadsheet shows it."""

from __future__ import annotations

import csv
import io
import re

from bot.files.limits import (
    CELL_LIMIT,
    CELL_TOO_LONG,
    MALFORMED_CSV,
    MAX_CELL_CHARS,
    MIXED_ENCODING,
    UNCLOSED_QUOTE,
    UNDECODABLE,
)
from core.drafting.tables import Row, Table
from core.errors import UnreadableSheet

UTF8_BOM = b"\xef\xbb\xbf"
# Excel's "Unicode Text" is UTF-16: full of NUL bytes, but the advice to save as UTF-8 fits.
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
# Control bytes are the same in UTF-8 and Windows-1252; text never holds any but tab, CR, LF.
_CONTROL_BYTES = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_DELIMITERS = (",", ";", "\t")
# A well-formed UTF-8 sequence beyond ASCII: a file that holds one is UTF-8, whatever else is in it.
_UTF8_SEQUENCE = re.compile(
    rb"[\xc2-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}|[\xf0-\xf4][\x80-\xbf]{3}"
)


def read_csv(data: bytes, not_text: str, keep: int | None) -> Table:
    """CSV bytes as rows numbered by record; `not_text` is the sentence for binary content;
    after `keep` non-empty rows (None: no limit) reading stops and the table is marked cut."""
    if data.startswith(_UTF16_BOMS):
        raise UnreadableSheet(UNDECODABLE)
    if _CONTROL_BYTES.search(data):
        raise UnreadableSheet(not_text)
    text = _decode(data.removeprefix(UTF8_BOM))
    delimiter = _delimiter(text)
    # strict: a quotation mark left open at the end of the file is an error, not a cell that
    # silently swallows every later row.
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    rows: list[Row] = []
    number, cut = 0, False
    try:
        # A record is a row as a spreadsheet shows it, even when a quoted cell spans lines.
        # Per record, the checks run in C: some cell is more than blanks exactly when the cells
        # joined are, and a cell too long makes the longest one too long.
        for number, record in enumerate(reader, start=1):
            if not "".join(record).strip():
                continue
            if len(rows) == keep:
                cut = True
                break
            if max(map(len, record)) > MAX_CELL_CHARS:
                raise UnreadableSheet(CELL_TOO_LONG, row=number, limit=CELL_LIMIT)
            rows.append(Row(number, tuple(record)))
    except csv.Error as error:
        raise _malformed(number + 1, str(error)) from error
    # Excel writes semicolons where the decimal mark is a comma (1.000,50).
    return Table(tuple(rows), decimal_comma=delimiter == ";", more_rows=cut)


def _malformed(row: int, why: str) -> UnreadableSheet:
    """The refusal of a CSV record the csv module refused, naming the row it starts on."""
    if "field larger than field limit" in why:
        return UnreadableSheet(CELL_TOO_LONG, row=row, limit=CELL_LIMIT)
    if "unexpected end of data" in why:
        return UnreadableSheet(UNCLOSED_QUOTE, row=row)
    return UnreadableSheet(MALFORMED_CSV, row=row)


def _decode(data: bytes) -> str:
    """The text as UTF-8; as Windows-1252 (what Excel's plain "CSV" writes) only when nothing in
    it is UTF-8 beyond ASCII, since a UTF-8 file with one stray byte would turn to mojibake."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        if _UTF8_SEQUENCE.search(data):
            row = data.count(b"\n", 0, error.start) + 1
            raise UnreadableSheet(MIXED_ENCODING, row=row) from error
    try:
        return data.decode("cp1252")
    except UnicodeDecodeError:
        raise UnreadableSheet(UNDECODABLE) from None


def _delimiter(text: str) -> str:
    """The most frequent of , ; and tab on the first non-empty line, outside quotes; else ,."""
    # European Excel saves semicolons, and "Text (Tab delimited)" saves tabs.
    first = next((line for line in io.StringIO(text, newline="") if line.strip()), "")
    unquoted = re.sub(r'"[^"]*"', "", first)
    best = max(_DELIMITERS, key=unquoted.count)
    return best if unquoted.count(best) else ","

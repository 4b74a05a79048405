"""What an uploaded sheet may be, and the sentences that refuse one that is not.

Every refusal is an `UnreadableSheet` carrying one of the sentences below (an English msgid,
translated where it is sent, after the line naming the file: bot.words.texts.refusal) and the
values of its placeholders, so tests can compare against the constant.
"""

from __future__ import annotations

from bot.words.i18n import N_

EMPTY_FILE = N_("The file is empty.")
NOT_A_SHEET = N_(
    "This file is not a spreadsheet I can read: send a CSV file (UTF-8 or Windows-1252) "
    "or an Excel .xlsx workbook."
)
NOT_CSV = N_(
    'This file is not a CSV file I can read: save it from Excel as "CSV UTF-8" and send that.'
)
OLD_OR_PROTECTED = N_(
    "This file is an old Excel .xls file or a password-protected workbook: save it as .xlsx "
    "(without a password) or as CSV."
)
UNDECODABLE = N_(
    'This file could not be read as UTF-8 or Windows-1252 text: save it from Excel as "CSV UTF-8".'
)
MALFORMED_CSV = N_(
    'Row {row} of this CSV file could not be read: check its quotation marks ("), then save '
    "the file again."
)
UNCLOSED_QUOTE = N_(
    'Row {row}: a quotation mark (") opened in this row is never closed, so every row after it '
    "would be lost: close it, then save the file again."
)
CELL_TOO_LONG = N_(
    "Row {row}: a cell holds more than {limit} characters, far more than any sheet needs: "
    "check that row, then save the file again."
)
MIXED_ENCODING = N_(
    "Row {row} of this file is not UTF-8 text like the rest of it: save it from Excel as "
    '"CSV UTF-8" and send it again.'
)
DAMAGED_WORKBOOK = N_(
    "This Excel workbook is damaged or incomplete: open it in Excel, save it again as .xlsx, "
    "and send it again."
)
TOO_LARGE = N_(
    "This workbook is too large once unpacked (over 100 MB): keep only the rows you need, "
    "or save it as CSV."
)
UNUSUAL_PARTS = N_(
    "This Excel workbook names its parts in a way Excel never does: open it in Excel, save it "
    "again as .xlsx, and send it again."
)
LONG_SHARED_TEXT = N_(
    "A cell of this workbook holds more than {limit} characters, far more than any sheet "
    "needs: delete that text, or save the sheet as CSV."
)
TOO_MUCH_TEXT = N_(
    "This workbook repeats so much text that it would take over {limit} characters once read: "
    "keep only the rows you need, or save it as CSV."
)
NO_SUCH_TIME = N_(
    "Row {row}: a cell formatted as a date or a time holds a number no date or time can be: "
    "format it as Number, then save the file again."
)
TOO_SPREAD_OUT = N_(
    "The first sheet of this workbook spans too many cells: delete anything far below or to "
    "the right of your table, or save it as CSV."
)
# A zip bomb is refused on the sizes its directory declares, before anything is unpacked.
MAX_UNPACKED_BYTES = 100 * 1024 * 1024
# calamine holds the whole rectangle from A1 to the last filled cell in memory, so a single
# stray cell at XFD1048576 would ask for billions of cells; refuse before it tries.
MAX_CELLS = 2_000_000
# The longest valid cell is a 300-character note; no cell, in CSV or XLSX, needs more than this.
MAX_CELL_CHARS = 10_000
CELL_LIMIT = f"{MAX_CELL_CHARS:,}"  # as the refusals show it
# calamine writes out a shared string once per cell that refers to it, so one long string
# referred to by many cells would cost gigabytes; what a sheet may spell out in total.
MAX_SHEET_TEXT = 64_000_000

"""The problems found in a file, in the reader's language: core names each by its place, a code
and its values (core.problems), and this is the one place that says them, for the bot's
replies and the CLI (in English)."""

from __future__ import annotations

from collections.abc import Iterable

from bot.words.i18n import ENGLISH, N_, Translator
from core.problems import Place, Problem, ProblemCode, Value
from core.texts import flatten

# A reply lists this many problems, then says how many more there are.
PROBLEMS_LISTED = 50

# One sentence per problem; the placeholders are the problem's values (core.problems).
PROBLEM_TEXTS: dict[ProblemCode, str] = {
    ProblemCode.NOT_A_HEADER: N_(
        "this is not a header; the first row must name the columns {columns} (optional: {optional})"
    ),
    ProblemCode.UNKNOWN_COLUMN: N_(
        "unknown column {value}; the columns are {columns} (optional: {optional})"
    ),
    ProblemCode.COLUMN_TWICE: N_("this column appears twice"),
    ProblemCode.STRAY_CELL: N_("value {value} in column {letter}, which has no header"),
    ProblemCode.FILE_TOO_BIG: N_("The file is {size} MB; the limit is {limit} MB."),
    ProblemCode.TOO_MANY_ROWS: N_(
        "The sheet has more than {limit} rows to order; the limit is {limit}. "
        "Split it into smaller sheets."
    ),
    ProblemCode.EMPTY_SHEET: N_(
        "The sheet is empty: the first row must be the header "
        "sku, quantity (optional: supplier_id, notes, ship_to, needed_by)."
    ),
    ProblemCode.HEADER_FORMULA: N_(
        "cell {cell} holds a formula; type the column name itself instead"
    ),
    ProblemCode.NO_ROWS: N_("The sheet has a header but no rows to order."),
    ProblemCode.FORMULA: N_("holds a formula; type the value itself instead"),
    ProblemCode.EMPTY: N_("is empty"),
    ProblemCode.DATE_NOT_QUANTITY: N_(
        "{value} is a date, not a whole number; format the column as Number and type the "
        "quantity again"
    ),
    ProblemCode.NOT_WHOLE: N_("{value} is not a whole number"),
    ProblemCode.BELOW_ONE: N_("{value} must be at least 1"),
    ProblemCode.ABOVE_ROW_LIMIT: N_("{value} is more than the {limit} one row can order"),
    ProblemCode.TOO_LONG: N_("is {length} characters long; the limit is {limit}"),
    ProblemCode.NOT_A_DATE: N_(
        "{value} is not a date: write it as 2026-12-20 or 20/12/2026 (day first)"
    ),
    ProblemCode.UNKNOWN_BRANCH: N_("{value} is not a branch; the branches are {branches}"),
    ProblemCode.NO_COMPANY: N_(
        "no branches are known yet: an admin must import the company file first"
    ),
    ProblemCode.NO_TERMS: N_(
        "No supplier terms have been imported yet, so nothing can be priced: an admin must "
        "run {command} first."
    ),
    ProblemCode.TERMS_CHANGED: N_(
        "The supplier terms changed twice while this sheet was being checked: please send it again."
    ),
    ProblemCode.UNKNOWN_SKU: N_("{value} is not in the current supplier terms"),
    ProblemCode.UNKNOWN_SUPPLIER: N_("{value} is not a supplier in the current terms"),
    ProblemCode.NOT_OFFERED: N_("{supplier} does not offer {value} (offered by {others})"),
    ProblemCode.ALREADY_ON_ROW: N_(
        "{sku} from {supplier} is already on row {first}; put the whole quantity on one row"
    ),
    ProblemCode.OVER_BUDGET: N_(
        "Over the {month} budget for {category}: budget {budget}, committed {committed}, "
        "this sheet uses {uses}, over by {over}."
    ),
    ProblemCode.MESSAGE_TOO_LONG: N_(
        "The message is longer than {limit} characters; send the lines in smaller messages, "
        "or as a sheet."
    ),
    ProblemCode.TOO_MANY_LINES: N_(
        "The message has more than {limit} lines; send the rest in another message, or as a sheet."
    ),
    ProblemCode.UNREADABLE_LINE: N_(
        "could not read {value} as a SKU and a quantity, such as {example}"
    ),
    ProblemCode.UNREADABLE_LINE_NEAR: N_(
        "could not read {value} as a SKU and a quantity, such as {example}; "
        "did you mean {suggestions}?"
    ),
    ProblemCode.UNKNOWN_SKU_NEAR: N_(
        "{value} is not in the current supplier terms; did you mean {suggestions}?"
    ),
    ProblemCode.ALREADY_ON_LINE: N_(
        "{sku} from {supplier} is already on line {first}; put the whole quantity on one line"
    ),
    ProblemCode.TERMS_EMPTY: N_("the file is empty; the first line must be the header"),
    ProblemCode.NO_SUPPLIER_LINES: N_("the file has a header but no supplier lines"),
    ProblemCode.NOT_A_CODE: N_(
        "{value} is not a plain code (letters and digits, joined by . _ / -)"
    ),
    ProblemCode.NOT_AN_ADDRESS: N_(
        "{value} is not a plain e-mail address like orders@supplier.pk: ASCII letters, digits "
        "and . _ + - ' before the @ (no spaces, quotes, brackets, colons, % or !), a domain "
        "name with a dot after it"
    ),
    ProblemCode.NOT_A_CATEGORY: N_(
        "{value} is not a category name: up to 64 letters, digits, spaces and . & / - _ ', "
        "starting and ending with a letter or digit"
    ),
    ProblemCode.NOT_AN_AMOUNT: N_(
        "{value} is not an amount in rupees with at most two decimals, like 1250.50"
    ),
    ProblemCode.NEGATIVE: N_("must not be negative"),
    ProblemCode.PRICE_TOO_HIGH: N_("is more than the limit of {limit}"),
    ProblemCode.NOT_A_LIMIT: N_(
        "{value} is not a whole number of at least 1 (leave it empty for no limit)"
    ),
    ProblemCode.LIMIT_TOO_HIGH: N_("{value} is more than the limit of {limit}"),
    ProblemCode.MAX_BELOW_MIN: N_("{high} is below min_qty {low}"),
    ProblemCode.DIFFERS: N_("differs from line {first} for supplier {supplier}"),
    ProblemCode.NOT_DAYS: N_("{value} is not a whole number of days from 0 to {limit}"),
    ProblemCode.NOT_A_RATE: N_(
        "{value} is not a tax rate: a percentage from 0 to 100 with at most two decimals, like 18"
    ),
    ProblemCode.DUPLICATE_OFFER: N_("supplier {supplier} already offers {sku} on line {first}"),
    ProblemCode.NOT_TOML: N_("not valid TOML: {detail}"),
    ProblemCode.TOO_DEEP: N_("arrays and tables nested more than {limit} deep"),
    ProblemCode.NUMBER_TOO_LONG: N_("a whole number of {digits} digits is too long to read"),
    ProblemCode.UNKNOWN_KEY: N_("unknown key {key}"),
    ProblemCode.MISSING_KEY: N_("{key} is missing"),
    ProblemCode.NOT_WHOLE_NUMBER: N_("must be a whole number"),
    ProblemCode.NOT_A_NUMBER: N_("must be a number"),
    ProblemCode.NOT_TEXT: N_("must be text in quotes"),
    ProblemCode.NOT_A_LIST: N_("must be a list in [ ]"),
    ProblemCode.NOT_A_TABLE: N_("must be a table"),
    ProblemCode.NOT_TRUE_OR_FALSE: N_("must be {true} or {false}, without quotes"),
    ProblemCode.AT_LEAST: N_("must be at least {bound}"),
    ProblemCode.MORE_THAN: N_("must be more than {bound}"),
    ProblemCode.AT_MOST: N_("must be at most {bound}"),
    ProblemCode.NOT_EMPTY: N_("must not be empty"),
    ProblemCode.TOO_MANY_ENTRIES: N_("has too many entries (at most {limit})"),
    ProblemCode.TEXT_TOO_LONG: N_("is too long (at most {limit} characters)"),
    ProblemCode.NOT_A_GROUP_NAME: N_(
        "is not a group name: a lower-case letter, then up to 31 letters, digits, _ or -"
    ),
    ProblemCode.ONE_OF: N_("must be one of {choices}"),
    # A schema error this version does not know: pydantic's own words, as they are.
    ProblemCode.UNREADABLE_VALUE: N_("{detail}"),
    ProblemCode.NOT_A_DURATION: N_(
        "{value} is not a duration: a whole number and s, m, h or d, as 2h"
    ),
    ProblemCode.NO_TIME_AT_ALL: N_("{value} is no time at all: a duration must be more than zero"),
    ProblemCode.NOT_A_TIME_OF_DAY: N_("{value} is not a time of day: HH:MM, as 09:30"),
    ProblemCode.NOT_WORKING_HOURS: N_(
        "{value} is not working hours: days and hours, as Mon-Sat 09:00-19:00"
    ),
    ProblemCode.UNKNOWN_DAY: N_("{value}: days are {days}"),
    ProblemCode.OFF_THE_CLOCK: N_(
        "{value} has a time that is not on the clock: days and hours, as Mon-Sat 09:00-19:00"
    ),
    ProblemCode.HOURS_END_FIRST: N_("{value}: the hours must end after they start"),
    ProblemCode.ESCALATE_BEFORE_REMIND: N_(
        "escalate_after must be longer than remind_after: the supplier is reminded first"
    ),
    ProblemCode.UNDEFINED_GROUP: N_("group {group} is not defined in [groups] ({groups})"),
    ProblemCode.GROUP_TWICE: N_("a group appears in two stages: one person counts once"),
    ProblemCode.RULE_NAME_TWICE: N_("rule {name} is also rule {rule}"),
    ProblemCode.NO_TOTAL: N_("no total is above {above} and at most {most}"),
    ProblemCode.NEVER_APPLIES: N_("never applies: rule {rule} ({name}) applies to every request"),
    ProblemCode.NO_CATCH_ALL: N_("the last rule must apply to every request: no {key}"),
    ProblemCode.HARD_WITH_STAGE: N_(
        "hard mode refuses a sheet over budget: it has no stage to add"
    ),
    ProblemCode.SOFT_WITHOUT_STAGE: N_("soft mode needs an {key} to add"),
    ProblemCode.CATEGORY_TWICE: N_("a category appears twice (case does not count)"),
    # The refusal's lead names the file (bot.words.texts.refusal), so these need not.
    ProblemCode.POLICY_TOO_BIG: N_("The file is {size} bytes; a policy file is at most 256 KB."),
    ProblemCode.NOT_UTF8: N_("The file is not UTF-8 text (byte {byte})."),
    ProblemCode.COMPANY_TOO_BIG: N_("The file is {size} bytes; a company file is at most 256 KB."),
    # The company file (core.company.company_file): each says what a right value looks like.
    ProblemCode.NOT_AN_NTN: N_(
        "{value} is not an NTN: 7 digits, a dash and 1 digit, like {example}"
    ),
    ProblemCode.NOT_AN_STRN: N_(
        "{value} is not an STRN: 13 digits written 2-2-4-3-2 with dashes, like {example}"
    ),
    ProblemCode.NOT_A_PHONE: N_(
        "{value} is not a phone number: 7 to 15 digits, with only spaces and + - ( ) among "
        "them, like {example}"
    ),
    ProblemCode.NOT_A_BRANCH_ID: N_(
        "{value} is not a branch id: a lower-case letter, then up to 31 lower-case letters, "
        "digits, _ or -, like {example}"
    ),
    # The line's column names the second default branch; {first} names the first.
    ProblemCode.DEFAULT_BRANCH_TWICE: N_(
        "a second default: branch {first} is the default already; write {key} in one branch only"
    ),
    ProblemCode.NO_DEFAULT_BRANCH: N_(
        "no branch is the default: write {key} in the branch a requester without one orders for"
    ),
}
# Problems whose sentence depends on their `count` value: said by `tr.plural` in `_sentence`.
COUNTED = frozenset({ProblemCode.MISSING_COLUMNS})
# Values a sentence names that are the same in every language: file syntax, a command.
_FIXED: dict[ProblemCode, dict[str, Value]] = {
    ProblemCode.NO_TERMS: {"command": "`manzoori suppliers import FILE.csv`"},
    ProblemCode.NO_CATCH_ALL: {"key": "`when`"},
    ProblemCode.SOFT_WITHOUT_STAGE: {"key": "over_budget_stage"},
    ProblemCode.UNKNOWN_DAY: {"days": "Mon, Tue, Wed, Thu, Fri, Sat, Sun"},
    ProblemCode.NOT_AN_NTN: {"example": "1234567-8"},
    ProblemCode.NOT_AN_STRN: {"example": "32-77-8761-234-56"},
    ProblemCode.NOT_A_PHONE: {"example": "+92 42 3575 0000"},
    ProblemCode.NOT_A_BRANCH_ID: {"example": "hallroad"},
    ProblemCode.DEFAULT_BRANCH_TWICE: {"key": "default = true"},
    ProblemCode.NO_DEFAULT_BRANCH: {"key": "default = true"},
    ProblemCode.NOT_TRUE_OR_FALSE: {"true": "true", "false": "false"},
    ProblemCode.UNREADABLE_LINE: {"example": "CBL-USBC-1M 40"},
    ProblemCode.UNREADABLE_LINE_NEAR: {"example": "CBL-USBC-1M 40"},
}


def problem_text(problem: Problem, *, tr: Translator = ENGLISH) -> str:
    """The problem as one line: where it is (row or line, and column), then what is wrong."""
    said = _sentence(problem, tr)
    if problem.row == 0:  # about the whole file, not one place in it
        return said
    return f"{_place(problem, tr)}: {said}"


def problem_sentence(problem: Problem, *, tr: Translator = ENGLISH) -> str:
    """What is wrong, without where: for a page that shows the problem beside its item."""
    return _sentence(problem, tr)


def problem_lines(
    problems: Iterable[Problem], *, limit: int = PROBLEMS_LISTED, tr: Translator = ENGLISH
) -> list[str]:
    """The problems as lines, in file order, capped with "… and N more problems"."""
    ordered = sorted(problems, key=lambda p: p.row)  # stable: one row's problems keep order
    lines = [problem_text(p, tr=tr) for p in ordered[:limit]]
    if len(ordered) > limit:
        more = len(ordered) - limit
        lines.append(tr.plural("… and {count} more problem", "… and {count} more problems", more))
    return lines


def _sentence(problem: Problem, tr: Translator) -> str:
    """What is wrong, its values filled in: numbers grouped, text on one line."""
    values = {
        name: f"{value:,}" if isinstance(value, int) else flatten(value)
        for name, value in {**problem.values, **_FIXED.get(problem.code, {})}.items()
    }
    if problem.code is ProblemCode.MISSING_COLUMNS:
        count = int(problem.values["count"])
        names = values["names"]
        return tr.plural("missing column {names}", "missing columns {names}", count, names=names)
    return tr(PROBLEM_TEXTS[problem.code], **values)


def _place(problem: Problem, tr: Translator) -> str:
    """ "Row 3, quantity" or "Line 2": where a spreadsheet or an editor shows the problem."""
    row, column = f"{problem.row}", problem.column
    if problem.place is Place.LINE:
        if column:
            return tr("Line {row}, {column}", row=row, column=flatten(column))
        return tr("Line {row}", row=row)
    if column:
        return tr("Row {row}, {column}", row=row, column=flatten(column))
    return tr("Row {row}", row=row)

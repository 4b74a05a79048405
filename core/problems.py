"""What is wrong with a file a person sent (a restock sheet, a terms file, a policy file, the
company file), as data: a place, a code and the values its sentence needs. Core finds problems;
the shell says them in the reader's language (bot.words.problems), so no sentence about a file
is made here."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum


class Place(StrEnum):
    """How a file counts the places a problem is at."""

    ROW = "row"  # a restock sheet: the row numbers a spreadsheet shows
    LINE = "line"  # the terms CSV and the policy file: people open them in an editor


class ProblemCode(StrEnum):
    """What is wrong with a file; the comment names the `values` its sentence takes (the shell
    says it: bot.words.problems). Cell text in values is quoted already (`quote`)."""

    # The header (core.drafting.tables): the columns are listed as ", "-joined names.
    NOT_A_HEADER = "not_a_header"  # columns, optional
    UNKNOWN_COLUMN = "unknown_column"  # value, columns, optional
    COLUMN_TWICE = "column_twice"  # ()
    MISSING_COLUMNS = "missing_columns"  # names, count
    STRAY_CELL = "stray_cell"  # value, letter
    # Restock sheets (core.drafting.sheets).
    FILE_TOO_BIG = "file_too_big"  # size (MB, one decimal), limit (MB)
    TOO_MANY_ROWS = "too_many_rows"  # limit
    EMPTY_SHEET = "empty_sheet"  # ()
    HEADER_FORMULA = "header_formula"  # cell ("B1")
    NO_ROWS = "no_rows"  # ()
    FORMULA = "formula"  # ()
    EMPTY = "empty"  # ()
    DATE_NOT_QUANTITY = "date_not_quantity"  # value
    NOT_WHOLE = "not_whole"  # value
    BELOW_ONE = "below_one"  # value
    ABOVE_ROW_LIMIT = "above_row_limit"  # value, limit
    TOO_LONG = "too_long"  # length, limit
    NOT_A_DATE = "not_a_date"  # value (needed_by)
    UNKNOWN_BRANCH = "unknown_branch"  # value, branches (ship_to)
    NO_COMPANY = "no_company"  # () (ship_to without a company file)
    # Matching a sheet against the terms (core.drafting.intake) and budgets (core.approval.budgets).
    NO_TERMS = "no_terms"  # ()
    TERMS_CHANGED = "terms_changed"  # ()
    UNKNOWN_SKU = "unknown_sku"  # value
    UNKNOWN_SUPPLIER = "unknown_supplier"  # value
    NOT_OFFERED = "not_offered"  # supplier, value, others
    ALREADY_ON_ROW = "already_on_row"  # sku, supplier, first
    OVER_BUDGET = "over_budget"  # month, category, budget, committed, uses, over (amounts)
    # A request typed in a message (core.purchasing.typed): lines are the message's.
    MESSAGE_TOO_LONG = "message_too_long"  # limit (characters)
    TOO_MANY_LINES = "too_many_lines"  # limit
    UNREADABLE_LINE = "unreadable_line"  # value (the shell gives an example)
    UNREADABLE_LINE_NEAR = "unreadable_line_near"  # value, suggestions
    UNKNOWN_SKU_NEAR = "unknown_sku_near"  # value, suggestions
    ALREADY_ON_LINE = "already_on_line"  # sku, supplier, first
    # Supplier terms (core.drafting.terms).
    TERMS_EMPTY = "terms_empty"  # ()
    NO_SUPPLIER_LINES = "no_supplier_lines"  # ()
    NOT_A_CODE = "not_a_code"  # value
    NOT_AN_ADDRESS = "not_an_address"  # value
    NOT_A_CATEGORY = "not_a_category"  # value
    NOT_AN_AMOUNT = "not_an_amount"  # value
    NEGATIVE = "negative"  # ()
    PRICE_TOO_HIGH = "price_too_high"  # limit (an amount)
    NOT_A_LIMIT = "not_a_limit"  # value
    LIMIT_TOO_HIGH = "limit_too_high"  # value, limit
    MAX_BELOW_MIN = "max_below_min"  # high, low
    DIFFERS = "differs"  # first (line), supplier
    NOT_DAYS = "not_days"  # value, limit (lead_days)
    NOT_A_RATE = "not_a_rate"  # value (gst_percent)
    DUPLICATE_OFFER = "duplicate_offer"  # supplier, sku, first (line)
    # The approval policy file (core.approval.policy_file); detail is tomllib's or
    # core.approval.ladder's words.
    NOT_TOML = "not_toml"  # detail
    TOO_DEEP = "too_deep"  # limit (core.nesting)
    NUMBER_TOO_LONG = "number_too_long"  # digits
    UNKNOWN_KEY = "unknown_key"  # key
    MISSING_KEY = "missing_key"  # key
    NOT_WHOLE_NUMBER = "not_whole_number"  # ()
    NOT_A_NUMBER = "not_a_number"  # ()
    NOT_TEXT = "not_text"  # ()
    NOT_A_LIST = "not_a_list"  # ()
    NOT_A_TABLE = "not_a_table"  # ()
    NOT_TRUE_OR_FALSE = "not_true_or_false"  # ()
    AT_LEAST = "at_least"  # bound
    MORE_THAN = "more_than"  # bound
    AT_MOST = "at_most"  # bound
    NOT_EMPTY = "not_empty"  # ()
    TOO_MANY_ENTRIES = "too_many_entries"  # limit
    TEXT_TOO_LONG = "text_too_long"  # limit
    NOT_A_GROUP_NAME = "not_a_group_name"  # ()
    ONE_OF = "one_of"  # choices
    UNREADABLE_VALUE = "unreadable_value"  # detail
    UNDEFINED_GROUP = "undefined_group"  # group, groups
    GROUP_TWICE = "group_twice"  # ()
    RULE_NAME_TWICE = "rule_name_twice"  # name, rule
    NO_TOTAL = "no_total"  # above, most
    NEVER_APPLIES = "never_applies"  # rule, name
    NO_CATCH_ALL = "no_catch_all"  # ()
    HARD_WITH_STAGE = "hard_with_stage"  # ()
    SOFT_WITHOUT_STAGE = "soft_without_stage"  # ()
    CATEGORY_TWICE = "category_twice"  # ()
    NOT_A_DURATION = "not_a_duration"  # value (core.approval.ladder, as those below)
    NO_TIME_AT_ALL = "no_time_at_all"  # value
    NOT_A_TIME_OF_DAY = "not_a_time_of_day"  # value
    NOT_WORKING_HOURS = "not_working_hours"  # value
    UNKNOWN_DAY = "unknown_day"  # value
    OFF_THE_CLOCK = "off_the_clock"  # value
    HOURS_END_FIRST = "hours_end_first"  # value
    ESCALATE_BEFORE_REMIND = (
        "escalate_before_remind"  # a supplier's escalation not after its reminder
    )
    POLICY_TOO_BIG = "policy_too_big"  # size (bytes)
    NOT_UTF8 = "not_utf8"  # byte (counted from 1)
    # The company file (core.company.company_file); the schema's problems are the policy's.
    NOT_AN_NTN = "not_an_ntn"  # value
    NOT_AN_STRN = "not_an_strn"  # value
    NOT_A_PHONE = "not_a_phone"  # value
    NOT_A_BRANCH_ID = "not_a_branch_id"  # value
    DEFAULT_BRANCH_TWICE = "default_branch_twice"  # branch, first (the first default's id)
    NO_DEFAULT_BRANCH = "no_default_branch"  # ()
    COMPANY_TOO_BIG = "company_too_big"  # size (bytes)


Value = str | int  # a problem's detail: text as shown, or a number the shell groups


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a file, placed where a spreadsheet shows it (the header is 1; row 0
    is the whole file), as a code and the values its sentence needs."""

    row: int
    column: str | None
    code: ProblemCode
    values: Mapping[str, Value] = field(default_factory=dict)
    place: Place = Place.ROW

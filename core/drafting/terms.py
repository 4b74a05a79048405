"""Supplier terms: who sells which SKU at what price and in what quantities.

A terms file is checked whole: every problem is named by line and column, and a file with any
problem is not used at all. A valid file becomes `Terms`, whose sha256 is taken over a canonical
form, so the same offers in another row or column order are the same terms.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from core.drafting.drafts import is_email, is_identifier, mask_email
from core.drafting.tables import (
    OVERSIZE,
    Row,
    Table,
    cell,
    quote,
    read_header,
    rupees_to_paisa,
    stray_cells,
    text_of,
    whole_number,
)
from core.problems import Place, Problem, ProblemCode, Value
from core.texts import flatten

REQUIRED = (
    "supplier_id",
    "supplier_name",
    "supplier_email",
    "sku",
    "description",
    "unit_price_pkr",
    "min_qty",
    "max_qty",
)
# category: blank is uncategorised (budgets do not count the line). payment_terms: the
# supplier's, one value per supplier (rows left blank take it). lead_days: whole days from
# order to delivery. gst_percent: the price is exclusive of sales tax at that rate; blank means
# the price is final.
# supplier_phone: the supplier's mobile (WhatsApp) number, one per supplier like payment_terms;
# sealed at rest, it is offered to the team when the supplier does not answer a PO.
OPTIONAL = ("category", "payment_terms", "lead_days", "gst_percent", "supplier_phone")
# Long enough for real names, short enough for a phone screen and a mail subject.
_MAX_NAME = 100
_MAX_DESCRIPTION = 200
# A category names a budget (core.approval.policies.Budgets) and goes on cards: a few words of
# letters, digits, spaces and . & / - _ ', the policy file's limit of 64 characters.
_CATEGORY = re.compile(r"[^\W_](?:[\w .&/'-]{0,62}[^\W_])?")
# Rs 1,000,000 a unit: far above any retail item, and it keeps totals inside 64-bit paisa.
MAX_UNIT_PRICE_PAISA = 100_000_000
MAX_LIMIT = 1_000_000_000  # min_qty and max_qty: far beyond any order, well inside 64 bits
MAX_LEAD_DAYS = 365  # a year: beyond that it is not a lead time but a typo
_MAX_PAYMENT_TERMS = 100  # "30 days credit, 2% off within 10 days" fits with room
# A percentage with at most two decimals (17.5, 18, "18%"), as a rate in hundredths.
_RATE = re.compile(r"(\d{1,3})(?:\.(\d{1,2}))?\s*%?")
_LINE = Place.LINE  # the terms file is CSV: people open it in an editor, which counts lines
# Records a problem in one column of the current line.
_Bad = Callable[[str, ProblemCode, Mapping[str, Value]], None]


@dataclass(frozen=True)
class Supplier:
    """A supplier as the terms name it; the address is personal data, shown masked."""

    supplier_id: str
    name: str
    email: str
    payment_terms: str = ""  # "30 days credit", "cash on delivery"; "" not said
    phone: str = ""  # international digits, as wa.me wants them: "923001234567"; "" not given

    @property
    def masked_email(self) -> str:
        """The address as people may see it: "or***@supplier.pk"."""
        return mask_email(self.email)


@dataclass(frozen=True)
class Offer:
    """One SKU from one supplier: price in paisa, order limits in units (no max: None)."""

    supplier_id: str
    sku: str
    description: str
    unit_price_paisa: int
    min_qty: int = 1
    max_qty: int | None = None
    category: str = ""  # lower case; "" uncategorised
    lead_days: int | None = None  # days from order to delivery; None not said
    gst_basis_points: int = 0  # sales tax on top, in hundredths of a percent; 0: price final


@dataclass(frozen=True)
class Terms:
    """One version of the approved supplier terms."""

    suppliers: Mapping[str, Supplier]
    offers: tuple[Offer, ...]
    version: str = ""  # set once stored: see `version_id`
    by_sku: dict[str, tuple[Offer, ...]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        index: dict[str, list[Offer]] = {}
        for offer in self.offers:
            index.setdefault(match_key(offer.sku), []).append(offer)
        # cheapest first; the supplier id breaks ties so the choice never depends on file order
        ordered = {
            key: tuple(sorted(group, key=lambda o: (o.unit_price_paisa, o.supplier_id)))
            for key, group in index.items()
        }
        object.__setattr__(self, "by_sku", ordered)

    def offers_of(self, sku: str) -> tuple[Offer, ...]:
        """Every supplier's offer for a SKU, cheapest first."""
        return self.by_sku.get(match_key(sku), ())

    def offer(self, supplier_id: str, sku: str) -> Offer | None:
        """That supplier's offer for that SKU, if any."""
        wanted = match_key(supplier_id)
        return next((o for o in self.offers_of(sku) if match_key(o.supplier_id) == wanted), None)

    def supplier(self, supplier_id: str) -> Supplier | None:
        """The supplier with that id (case-insensitive), if the terms name it."""
        wanted = match_key(supplier_id)
        return next((s for k, s in self.suppliers.items() if match_key(k) == wanted), None)


def match_key(code: str) -> str:
    """What two codes are compared by: SKUs, supplier ids and e-mail addresses match without
    regard to case, surrounding spaces, or invisible format characters (a zero-width space
    pasted from a web page, a right-to-left mark)."""
    if code.isascii():  # no format character is ASCII: the common case, without a scan
        return code.strip().lower()
    visible = "".join(c for c in code if unicodedata.category(c) != "Cf")
    return visible.strip().casefold()


def is_category(text: str) -> bool:
    """A category name as terms files and the policy file write it: up to 64 letters, digits,
    spaces and . & / - _ ', starting and ending with a letter or digit."""
    return _CATEGORY.fullmatch(text) is not None


def content_hash(terms: Terms) -> str:
    """sha256 of the offers and suppliers in canonical order: the identity of the content. An
    offer's category, lead time and tax, and a supplier's payment terms, are hashed only when
    given, so terms without them keep the hash (and version) they had before they existed."""
    body = {
        "suppliers": sorted(
            [s.supplier_id, s.name, s.email]
            + ([s.payment_terms] if s.payment_terms else [])
            + ([{"phone": s.phone}] if s.phone else [])
            for s in terms.suppliers.values()
        ),
        "offers": sorted(
            [o.supplier_id, o.sku, o.description, o.unit_price_paisa, o.min_qty, o.max_qty]
            + ([o.category] if o.category else [])
            + ([{"lead_days": o.lead_days}] if o.lead_days is not None else [])
            + ([{"gst": o.gst_basis_points}] if o.gst_basis_points else [])
            for o in terms.offers
        ),
    }
    data = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(data.encode("utf-8")).hexdigest()


def version_id(sha256: str, imported_at: datetime) -> str:
    """A version's name: import time (UTC) and content hash, e.g. "20261129T161812Z-1a2b3c4d"."""
    return f"{imported_at.astimezone(UTC):%Y%m%dT%H%M%SZ}-{sha256[:8]}"


def parse_terms(table: Table) -> tuple[Terms | None, list[Problem]]:
    """Check a whole terms file; return the terms only if there is no problem at all."""
    if not table.rows:
        return None, [Problem(1, None, ProblemCode.TERMS_EMPTY, {}, _LINE)]
    header, *rows = table.rows
    columns, problems = read_header(header, REQUIRED, OPTIONAL, _LINE)
    if problems:
        return None, problems
    if not rows:
        return None, [Problem(header.number, None, ProblemCode.NO_SUPPLIER_LINES, {}, _LINE)]
    offers: list[Offer] = []
    suppliers: dict[str, tuple[Supplier, int]] = {}
    seen: dict[tuple[str, str], int] = {}
    # (supplier key, column) -> its payment terms or phone, and the line that gave it
    said: dict[tuple[str, str], tuple[str, int]] = {}
    for row in rows:
        row_problems = stray_cells(row, columns, _LINE)
        offer, supplier = _read_line(row, columns, row_problems, table.decimal_comma)
        if offer is not None and supplier is not None:
            first = _check_consistent(row, supplier, offer, suppliers, seen, row_problems)
            offers.append(replace(offer, supplier_id=first.supplier_id))  # one spelling
            for column, value in (
                ("payment_terms", supplier.payment_terms),
                ("supplier_phone", supplier.phone),
            ):
                row_problems += _one_value(row, column, value, said, first.supplier_id)
        problems.extend(row_problems)
    if problems:
        return None, problems
    named = (
        replace(
            s,
            payment_terms=said.get((key, "payment_terms"), ("", 0))[0],
            phone=said.get((key, "supplier_phone"), ("", 0))[0],
        )
        for key, (s, _) in suppliers.items()
    )
    return Terms({s.supplier_id: s for s in named}, tuple(offers)), []


def _one_value(
    row: Row,
    column: str,
    value: str,
    said: dict[tuple[str, str], tuple[str, int]],
    supplier_id: str,
) -> list[Problem]:
    """A supplier's payment terms, or phone, are one value: rows that leave it blank take the
    one given on another row; a different value is a problem on the later row."""
    if not value:
        return []
    first = said.setdefault((match_key(supplier_id), column), (value, row.number))
    if first[0] == value:
        return []
    values: dict[str, Value] = {"first": first[1], "supplier": supplier_id}
    return [Problem(row.number, column, ProblemCode.DIFFERS, values, _LINE)]


def _text(row: Row, columns: dict[str, int], name: str) -> str:
    return text_of(cell(row, columns.get(name))).strip()


def _read_line(
    row: Row, columns: dict[str, int], problems: list[Problem], decimal_comma: bool
) -> tuple[Offer | None, Supplier | None]:
    def bad(column: str, code: ProblemCode, values: Mapping[str, Value] | None = None) -> None:
        problems.append(Problem(row.number, column, code, values or {}, _LINE))

    before = len(problems)
    supplier_id, sku = _text(row, columns, "supplier_id"), _text(row, columns, "sku")
    for column, value in (("supplier_id", supplier_id), ("sku", sku)):
        if not value:
            bad(column, ProblemCode.EMPTY)
        elif not is_identifier(value):
            bad(column, ProblemCode.NOT_A_CODE, {"value": quote(value)})
    name, email = _text(row, columns, "supplier_name"), _text(row, columns, "supplier_email")
    description = _text(row, columns, "description")
    for column, value, limit in (
        ("supplier_name", name, _MAX_NAME),
        ("description", description, _MAX_DESCRIPTION),
    ):
        if not value:
            bad(column, ProblemCode.EMPTY)
        elif len(value) > limit:
            bad(column, ProblemCode.TOO_LONG, {"length": len(value), "limit": limit})
    if not email:
        bad("supplier_email", ProblemCode.EMPTY)
    elif not is_email(email):  # the sender puts it unchanged in To and RCPT TO
        bad("supplier_email", ProblemCode.NOT_AN_ADDRESS, {"value": quote(email)})
    category = _text(row, columns, "category")
    if category and not is_category(category):
        bad("category", ProblemCode.NOT_A_CATEGORY, {"value": quote(category)})
    payment_terms = flatten(_text(row, columns, "payment_terms"))
    if len(payment_terms) > _MAX_PAYMENT_TERMS:
        values = {"length": len(payment_terms), "limit": _MAX_PAYMENT_TERMS}
        bad("payment_terms", ProblemCode.TOO_LONG, values)
    phone = _phone(row, columns, bad)
    price = _price(row, columns, bad, decimal_comma)
    min_qty, max_qty = _limits(row, columns, bad, decimal_comma)
    lead_days = _lead_days(row, columns, bad, decimal_comma)
    rate = _rate(row, columns, bad, decimal_comma)
    if len(problems) > before or price is None:
        return None, None
    offer = Offer(
        supplier_id, sku, description, price, min_qty, max_qty, category.lower(), lead_days, rate
    )
    return offer, Supplier(supplier_id, name, email, payment_terms, phone)


# A phone number as people write it: digits, spaces, dashes, dots, brackets, a leading +.
_PHONE = re.compile(r"\+?[\d\s().-]{7,24}")


def phone_digits(text: str) -> str | None:
    """A mobile number in the international digits wa.me takes ("923001234567"), or None if
    `text` is no phone number: "0300-1234567" and "+92 300 1234567" are Pakistani numbers; a
    number with + or 00 keeps its country code."""
    if not _PHONE.fullmatch(text.strip()):
        return None
    digits = re.sub(r"\D", "", text)
    if text.strip().startswith("+"):
        pass
    elif digits.startswith("00"):
        digits = digits[2:]
    elif digits.startswith("0"):
        digits = "92" + digits[1:]  # a number dialled inside Pakistan
    return digits if 10 <= len(digits) <= 15 else None


def _phone(row: Row, columns: dict[str, int], bad: _Bad) -> str:
    raw = text_of(cell(row, columns.get("supplier_phone"))).strip()
    if not raw:
        return ""
    digits = phone_digits(raw)
    if digits is None:
        bad("supplier_phone", ProblemCode.NOT_A_PHONE, {"value": quote(raw)})
        return ""
    return digits


def _lead_days(row: Row, columns: dict[str, int], bad: _Bad, decimal_comma: bool) -> int | None:
    raw = text_of(cell(row, columns.get("lead_days"))).strip()
    if not raw:
        return None
    days = whole_number(raw, decimal_comma)
    if days is None or not 0 <= days <= MAX_LEAD_DAYS:
        bad("lead_days", ProblemCode.NOT_DAYS, {"value": quote(raw), "limit": MAX_LEAD_DAYS})
        return None
    return days


def _rate(row: Row, columns: dict[str, int], bad: _Bad, decimal_comma: bool) -> int:
    """gst_percent as hundredths of a percent: "18" -> 1800, "17.5%" -> 1750; blank 0."""
    raw = text_of(cell(row, columns.get("gst_percent"))).strip()
    if not raw:
        return 0
    found = _RATE.fullmatch(raw.replace(",", ".") if decimal_comma else raw)
    rate = None
    if found is not None:
        rate = int(found[1]) * 100 + int((found[2] or "0").ljust(2, "0"))
    if rate is None or rate > 10_000:
        bad("gst_percent", ProblemCode.NOT_A_RATE, {"value": quote(raw)})
        return 0
    return rate


def _price(row: Row, columns: dict[str, int], bad: _Bad, decimal_comma: bool) -> int | None:
    raw = cell(row, columns["unit_price_pkr"])
    if not text_of(raw).strip():
        bad("unit_price_pkr", ProblemCode.EMPTY, {})
        return None
    paisa = rupees_to_paisa(raw, decimal_comma)
    if paisa is None:
        bad("unit_price_pkr", ProblemCode.NOT_AN_AMOUNT, {"value": quote(text_of(raw).strip())})
    elif paisa < 0:
        bad("unit_price_pkr", ProblemCode.NEGATIVE, {})
        return None
    elif paisa > MAX_UNIT_PRICE_PAISA:
        bad(
            "unit_price_pkr",
            ProblemCode.PRICE_TOO_HIGH,
            {"limit": f"Rs {MAX_UNIT_PRICE_PAISA // 100:,}"},
        )
        return None
    return paisa


def _limits(
    row: Row, columns: dict[str, int], bad: _Bad, decimal_comma: bool
) -> tuple[int, int | None]:
    limits: dict[str, int | None] = {}
    for column in ("min_qty", "max_qty"):
        raw = text_of(cell(row, columns[column])).strip()
        number = whole_number(raw, decimal_comma) if raw else None
        if raw and (number is None or number < 1):
            bad(column, ProblemCode.NOT_A_LIMIT, {"value": quote(raw)})
            number = None
        elif number is not None and number > MAX_LIMIT:
            shown = quote(raw) if number >= OVERSIZE else f"{number:,}"
            bad(column, ProblemCode.LIMIT_TOO_HIGH, {"value": shown, "limit": MAX_LIMIT})
            number = None
        limits[column] = number
    low, high = limits["min_qty"] or 1, limits["max_qty"]
    if high is not None and low > high:
        bad("max_qty", ProblemCode.MAX_BELOW_MIN, {"high": high, "low": low})
    return low, high


def _check_consistent(
    row: Row,
    supplier: Supplier,
    offer: Offer,
    suppliers: dict[str, tuple[Supplier, int]],
    seen: dict[tuple[str, str], int],
    problems: list[Problem],
) -> Supplier:
    key = match_key(supplier.supplier_id)
    first = suppliers.setdefault(key, (supplier, row.number))
    differs: dict[str, Value] = {"first": first[1], "supplier": first[0].supplier_id}
    if first[0].name != supplier.name:
        problems.append(Problem(row.number, "supplier_name", ProblemCode.DIFFERS, differs, _LINE))
    if match_key(first[0].email) != match_key(supplier.email):
        problems.append(Problem(row.number, "supplier_email", ProblemCode.DIFFERS, differs, _LINE))
    pair = (key, match_key(offer.sku))
    if pair in seen:
        values: dict[str, Value] = {"supplier": offer.supplier_id, "sku": offer.sku}
        values["first"] = seen[pair]
        problems.append(Problem(row.number, "sku", ProblemCode.DUPLICATE_OFFER, values, _LINE))
    else:
        seen[pair] = row.number
    return first[0]


def offers_by_supplier(terms: Terms) -> Mapping[str, list[Offer]]:
    """Each supplier's offers, by SKU."""
    grouped: dict[str, list[Offer]] = {s: [] for s in terms.suppliers}
    for offer in sorted(terms.offers, key=lambda o: match_key(o.sku)):
        grouped[offer.supplier_id].append(offer)
    return grouped

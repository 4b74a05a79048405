"""Purchase-order drafts: immutable values, canonical bytes and their sha256."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import re
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from core.errors import InvalidDraft

# Wide enough for real SKUs and supplier ids, narrow enough to keep mail headers and CSV safe.
_IDENT = re.compile(r"^[A-Za-z0-9]+(?:[._/-][A-Za-z0-9]+)*$")
# PO numbers end up in Message-IDs and file names: no slashes, no doubled or trailing dots.
_PO_NUMBER = re.compile(r"^[A-Za-z0-9]+(?:[._-][A-Za-z0-9]+)*$")
# An address the sender can put, unchanged, in both the To header and RCPT TO (RFC 5321/5322):
# a dot-atom local part of ASCII atext, less "%" and "!" (source routing some relays still
# obey), and a host name of letter-digit-hyphen labels, at least two, the last starting with a
# letter and two long (no IP literal, no trailing dot). No quoting, comment or encoded word.
_LOCAL_ATOM = r"[A-Za-z0-9#$&'*+/=?^_`{|}~-]+"
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_TOP_LABEL = r"[A-Za-z][A-Za-z0-9-]{0,61}[A-Za-z0-9]"  # two characters at least
_EMAIL = re.compile(
    rf"{_LOCAL_ATOM}(?:\.{_LOCAL_ATOM})*@(?:{_LABEL}\.)+{_TOP_LABEL}", flags=re.ASCII
)
_MAX_LOCAL, _MAX_ADDRESS = 64, 254  # RFC 5321's limits on a local part and a path
_MAX_IDENT = 64
# 12 hex digits (48 bits) of a draft's hash name it in idempotency keys, Message-IDs, buttons and
# cards: short enough for a 64-byte button and a log line, while two versions of one PO
# colliding stays out of reach.
HASH_PREFIX = 12


def is_identifier(text: str) -> bool:
    """A SKU or supplier id: letters and digits joined by single . _ / - characters."""
    return len(text) <= _MAX_IDENT and _IDENT.match(text) is not None


def is_email(text: str) -> bool:
    """A plain ASCII address a supplier can be mailed at, shown in To exactly as it is given
    in RCPT TO: no display names, lists, quoting, comments, encoded words or routing."""
    local = text.partition("@")[0]
    return (
        len(text) <= _MAX_ADDRESS
        and len(local) <= _MAX_LOCAL
        and "=?" not in local  # an RFC 2047 encoded word: a mail reader shows it decoded
        and _EMAIL.fullmatch(text) is not None
    )


def mask_email(address: str) -> str:
    """ "orders@supplier.pk" -> "or***@supplier.pk": enough to recognise, too little to use."""
    local, _, domain = address.rpartition("@")
    return f"{local[:2] if len(local) > 2 else local[:1]}***@{domain}"


@dataclass(frozen=True)
class DraftLine:
    """One ordered item; money in integer paisa so the hash never sees a float."""

    sku: str
    description: str
    quantity: int
    unit_price_paisa: int
    note: str = ""  # the requester's note for this line, as typed; never an instruction
    # The terms' category of the offer it is bought under (core.drafting.terms.Offer), lower case;
    # "" uncategorised. On the line, not looked up again: the budget it counts against is part of
    # what an approver approves, and routing and budgets read the draft alone.
    category: str = ""
    # Sales tax on top of the price, in hundredths of a percent (1800: 18%); 0: the price is
    # final. From the offer's gst_percent (core.drafting.terms).
    gst_basis_points: int = 0
    # The date the requester needs this line by (the sheet's needed_by), if they said.
    needed_by: date | None = None

    @property
    def total_paisa(self) -> int:
        """Quantity times unit price, in paisa: the line's amount before sales tax."""
        return self.quantity * self.unit_price_paisa

    @property
    def gst_paisa(self) -> int:
        """The sales tax on the line's amount, rounded half up to the paisa."""
        return sales_tax(self.total_paisa, self.gst_basis_points)

    @property
    def gross_paisa(self) -> int:
        """The line's amount with its sales tax: what a budget counts."""
        return self.total_paisa + self.gst_paisa


def sales_tax(amount_paisa: int, basis_points: int) -> int:
    """Tax at `basis_points` hundredths of a percent on an amount, rounded half up."""
    return (amount_paisa * basis_points + 5_000) // 10_000


@dataclass(frozen=True)
class Flag:
    """Something an approver must see before approving; part of what the hash covers.

    `amounts` are paisa or units as the code says (see core.drafting.flags); `ref` names another
    supplier, PO or terms version the flag compares with.
    """

    code: str
    sku: str = ""
    amounts: tuple[int, ...] = ()
    ref: str = ""


@dataclass(frozen=True)
class Draft:
    """Every field is material: changing any of them makes a new version and hash."""

    po_number: str
    supplier_id: str
    supplier_name: str
    recipient_email: str
    terms_version: str
    lines: tuple[DraftLine, ...] = field(default_factory=tuple)
    flags: tuple[Flag, ...] = ()
    # Where and when and on what terms (issue 23); "" or None: not said, as drafts before.
    company_version: str = ""  # the company file's version (core.company) it was made under
    branch_id: str = ""  # the branch it is delivered to (core.company.Branch)
    payment_terms: str = ""  # the supplier's, from the terms: "30 days credit"
    delivery_date: date | None = None  # see core.drafting.intake.delivery_date

    # The sums below are kept once made (cached_property): a draft is immutable, and a card
    # of a 10,000-line draft asks for each several times.

    def __post_init__(self) -> None:
        object.__setattr__(self, "lines", tuple(self.lines))  # hashable, whatever was passed
        object.__setattr__(self, "flags", tuple(self.flags))
        validate(self)

    @functools.cached_property
    def subtotal_paisa(self) -> int:
        """Sum of the line totals before sales tax, in paisa."""
        return sum(line.total_paisa for line in self.lines)

    @functools.cached_property
    def gst_paisa(self) -> int:
        """The sales tax of every line, in paisa; 0 when no line is taxed."""
        return sum(line.gst_paisa for line in self.lines)

    @functools.cached_property
    def total_paisa(self) -> int:
        """What the PO costs, sales tax included: what approval rules and budgets use. Summed
        once per draft (and shared by its renumbered copies): routing, the job row and the
        stored draft each ask for it inside the write transaction."""
        return self.subtotal_paisa + self.gst_paisa

    def renumbered(self, po_number: str) -> Draft:
        """This draft under another PO number, as a sheet's planned drafts are numbered when
        they are recorded: only the number is checked (the lines were, when this draft was
        made), and the canonical bytes of the lines, if made already, are shared, not made
        again inside the write transaction."""
        _check_po_number(po_number)
        twin = object.__new__(Draft)
        for name in _FIELDS:
            object.__setattr__(twin, name, getattr(self, name))
        object.__setattr__(twin, "po_number", po_number)
        for shared in ("_bulk", "subtotal_paisa", "gst_paisa", "total_paisa"):  # cached_property
            if shared in self.__dict__:
                twin.__dict__[shared] = self.__dict__[shared]
        return twin

    # A draft is immutable, so its canonical bytes and hash are computed once per object: a
    # 10,000-line draft is hashed, sealed and compared within one write transaction, which
    # must stay short. (dataclass equality and repr look at the fields only.)
    #
    # The bytes are json.dumps(to_dict(draft), sort_keys=True, separators=(",", ":"),
    # ensure_ascii=False), made member by member: "flags" and "lines", the bulk, sort next to
    # each other (no header key falls between them), and are made once for a draft and the
    # copies renumbered() makes of it.
    @functools.cached_property
    def _bulk(self) -> str:
        data = to_dict(self)
        return ",".join(_member(key, data[key]) for key in _BULK if key in data)

    @functools.cached_property
    def _canonical(self) -> bytes:
        header = _header(self)
        before = [_member(key, header[key]) for key in sorted(header) if key < _BULK[0]]
        after = [_member(key, header[key]) for key in sorted(header) if key > _BULK[-1]]
        return f"{{{','.join([*before, self._bulk, *after])}}}".encode()

    @functools.cached_property
    def _hash(self) -> str:
        return hashlib.sha256(self._canonical).hexdigest()


_FIELDS = tuple(f.name for f in dataclasses.fields(Draft))
_BULK = ("flags", "lines")  # to_dict's keys that sort together, between _header's


def _member(key: str, value: Any) -> str:
    """One member of a canonical JSON object, as json.dumps(sort_keys=True) writes it."""
    return _dumps(key) + ":" + _dumps(value)


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def is_po_number(text: str) -> bool:
    """Whether `text` may be a PO number: a plain identifier of at most 64 characters."""
    return len(text) <= _MAX_IDENT and _PO_NUMBER.fullmatch(text) is not None


def _check_po_number(po_number: str) -> None:
    if not is_po_number(po_number):
        raise InvalidDraft(f"PO number {po_number!r} is not a plain identifier")


def validate(draft: Draft) -> None:
    """Raise InvalidDraft naming the first field that cannot be sent to a supplier."""
    _check_po_number(draft.po_number)
    if not is_identifier(draft.supplier_id):
        raise InvalidDraft(f"supplier id {draft.supplier_id!r} is not a plain identifier")
    if not is_email(draft.recipient_email):
        raise InvalidDraft("recipient e-mail address is malformed")
    if not draft.terms_version:
        raise InvalidDraft("terms version is empty")
    if not draft.lines:
        raise InvalidDraft("a purchase order needs at least one line")
    for number, line in enumerate(draft.lines, start=1):
        if not is_identifier(line.sku):
            raise InvalidDraft(f"line {number}: SKU {line.sku!r} is not a plain identifier")
        # exactly int (not bool, not float): equal drafts must have equal canonical bytes
        if type(line.quantity) is not int or type(line.unit_price_paisa) is not int:
            raise InvalidDraft(f"line {number}: quantity and price must be whole numbers")
        if line.quantity <= 0:
            raise InvalidDraft(f"line {number}: quantity must be positive")
        if line.unit_price_paisa < 0:
            raise InvalidDraft(f"line {number}: unit price must not be negative")
        if type(line.gst_basis_points) is not int or not 0 <= line.gst_basis_points <= 10_000:
            raise InvalidDraft(f"line {number}: sales tax must be 0 to 100 percent")


def to_dict(draft: Draft) -> dict[str, Any]:
    """The draft as plain JSON-ready data; empty notes, categories and flags are left out, so
    drafts made before those fields existed keep their bytes and hash."""
    # Built field by field: dataclasses.asdict deep-copies every value and took 0.2 s for
    # 10,000 lines. The keys are the dataclasses' field names, as asdict would give them.
    data = _header(draft)
    data["lines"] = [_line_dict(line) for line in draft.lines]
    if draft.flags:
        data["flags"] = [
            {"code": f.code, "sku": f.sku, "amounts": list(f.amounts), "ref": f.ref}
            for f in draft.flags
        ]
    return data


def _header(draft: Draft) -> dict[str, Any]:
    """to_dict's members but the lines and flags."""
    data: dict[str, Any] = {
        "po_number": draft.po_number,
        "supplier_id": draft.supplier_id,
        "supplier_name": draft.supplier_name,
        "recipient_email": draft.recipient_email,
        "terms_version": draft.terms_version,
    }
    for name in ("company_version", "branch_id", "payment_terms"):
        if getattr(draft, name):
            data[name] = getattr(draft, name)
    if draft.delivery_date is not None:
        data["delivery_date"] = draft.delivery_date.isoformat()
    return data


def _line_dict(line: DraftLine) -> dict[str, Any]:
    data: dict[str, Any] = {
        "sku": line.sku,
        "description": line.description,
        "quantity": line.quantity,
        "unit_price_paisa": line.unit_price_paisa,
    }
    if line.note:
        data["note"] = line.note
    if line.category:
        data["category"] = line.category
    if line.gst_basis_points:
        data["gst_basis_points"] = line.gst_basis_points
    if line.needed_by is not None:
        data["needed_by"] = line.needed_by.isoformat()
    return data


def from_dict(data: dict[str, Any]) -> Draft:
    """Rebuild a draft from `to_dict` output (drafts stored before flags existed have none)."""
    lines = tuple(DraftLine(**_dated(line, "needed_by")) for line in data["lines"])
    flags = tuple(
        Flag(f["code"], f["sku"], tuple(f["amounts"]), f["ref"]) for f in data.get("flags", ())
    )
    return Draft(**{**_dated(data, "delivery_date"), "lines": lines, "flags": flags})


def _dated(data: dict[str, Any], name: str) -> dict[str, Any]:
    """`data` with its ISO date at `name` (if any) as a date."""
    if data.get(name) is None:
        return data
    return {**data, name: date.fromisoformat(data[name])}


def canonical_bytes(draft: Draft) -> bytes:
    """Canonical JSON: sorted keys, no spaces, UTF-8, integers only for money."""
    return draft._canonical


def from_canonical(data: bytes) -> Draft:
    """Parse canonical bytes, as canonical_bytes wrote them, back into a draft that keeps them:
    its hash is theirs, not written out again. Writing out a 10,000-line draft took longer
    than parsing it, and rebuilds give back the same bytes (tests/unit/test_drafts.py)."""
    draft = from_dict(json.loads(data))
    draft.__dict__["_canonical"] = bytes(data)  # functools.cached_property's own slot
    return draft


def draft_hash(draft: Draft) -> str:
    """Hex sha256 of the canonical bytes: what a reviewer approves."""
    return draft._hash


def short_hash(full_hash: str) -> str:
    """The first HASH_PREFIX hex digits of a draft hash: how keys, buttons and cards name it."""
    return full_hash[:HASH_PREFIX]


@dataclass(frozen=True)
class LineDiff:
    """One line an edit changed: its number in the shown draft, SKU, and quantity before and
    after (0: dropped)."""

    line: int
    sku: str
    before: int
    after: int

    def plain(self) -> dict[str, Any]:
        """As JSON for the audit trail."""
        return {"line": self.line, "sku": self.sku, "before": self.before, "after": self.after}


def line_diff(old: Draft, new: Draft) -> list[LineDiff]:
    """The lines of `old` whose quantity `new` changes, numbered as in `old` (after 0: the line
    was dropped). Matched by SKU, which names one line of a draft (one order line each)."""
    after = {line.sku: line.quantity for line in new.lines}
    return [
        LineDiff(number, line.sku, line.quantity, after.get(line.sku, 0))
        for number, line in enumerate(old.lines, start=1)
        if after.get(line.sku, 0) != line.quantity
    ]

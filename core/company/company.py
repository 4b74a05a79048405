"""The buyer and its branches, as the company file says them (core.company.company_file)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass

# A branch's id: what a sheet's ship_to column and /branch name (as a group's name is written).
BRANCH_ID = r"[a-z][a-z0-9_-]{0,31}"


@dataclass(frozen=True)
class Company:
    """The buyer, its branches in the file's order, and the branch a requester without one
    orders for. `version` names the stored version ("" for a file not imported)."""

    buyer: Buyer
    branches: tuple[Branch, ...]
    default_branch: str
    version: str = ""

    def branch(self, branch_id: str) -> Branch | None:
        """The branch of that id, or None."""
        return next((b for b in self.branches if b.branch_id == branch_id), None)


@dataclass(frozen=True)
class Branch:
    """Where stock is delivered: a branch's id, its name and its address."""

    branch_id: str
    name: str
    address: str


@dataclass(frozen=True)
class Buyer:
    """Who buys, as a supplier's accountant files it: the legal name and address, and the
    tax numbers if the buyer is registered (NTN with the FBR, STRN for sales tax)."""

    name: str
    address: str
    ntn: str | None = None
    strn: str | None = None
    phone: str | None = None


# Who a PO names as its buyer while no company file is imported: the bot's own name, as the
# e-mails before company files said it.
UNNAMED_BUYER = Buyer("Manzoori", "")


def content_hash(company: Company) -> str:
    """sha256 of the company's content in canonical form: the identity of a version, whatever
    the file's layout, comments or key order (the branches' order counts: it is how they are
    listed)."""
    plain = {
        "buyer": asdict(company.buyer),
        "branches": [asdict(b) for b in company.branches],
        "default_branch": company.default_branch,
    }
    data = json.dumps(plain, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(data.encode("utf-8")).hexdigest()

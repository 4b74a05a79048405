"""The buyer and its branches in words: the reply to a company file, and `manzoori company
show` / `check` (in English). Core holds them as data (core.company.company)."""

from __future__ import annotations

from bot.words.i18n import ENGLISH, N_, Translator
from core.company.company import Company
from core.texts import flatten


def company_lines(company: Company, *, tr: Translator = ENGLISH) -> list[str]:
    """The company, one line each: version, the buyer and its numbers, then each branch."""
    buyer = company.buyer
    version = company.version or tr("not imported")
    lines = [
        tr("Version: {version}", version=version),
        tr("Buyer: {name}, {address}", name=flatten(buyer.name), address=flatten(buyer.address)),
    ]
    numbers = (
        (N_("NTN {value}"), buyer.ntn),
        (N_("STRN {value}"), buyer.strn),
        (N_("Phone {value}"), buyer.phone),
    )
    given = [tr(label, value=flatten(value)) for label, value in numbers if value]
    if given:
        lines.append(" · ".join(given))
    for branch in company.branches:
        where = {"branch": branch.branch_id, "name": flatten(branch.name)}
        where["address"] = flatten(branch.address)
        if branch.branch_id == company.default_branch:
            lines.append(tr("Branch {branch}: {name}, {address} (the default)", **where))
        else:
            lines.append(tr("Branch {branch}: {name}, {address}", **where))
    return lines

"""The catalogue from a test's side: terms of thousands of SKUs over two suppliers and four
categories, the company's branches, a policy with monthly budgets, and a cart as the page
sends it."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from bot.files.sheets import read_csv_text
from core.approval.approval_policy import import_policy
from core.approval.policies import Policy
from core.company.imports import import_company
from core.jobs.jobs import Stamp
from core.people import people
from core.purchasing import new_terms
from tests.helpers.factories import APPROVER_A, T0

COMPANY = (Path(__file__).parents[2] / "samples" / "company.toml").read_text(encoding="utf-8")
CATEGORIES = ("accessories", "chargers", "cables", "audio")
SUPPLIERS = (
    ("SUP-HALL", "Hall Road Traders", "orders@hallroad.example"),
    ("SUP-SADDAR", "Saddar Wholesale", "sales@saddar.example"),
)
# A budget for two of the categories; the policy's one group is the default approvers'.
POLICY = """
[groups]
managers = "Managers"

[[rules]]
name = "default"
stages = [{ group = "managers" }]

[budgets]
mode = "soft"
over_budget_stage = { group = "managers" }
monthly_pkr = { accessories = 1_000_000, chargers = 600_000 }
"""


def sku(n: int) -> str:
    """The n-th SKU of the catalogue: CAT-00001 upwards."""
    return f"CAT-{n:05}"


def price_paisa(n: int) -> int:
    """The n-th SKU's unit price, in paisa."""
    return (100 + n) * 100 + 50


def catalogue_terms(skus: int) -> bytes:
    """Terms of `skus` SKUs: odd ones from Hall Road, even ones from Saddar, every tenth from
    both (Saddar's Rs 5 dearer); min 2, max 500, lead days and 18% GST on chargers."""
    rows = [
        "supplier_id,supplier_name,supplier_email,sku,description,unit_price_pkr,min_qty,"
        "max_qty,category,lead_days,gst_percent"
    ]
    for n in range(1, skus + 1):
        category = CATEGORIES[n % len(CATEGORIES)]
        gst = "18" if category == "chargers" else ""
        sellers = [SUPPLIERS[n % 2 == 0]] if n % 10 else list(SUPPLIERS)
        for i, (sid, name, email) in enumerate(sellers):
            price = price_paisa(n) + 500 * i
            rows.append(
                f"{sid},{name},{email},{sku(n)},{category.title()} item {n} model {n * 7 % 1000},"
                f"{price // 100}.{price % 100:02},2,500,{category},{n % 9},{gst}"
            )
    return ("\n".join(rows) + "\n").encode()


async def with_catalogue(store: Any, skus: int, *, company: bool = True, budgets: bool = True):
    """The terms of `skus` SKUs in force; the sample company file and the budget policy too."""
    table = read_csv_text(catalogue_terms(skus))
    assert (await new_terms.import_terms(store, table, T0, "test")).created
    if company:
        assert (await import_company(store, COMPANY, T0, "cli:test")).created
    if budgets:  # Ali (approver A) is the managers' group, which the policy asks
        assert (await import_policy(store, POLICY, T0, "cli:test")).created
        default = Policy.default(500_000 * 100)
        await people.set_groups(store, APPROVER_A, ["managers"], Stamp("test", T0), default)


def cart(*lines: tuple[str, str | None, int], **more: Any) -> dict[str, Any]:
    """A cart as the page sends it: (sku, supplier id, quantity) lines and a fresh id."""
    return {
        "id": str(uuid.uuid4()),
        "branch": None,
        "needed_by": None,
        "lines": [
            {"sku": s, "supplier_id": supplier, "quantity": q, "note": ""}
            for s, supplier, q in lines
        ],
        **more,
    }

"""The Mini App's view JSON (bot/web/views.render) of a PO view built by hand: each line's last
sent price and drift, the chain and who decided, the evidence, in English and in Urdu."""

from __future__ import annotations

from dataclasses import replace
from datetime import date, timedelta
from decimal import Decimal

from cryptography.fernet import Fernet

from bot.config import Settings
from bot.web.views import render
from bot.words.i18n import Language, translator
from core.approval.policies import Outcome, Verdict
from core.approval.routes import StageReason
from core.jobs.jobs import Job
from core.jobs.states import State
from core.purchasing.po_view import ChainDecision, ChainStage, LastSent, PoLine, PoView
from tests.helpers.factories import T0, new_job

SETTINGS = Settings(
    _env_file=None,  # type: ignore[call-arg]
    manzoori_secret_key=Fernet.generate_key().decode(),
    manzoori_data_key=Fernet.generate_key().decode(),
)
HASH = "cc905f2486c4" + "0" * 52
JOB = replace(
    Job.received(new_job(), "PO-2026-0042", T0),
    state=State.AWAITING_APPROVAL,
    draft_version=3,
    draft_hash=HASH,
    decision_deadline=T0 + timedelta(hours=24),
)
CHARGER = PoLine(
    1, "ADP-65W", "65 W charger", 10, 450_000, 4_500_000,
    LastSent("PO-2026-0041", 400_000, T0 - timedelta(days=80)), Decimal("12.5"), True,
)  # fmt: skip
HUB = PoLine(
    2, "HUB-7P", "7-port hub", 4, 300_000, 1_200_000, None, None, False,
    note="for the\nLiberty branch", category="accessories",
)  # fmt: skip
VIEW = PoView(
    job=JOB, supplier_name="Hall Road Electronics", supplier_email="or***@supplier.example",
    requester="Bilal", draft_version=3, draft_hash=HASH, total_paisa=5_700_000,
    deadline=JOB.decision_deadline, lines=(CHARGER, HUB), flags=(), budgets=(),
    terms_version="terms-2026-11", terms_imported_at=T0, sheet_name="restock.csv",
    policy_version="p7", rule="chain",
    chain=(
        ChainStage("managers", "Managers", StageReason.RULE, 1,
                   (ChainDecision("Sana", Verdict.APPROVE, T0, "Ali", None),), False),
        ChainStage("owners", "Owners", StageReason.DRIFT, 2, (), True),
    ),
    outcome=Outcome.PENDING, refusal=None, needs_reason=False,
)  # fmt: skip


def test_every_line_with_its_last_price_and_drift_and_the_chain_in_english():
    shown = render(VIEW, SETTINGS, translator(Language.EN), None)
    assert (shown["po"], shown["version"], shown["hash"], shown["dir"]) == (
        "PO-2026-0042", 3, HASH, "ltr",
    )  # fmt: skip
    assert shown["version_text"] == "Draft v3 · cc905f2486c4"
    assert shown["total_text"] == "Total: Rs 57,000.00"
    assert shown["deadline"] == "2026-11-30T09:00:00+00:00"
    charger, hub = shown["lines"]
    assert charger["last"] == "Last sent PO PO-2026-0041, 10 Sep: Rs 4,000.00 each (+12.5%)"
    assert charger["drift"] == "▲ 12.5% above the last PO: past the drift tolerance"
    assert (charger["amount"], charger["unit_price_paisa"]) == ("Rs 45,000.00", 450_000)
    assert (hub["last"], hub["drift"]) == (None, None)  # never sent to this supplier
    assert (hub["note"], hub["category"]) == ("for the Liberty branch", "accessories")  # one line
    assert (charger["note"], charger["category"]) == (None, None)
    assert shown["chain"] == [
        {"text": "Stage 1 of 2: Managers, 1 approval", "waiting": False,
         "decided": ["✅ Sana for Ali at 29 Nov 2026, 14:00 PKT"]},
        {"text": "⏳ Stage 2 of 2: Owners, 2 approvals", "waiting": True, "decided": []},
    ]  # fmt: skip
    assert shown["evidence"] == [
        "📎 Terms terms-2026-11 (imported 29 Nov 2026, 14:00 PKT); sheet restock.csv",
        "Requested by Bilal",
        "Policy p7, rule chain",
    ]
    assert shown["decision"] == {"allowed": True, "why": None, "needs_reason": False}
    assert shown["labels"]["new_total"] == "New total: {amount}"  # the page fills it in


def test_tax_and_delivery_are_said_when_the_draft_has_them():
    taxed = replace(
        VIEW, total_paisa=6_726_000, gst_paisa=1_026_000, branch_id="liberty",
        delivery_date=date(2026, 12, 12), payment_terms="30 days credit",
        lines=(replace(CHARGER, gst_basis_points=1800), replace(HUB, gst_basis_points=1800)),
    )  # fmt: skip
    shown = render(taxed, SETTINGS, translator(Language.EN), None)
    assert shown["total_text"] == "Total with GST: Rs 67,260.00 (GST Rs 10,260.00)"
    assert shown["delivery_text"] == (
        "📦 Deliver to liberty · 🗓 Delivery by 12 Dec 2026 · 💳 Payment: 30 days credit"
    )
    assert [line["gst_basis_points"] for line in shown["lines"]] == [1800, 1800]
    assert render(VIEW, SETTINGS, translator(Language.EN), None)["delivery_text"] is None


def test_in_urdu_every_text_is_translated_and_values_stay_isolated():
    shown = render(VIEW, SETTINGS, translator(Language.UR), "وجہ")
    assert (shown["lang"], shown["dir"]) == ("ur", "rtl")
    english = render(VIEW, SETTINGS, translator(Language.EN), None)
    for name, text in shown["labels"].items():
        assert text != english["labels"][name], name  # from the Urdu catalogue
    assert "\u2068{amount}\u2069" in shown["labels"]["new_total"]  # the page's placeholder kept
    assert "\u2068PO-2026-0041\u2069" in shown["lines"][0]["last"]
    assert shown["decision"]["why"] == "وجہ"

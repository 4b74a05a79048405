"""The requester's news that an approver changed their PO (core.purchasing.edits), in English and
Urdu."""

from __future__ import annotations

from bot.telegram.texts import edit_notice
from bot.words.i18n import Language, translator
from core.drafting.drafts import LineDiff

CHANGES = (LineDiff(2, "CBL-USB-C-1M", 1250, 300), LineDiff(3, "HUB-7P", 4, 0))
FSI, PDI = "\u2068", "\u2069"


def test_the_requester_reads_who_changed_which_line_and_the_new_total():
    text = edit_notice("PO-2026-0042", "Ali\nApproved", CHANGES, 5_250_000)
    assert text.splitlines() == [
        "Ali Approved changed PO-2026-0042 before approving it:",  # a name cannot forge a line
        "Line 2 (CBL-USB-C-1M): 1,250 → 300",
        "Line 3 (HUB-7P): 4 → dropped",
        "New total: Rs 52,500.00",
    ]


def test_in_urdu_each_value_keeps_its_own_direction():
    text = edit_notice("PO-2026-0042", "Ali", CHANGES, 5_250_000, tr=translator(Language.UR))
    first, cable, hub, total = text.splitlines()
    assert first.startswith(f"{FSI}Ali{PDI} نے {FSI}PO-2026-0042{PDI}")
    assert cable == f"لائن {FSI}2{PDI} ({FSI}CBL-USB-C-1M{PDI}): {FSI}1,250{PDI} → {FSI}300{PDI}"
    assert hub.endswith("نکال دی گئی") and f"{FSI}Rs 52,500.00{PDI}" in total

"""The shell's words for what core gives as data, in English and in Urdu: file problems
(bot.words.problems), flags (bot.words.flags), tap refusals (bot.telegram.decisions), the policy
(bot.words.policy_texts), /history (bot.words.reports) and people's refusals (bot.words.refusals).
Every code has a sentence; in Urdu each value is an isolated run and nothing else is an English
sentence (tests.helpers.urdu)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from bot.telegram.decisions import delegation_refusal, turn_refusal
from bot.words import reports
from bot.words.flags import FLAG_TEXTS, flag_text
from bot.words.i18n import ENGLISH, FSI, Language, isolated, translator
from bot.words.policy_texts import ladder_text, policy_lines
from bot.words.problems import COUNTED, PROBLEM_TEXTS, problem_lines, problem_text
from bot.words.refusals import REFUSAL_TEXTS, refusal_text
from core.approval.ladder import Ladder, WorkingHours
from core.approval.policy_file import parse_policy
from core.drafting.drafts import Flag
from core.drafting.flags import FlagCode
from core.errors import DelegationRefused, GroupRefused, NotYourTurn, Refusal
from core.problems import Place, Problem, ProblemCode
from tests.helpers.factories import T0
from tests.helpers.urdu import english_runs

UR = translator(Language.UR)
PKT = ZoneInfo("Asia/Karachi")
SAMPLE = (Path(__file__).parents[2] / "samples" / "approval-policy.toml").read_text()
# One flag of every kind, with amounts as core.drafting.flags.FlagCode says they are.
FLAGS = {
    FlagCode.DUAL_APPROVAL: Flag("dual_approval", "", (60_000_000, 50_000_000)),
    FlagCode.LOWEST_PRICE_CHOSEN: Flag("lowest_price_chosen", "CBL-1", (45_000, 47_000, 2), "S2"),
    FlagCode.CHEAPER_ELSEWHERE: Flag("cheaper_elsewhere", "CBL-1", (47_000, 45_000), "S1"),
    FlagCode.QUANTITY_BELOW_MIN: Flag("quantity_below_min", "CBL-1", (5, 10)),
    FlagCode.QUANTITY_ABOVE_MAX: Flag("quantity_above_max", "CBL-1", (1_500, 500)),
    FlagCode.PRICE_CHANGED: Flag("price_changed", "CBL-1", (40_000, 45_000), "PO-2026-0007"),
    FlagCode.QUANTITY_JUMP: Flag("quantity_jump", "CBL-1", (100, 10), "PO-2026-0007"),
    FlagCode.ZERO_PRICE: Flag("zero_price", "CBL-1"),
    FlagCode.TERMS_PRICE_CHANGED: Flag("terms_price_changed", "CBL-1", (0, 45_000), "T1"),
    FlagCode.TERMS_LIMITS_CHANGED: Flag("terms_limits_changed", "CBL-1", (1, 50, 10, 0), "T1"),
    FlagCode.TERMS_DESCRIPTION_CHANGED: Flag("terms_description_changed", "CBL-1", (), "T1"),
    FlagCode.SUPPLIER_DETAILS_CHANGED: Flag("supplier_details_changed", "", (), "T1"),
    FlagCode.SKU_WITHDRAWN: Flag("sku_withdrawn", "CBL-1", (30,), "T1"),
    FlagCode.NEEDED_TOO_SOON: Flag("needed_too_soon", "CBL-1", (20261206, 20261208, 3)),
    FlagCode.TERMS_TAX_CHANGED: Flag("terms_tax_changed", "CBL-1", (1700, 1800), "T1"),
}


def test_every_problem_code_and_every_flag_code_has_its_sentence():
    assert set(PROBLEM_TEXTS) | COUNTED == set(ProblemCode)
    assert set(FLAG_TEXTS) == set(FlagCode) == set(FLAGS)


@pytest.mark.parametrize("code", list(FlagCode))
def test_each_flag_reads_in_urdu_with_its_values_isolated(code: FlagCode):
    flag = FLAGS[code]
    english, urdu = flag_text(flag), flag_text(flag, tr=UR)
    assert english != urdu and english_runs(urdu) == []
    if flag.sku:
        assert english.startswith(f"{flag.sku}: ") and isolated(flag.sku) in urdu


def test_a_flags_amounts_and_references_are_filled_in_both_languages():
    lowest = FLAGS[FlagCode.LOWEST_PRICE_CHOSEN]
    assert flag_text(lowest) == (
        "CBL-1: offered by 2 suppliers; this one is the cheapest at Rs 450.00 "
        "(next: S2 at Rs 470.00)"
    )
    assert flag_text(lowest, tr=UR) == (
        f"{isolated('CBL-1')}: {isolated('2')} سپلائر پیش کرتے ہیں؛ یہ سب سے سستا ہے، "
        f"{isolated('Rs 450.00')} پر (اگلا: {isolated('S2')}، {isolated('Rs 470.00')} پر)"
    )
    limits = FLAGS[FlagCode.TERMS_LIMITS_CHANGED]
    assert flag_text(limits) == "CBL-1: order limits now at least 10, were 1 to 50"
    assert isolated(f"{isolated('1')} سے {isolated('50')} تک") in flag_text(limits, tr=UR)
    free = FLAGS[FlagCode.TERMS_PRICE_CHANGED]
    assert flag_text(free).endswith("was Rs 0.00 (was free)")


# One problem of each kind a requester or an admin meets most, with its values.
PROBLEMS = [
    Problem(3, "sku", ProblemCode.UNKNOWN_SKU, {"value": '"X-1"'}),
    Problem(4, "quantity", ProblemCode.ABOVE_ROW_LIMIT, {"value": "2,000,000", "limit": 1_000_000}),
    Problem(1, None, ProblemCode.MISSING_COLUMNS, {"names": "sku, quantity", "count": 2}),
    Problem(0, None, ProblemCode.TOO_MANY_ROWS, {"limit": 10_000}),
    Problem(0, None, ProblemCode.NO_TERMS),
    Problem(2, "max_qty", ProblemCode.MAX_BELOW_MIN, {"high": 5, "low": 10}, Place.LINE),
    Problem(7, "rules[2]", ProblemCode.NEVER_APPLIES, {"rule": 1, "name": "'any'"}, Place.LINE),
]


def test_problems_read_in_english_as_the_cli_prints_them():
    assert problem_lines(PROBLEMS) == [
        "The sheet has more than 10,000 rows to order; the limit is 10,000. "
        "Split it into smaller sheets.",
        "No supplier terms have been imported yet, so nothing can be priced: an admin must "
        "run `manzoori suppliers import FILE.csv` first.",
        "Row 1: missing columns sku, quantity",
        "Line 2, max_qty: 5 is below min_qty 10",
        'Row 3, sku: "X-1" is not in the current supplier terms',
        "Row 4, quantity: 2,000,000 is more than the 1,000,000 one row can order",
        "Line 7, rules[2]: never applies: rule 1 ('any') applies to every request",
    ]


def test_problems_read_in_urdu_with_their_rows_and_values_isolated():
    lines = problem_lines(PROBLEMS, tr=UR)
    assert lines[2] == f"سطر {isolated('1')}: کالم موجود نہیں: {isolated('sku, quantity')}"
    assert lines[4] == (
        f"سطر {isolated('3')}، {isolated('sku')}: {isolated(chr(34) + 'X-1' + chr(34))} "
        "سپلائر کی موجودہ شرائط میں نہیں"
    )
    assert lines[5].startswith(f"سطر {isolated('4')}، {isolated('quantity')}: ")
    assert f"{isolated('2,000,000')} اس حد {isolated('1,000,000')} سے زیادہ" in lines[5]
    assert lines[3].startswith(f"لائن {isolated('2')}، {isolated('max_qty')}: ")
    assert isolated("`manzoori suppliers import FILE.csv`") in lines[1]
    assert [line for line in lines if english_runs(line)] == []


def test_every_problem_code_reads_in_urdu_without_an_english_sentence():
    values = {"value": '"x"', "limit": 5, "count": 2, "names": "a, b", "detail": "d", "digits": 9}
    for code in ProblemCode:
        wanted = {k: "v" for k in ("columns", "optional", "letter", "size", "cell", "length",
                                   "supplier", "others", "sku", "first", "month", "category",
                                   "budget", "committed", "uses", "over", "high", "low", "key",
                                   "bound", "choices", "group", "groups", "name", "rule",
                                   "above", "most", "file", "byte", "branches",
                                   "suggestions")}  # fmt: skip
        said = problem_text(Problem(2, "c", code, {**wanted, **values}), tr=UR)
        assert english_runs(said) == [], (code, said)
        assert said != problem_text(Problem(2, "c", code, {**wanted, **values})) or code in (
            ProblemCode.UNREADABLE_VALUE,  # core.approval.ladder's words, as they are
        )


def test_more_problems_than_a_reply_lists_are_counted_in_the_readers_language():
    many = [Problem(n, "sku", ProblemCode.EMPTY) for n in range(2, 6)]
    assert problem_lines(many, limit=2)[-1] == "… and 2 more problems"
    assert problem_lines(many, limit=2, tr=UR)[-1] == f"… اور {isolated('2')} مزید مسائل"


def test_a_refused_tap_names_the_stage_and_group_in_the_tappers_language():
    refused = NotYourTurn(2, "owners")
    assert str(refused) == "stage 2 waits for owners"  # for logs
    assert (refused.stage, refused.group) == (2, "owners")
    assert turn_refusal(refused) == "Not your turn: stage 2 waits for owners."
    assert turn_refusal(refused, tr=UR) == (
        f"ابھی آپ کی باری نہیں: مرحلہ {isolated('2')} گروپ {isolated('owners')} کا منتظر ہے۔"
    )
    assert delegation_refusal("Sana") == "Not counted: you no longer act for Sana; they are back."
    assert delegation_refusal("Sana", tr=UR) == (
        f"شمار نہیں ہوا: اب آپ {isolated('Sana')} کی جگہ فیصلہ نہیں کرتے؛ وہ واپس آ گئے ہیں۔"
    )


def test_the_policy_reads_in_each_language_with_the_same_facts():
    policy, problems = parse_policy(SAMPLE)
    assert policy is not None and problems == []
    english, urdu = policy_lines(policy), policy_lines(policy, tr=UR)
    assert len(english) == len(urdu)
    assert english[2].startswith("Rule 1, ")
    assert urdu[2].startswith(f"اصول {isolated('1')}، ")
    assert [line for line in urdu if english_runs(line)] == []


def test_the_ladder_reads_in_urdu_with_its_durations_and_hours():
    ladder = Ladder(
        WorkingHours.parse("Mon-Sat 09:00-19:00"),
        remind_after=timedelta(hours=2),
        escalate_after=timedelta(hours=6),
        escalate_to="owners",
        before_expiry=timedelta(minutes=90),
    )
    assert ladder_text(ladder) == (
        "remind after 2h, escalate to the admins and owners after 6h, warn 90m before expiry; "
        "working hours Mon,Tue,Wed,Thu,Fri,Sat 09:00-19:00"
    )
    urdu = ladder_text(ladder, tr=UR)
    assert urdu.startswith(f"{FSI}{isolated('2h')} بعد یاد دہانی، ")  # the steps: one run
    assert isolated("09:00-19:00") in urdu and english_runs(urdu) == []
    assert ladder.canonical() == ladder_text(ladder, tr=ENGLISH)  # the hashed words


def test_history_reads_in_urdu_with_its_codes_isolated():
    detail = {
        "po_number": "PO-2026-0042", "state": "approved", "draft_version": 2,
        "draft_hash": "cc90", "supplier_id": "SUP-LHR-07", "total_paisa": 100,
        "purged_at": None, "purged": {},
        "approvals": [{
            "at": T0.isoformat(), "reviewer_id": 1, "reviewer": "Ali", "for_id": 2,
            "for": "Sana", "decision": "approve", "draft_version": 2, "stage": 1,
            "expires_at": T0.isoformat(), "reason": None,
        }],
        "effects": [],
        "audit": [{
            "at": T0.isoformat(), "actor": "user:1", "action": "approve",
            "from_state": "awaiting_approval", "to_state": "approved", "detail": {},
        }],
    }  # fmt: skip
    english = reports.text(detail, PKT).splitlines()
    assert english[4].endswith("approved by Ali (1) for Sana (2)  v2  stage 1  expires "
                               "2026-11-29 14:00:00 PKT")  # fmt: skip
    urdu = reports.text(detail, PKT, tr=UR).splitlines()
    assert urdu[3] == "منظوریاں:" and urdu[5] == "ترسیلات:" and urdu[6] == "آڈٹ:"
    assert f"{isolated('Ali')} ({isolated('1')}) نے منظور کیا" in urdu[4]
    assert f"مرحلہ {isolated('1')}" in urdu[4]
    assert [line for line in urdu if english_runs(line)] == []


@pytest.mark.parametrize(
    ("text", "runs"),
    [
        ("سطر ⁨3⁩: خالی ہے", []),  # Urdu with an isolated number
        ("سطر 3: is not in the current terms", ["is not in the current terms"]),  # English
        ("⁨is not in the current terms⁩ خالی", []),  # inside an isolate: a value
        ("فائل CSV UTF-8 ہے", []),  # tokens that stay Latin
        ("Not your turn: مرحلہ", ["Not your turn"]),  # three words are a sentence
        ("/invite approver سے", []),  # a command
        ("⁨⁨a b c⁩ d e f⁩ g h i", ["g h i"]),  # nested isolates, then a run outside
    ],
)
def test_the_english_detector_finds_sentences_and_lets_values_be(text, runs):
    assert english_runs(text) == runs


def test_every_refusal_reason_has_its_sentence_in_both_languages():
    assert set(REFUSAL_TEXTS) == set(Refusal)
    back = DelegationRefused("log words", Refusal.DELEGATION_BACK, delegate=7, delegator=9)
    assert str(back) == "log words"  # for logs; the person reads the shell's
    assert refusal_text(back) == "user 7 has delegated to user 9: no delegation back"
    assert refusal_text(back, tr=UR) == (
        f"صارف {isolated('7')} پہلے ہی صارف {isolated('9')} کو اپنا نائب بنا چکے ہیں: "
        "جوابی نیابت نہیں ہو سکتی"
    )
    values = {"role": "admin", "groups": "g", "known": "k", "user": 7, "text": "'x'",
              "days": 90, "delegate": 7, "delegator": 9, "first": "2026-12-04",
              "last": "2027-03-03", "longest": "90d", "branch": "b"}  # fmt: skip
    for reason in Refusal:
        said = refusal_text(GroupRefused("", reason, **values), tr=UR)
        assert english_runs(said) == [] and said != refusal_text(GroupRefused("", reason, **values))


def test_a_ladder_value_that_does_not_read_is_a_problem_in_the_readers_language():
    policy, problems = parse_policy(SAMPLE.replace('remind_after = "2h"', 'remind_after = "2x"'))
    assert policy is None
    (problem,) = problems
    assert problem.code is ProblemCode.NOT_A_DURATION and problem.values == {"value": "'2x'"}
    assert problem_text(problem).endswith(
        "reminders.remind_after: '2x' is not a duration: a whole number and s, m, h or d, as 2h"
    )
    assert problem_text(problem, tr=UR).endswith(
        f"{isolated(chr(39) + '2x' + chr(39))} مدت نہیں: ایک مکمل عدد اور s، m، h یا d، جیسے 2h"
    )

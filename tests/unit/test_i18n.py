"""The catalogues: every message extracted from the code is in the template and translated into
Urdu, every translation keeps its placeholders, and Urdu isolates its left-to-right runs."""

from __future__ import annotations

import re
import string
from datetime import timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from babel.messages.catalog import Catalog
from babel.messages.extract import extract_from_dir
from babel.messages.frontend import parse_mapping_cfg
from babel.messages.pofile import read_po

from bot.telegram import texts
from bot.web.decisions import edit_refused
from bot.words.i18n import (
    DEFAULT_LANGUAGE,
    DOMAIN,
    ENGLISH,
    FSI,
    LOCALE_DIR,
    PDI,
    Language,
    catalogue_path,
    isolated,
    language_of,
    translator,
)
from bot.words.texts import file_problems, submission, unreachable_warnings
from core.approval.policies import Role
from core.approval.signing import Invite
from core.errors import EditProblem, EditRefused
from core.jobs.states import State
from core.people.people import Invitation
from core.problems import Place, Problem, ProblemCode
from core.purchasing.submissions import Submission
from core.versions import FileKind
from tests.helpers.factories import T0

ROOT = Path(__file__).resolve().parents[2]
# The keywords `make messages` extracts (bot.words.i18n: tr, tr.plural, N_), as Babel takes them.
KEYWORDS = {"tr": None, "plural": (1, 2), "N_": None}
TEMPLATE = LOCALE_DIR / f"{DOMAIN}.pot"
PKT = ZoneInfo("Asia/Karachi")
UR = translator(Language.UR)
LINE = Place.LINE


def _extracted() -> set[str | tuple[str, ...]]:
    """The msgids in the code now, found as `make messages` finds them (babel.cfg)."""
    with (ROOT / "babel.cfg").open() as cfg:
        method_map, options_map = parse_mapping_cfg(cfg)
    found = extract_from_dir(str(ROOT), method_map, options_map, keywords=KEYWORDS, comment_tags=())
    return {message for _file, _line, message, _comments, _context in found}


def _read(path: Path, locale: str | None = None) -> Catalog:
    with path.open("rb") as po:
        return read_po(po, locale=locale)


def _ids(catalogue: Catalog) -> set[str | tuple[str, ...]]:
    return {m.id if isinstance(m.id, str) else tuple(m.id) for m in catalogue if m.id}


def _placeholders(text: str) -> set[str]:
    """The `{name}` fields of a text, as str.format sees them."""
    return {field for _lit, field, _spec, _conv in string.Formatter().parse(text) if field}


def placeholder_problems(catalogue: Catalog) -> list[str]:
    """Each translation whose placeholders are not exactly its msgid's; an empty one too."""
    problems = []
    for message in catalogue:
        if not message.id:
            continue
        ids = [message.id] if isinstance(message.id, str) else list(message.id)
        strings = [message.string] if isinstance(message.string, str) else list(message.string)
        wanted = set().union(*map(_placeholders, ids))
        for form in strings:
            if not form or message.fuzzy:
                problems.append(f"{ids[0]!r}: not translated")
            elif _placeholders(form) != wanted:
                problems.append(f"{ids[0]!r}: {sorted(_placeholders(form))} != {sorted(wanted)}")
    return problems


def test_the_template_holds_exactly_the_messages_in_the_code():
    fresh, committed = _extracted(), _ids(_read(TEMPLATE))
    assert fresh, "nothing extracted: babel.cfg or the keywords are wrong"
    assert fresh - committed == set(), "new messages: run `make messages` and translate them"
    assert committed - fresh == set(), "messages no longer in the code: run `make messages`"


def test_every_message_has_an_urdu_translation_with_exactly_its_placeholders():
    urdu = _read(catalogue_path(Language.UR), "ur")
    assert _ids(urdu) >= _ids(_read(TEMPLATE)), "run `make messages`"
    assert placeholder_problems(urdu) == []
    assert urdu.num_plurals == 2


@pytest.mark.parametrize(
    ("msgid", "msgstr", "problem"),
    [
        ("{po} was approved.", "{po} منظور ہو گیا۔", None),  # kept
        ("{po} was approved.", "منظور ہو گیا۔", "[] != ['po']"),  # dropped
        ("{po} was approved.", "{po_number} منظور ہو گیا۔", "['po_number'] != ['po']"),  # renamed
        ("{po} was approved.", "", "not translated"),  # empty
        (("{count} line", "{count} lines"), ("{count} لائن", "لائنیں"), "[] != ['count']"),
    ],
)
def test_the_placeholder_check_catches_a_dropped_or_renamed_one(msgid, msgstr, problem):
    catalogue = Catalog(locale="ur")
    catalogue.add(msgid, msgstr)
    found = placeholder_problems(catalogue)
    assert found == [] if problem is None else problem in found[0]


def test_a_translation_is_filled_and_each_value_isolated_in_urdu():
    news = texts.requester_notice("PO-2026-0042", State.APPROVED, None, tr=UR)
    assert news.startswith(f"{FSI}PO-2026-0042{PDI} منظور")
    english = texts.requester_notice("PO-2026-0042", State.APPROVED, None)
    assert english == "PO-2026-0042 was approved; the e-mail to the supplier goes out now."
    assert FSI not in english and ENGLISH.ltr("SKU-1") == "SKU-1"
    assert UR.ltr("Rs 1,250.00") == isolated("Rs 1,250.00") == f"{FSI}Rs 1,250.00{PDI}"


def test_urdu_plurals_and_amounts_read_with_western_grouping():
    assert UR.plural("{count} line", "{count} lines", 1) == f"{FSI}1{PDI} لائن"
    assert UR.plural("{count} line", "{count} lines", 1250) == f"{FSI}1,250{PDI} لائنیں"
    listing = texts.status_list([], PKT, tr=UR)
    assert listing == "آپ کا ابھی کوئی پرچیز آرڈر نہیں۔ شروع کرنے کے لیے ری اسٹاک شیٹ بھیجیں۔"


def test_every_isolate_is_closed_on_its_line():
    """An isolate left open would reorder the rest of the line it is on."""
    text = texts.admin_alert("PO-2026-0042", "UNREACHABLE", "Ali\u2067 <x>", tr=UR)
    for line in text.splitlines():
        depth = 0
        for char in line:
            depth += {FSI: 1, PDI: -1}.get(char, 0)
            assert depth >= 0
        assert depth == 0
    assert "\u2067" not in text  # the name's own isolate was flattened away


def test_a_sheet_reply_says_each_row_problem_in_urdu():
    unknown = Problem(3, "sku", ProblemCode.UNKNOWN_SKU, {"value": '"X-1"'})
    refused = Submission(problems=(unknown,), orders=())
    reply = submission(refused, "restock.csv", tr=UR)
    assert reply.splitlines() == [
        f"{isolated('restock.csv')}: قبول نہیں ہوئی؛ کچھ نہیں بنایا گیا۔ براہِ کرم درست کریں:",
        f"سطر {isolated('3')}، {isolated('sku')}: "
        f"{isolated(chr(34) + 'X-1' + chr(34))} سپلائر کی موجودہ شرائط میں نہیں",
    ]


def test_a_stored_language_is_read_back_or_the_default():
    assert language_of("ur") is Language.UR
    assert language_of(None) is language_of("") is language_of("xx") is DEFAULT_LANGUAGE


def test_urdu_dates_are_pakistan_time_with_english_month_names():
    invite = Invite("0123456789ab", Role.APPROVER, T0 + timedelta(hours=72))
    made = Invitation("c0de", invite, group=None)
    shown = texts.invite_link("manzoori_bot", made, PKT, tr=UR)
    assert isolated("02 Dec 2026, 14:00 PKT") in shown
    assert re.search(r"https://t\.me/manzoori_bot\?start=c0de$", shown)


def test_policy_replies_frame_cores_problems_and_description_in_urdu():
    undefined = {"group": "'owners'", "groups": "managers"}
    stage = Problem(3, "rules[1].stages[1].group", ProblemCode.UNDEFINED_GROUP, undefined, LINE)
    refused = file_problems(FileKind.POLICY, [stage], "p.toml", imported=True, tr=UR)
    owners = isolated("'owners'")  # as the problem quotes it
    assert refused.splitlines() == [
        f"{isolated('p.toml')}: درآمد نہیں ہوئی؛ کچھ تبدیل نہیں ہوا۔ براہِ کرم درست کریں:",
        f"لائن {isolated('3')}، {isolated('rules[1].stages[1].group')}: گروپ "
        f"{owners} حصہ [groups] میں متعین نہیں ({isolated('managers')})",
    ]
    (warning,) = unreachable_warnings(["owners"], tr=UR)
    assert warning.startswith(f"گروپ {isolated('owners')} میں") and warning.count(FSI) == 2


@pytest.mark.parametrize("code", list(EditProblem))
def test_every_refused_edit_is_said_in_both_languages_naming_its_line(code):
    refused = EditRefused(code, "refused", line=3)
    english, urdu = edit_refused(refused, ENGLISH), edit_refused(refused, UR)
    assert english != urdu
    if code not in (EditProblem.NOTHING_LEFT, EditProblem.NO_CHANGE):
        assert "3" in english and isolated("3") in urdu

"""The sentences both front ends say about sheets, terms and purchase orders, as plain text.

The CLI prints these and the bot sends them (bot.telegram.texts has what only the bot says).
Amounts go through Babel (`Rs 1,250.50`) and times are shown in MANZOORI_TIMEZONE. File names,
supplier names and the problems found in a file (which quote its cells) come from outside: each
goes through core.texts.flatten where it enters a sentence, so none can add a line to a reply.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, tzinfo
from enum import Enum
from typing import Any, Protocol

from bot.words.flags import flag_text
from bot.words.i18n import ENGLISH, N_, Translator
from bot.words.problems import problem_lines
from core.approval.policies import DEFAULT_GROUP
from core.approval.routes import StageReason
from core.approval.shortfalls import ThinStage
from core.drafting.drafts import Draft, mask_email
from core.drafting.money import format_pkr
from core.drafting.terms import Terms, offers_by_supplier
from core.errors import UnreadableSheet
from core.jobs.jobs import Job
from core.jobs.states import State
from core.problems import Problem
from core.purchasing.new_terms import Superseded, TermsImport
from core.purchasing.requests import Source
from core.purchasing.submissions import Submission
from core.texts import flatten
from core.versions import FileKind

# POs that ended without an e-mail: resending the same file does not reopen them.
CLOSED_UNSENT = frozenset({State.REJECTED, State.CANCELLED, State.EXPIRED, State.FAILED_FINAL})
# Under an accepted sheet's POs when no approver was registered to send a card to, or nobody
# in the group they wait for.
NOBODY_TO_ASK = N_(
    "Note: no approver is registered yet; an admin has been told, and the cards go out as "
    "soon as someone becomes an approver."
)
NOBODY_IN_GROUP = N_(
    "Note: nobody in group {groups} can approve yet; an admin has been told, and the cards "
    "go out as soon as someone is in it."
)


class Refusing(Enum):
    """What a refused file was sent as; the value is the first line of every refusal of such a
    file, whichever check refused it: the file's name, and that nothing came of it."""

    SHEET = N_("{file}: not accepted; nothing was created. Please fix:")  # a restock sheet
    IMPORT = N_("{file}: not imported; nothing changed. Please fix:")  # terms, a policy
    POLICY = N_("{file}: not a valid approval policy. Please fix:")  # `policy check`
    COMPANY = N_("{file}: not a valid company file. Please fix:")  # `company check`


# Details and the Mini App's PDF button, for a PO of more than bot.documents.copies.PREVIEW_LINES.
NO_PDF_PREVIEW = N_(
    "{count} lines are too many for a PDF preview; the supplier's e-mail will carry it."
)


# How a moment is shown, always in MANZOORI_TIMEZONE: on cards and in replies; in a tap's
# answer, beside the card that shows the day; and in the CLI's reports, to the second.
DATE_AND_TIME = "%d %b %Y, %H:%M %Z"  # 29 Nov 2026, 21:27 PKT
TIME_OF_DAY = "%H:%M"  # 21:27
DAY_MONTH = "%d %b"  # 12 Sep: when the last PO a price is compared with was sent
TIMESTAMP = "%Y-%m-%d %H:%M:%S %Z"  # 2026-11-29 21:27:05 PKT


def local_time(moment: datetime, tz: tzinfo, fmt: str = DATE_AND_TIME) -> str:
    """A UTC moment as a person in `tz` reads it, in one of the formats above."""
    return moment.astimezone(tz).strftime(fmt)


def evidence_source(
    terms: str,
    imported_at: str | None,
    sheet_name: str,
    shown: Callable[[str], str],
    *,
    tr: Translator = ENGLISH,
) -> str:
    """The evidence line naming the terms a draft was priced on (and when they were imported)
    and where its lines came from: a sheet by its file name (as `shown` makes it safe), or a
    request typed in a message or picked in the catalogue (core.purchasing.requests)."""
    if sheet_name == Source.TYPED:
        source = tr("typed in a message")
    elif sheet_name == Source.CATALOGUE:
        source = tr("picked in the catalogue")
    else:
        source = tr("sheet {sheet}", sheet=shown(sheet_name))
    if imported_at is None:
        return tr("📎 Terms {terms}; {source}", terms=terms, source=source)
    return tr(
        "📎 Terms {terms} (imported {at}); {source}", terms=terms, at=imported_at, source=source
    )


def _plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def order_summary(job: Job, draft: Draft, *, tr: Translator = ENGLISH) -> list[str]:
    """A PO in a few lines: number, supplier, size, total, then its flags (bot.words.flags)."""
    lines = tr.plural("{count} line", "{count} lines", len(draft.lines))
    head = (
        f"{tr.ltr(job.po_number)}  {tr.ltr(flatten(draft.supplier_name))} "
        f"({tr.ltr(mask_email(draft.recipient_email))})  {lines}  "
        f"{tr.ltr(format_pkr(draft.total_paisa))}"
    )
    return [head, *(f"  ! {flag_text(flag, tr=tr)}" for flag in draft.flags)]


def refusal(
    kind: Refusing,
    file_name: str,
    reasons: UnreadableSheet | Iterable[Problem],
    *,
    tr: Translator = ENGLISH,
) -> str:
    """Why a file was refused, in the one shape every refusal of a file has: the lead naming
    it, then the reasons, one a line: the sentence refusing its bytes (bot.files.sheets,
    bot.files.parsing), or its problems (bot.words.problems: its size, its rows, a budget)."""
    lead = tr(kind.value, file=flatten(file_name))
    if isinstance(reasons, UnreadableSheet):
        return "\n".join([lead, tr(reasons.text, **reasons.params)])
    return "\n".join([lead, *problem_lines(reasons, tr=tr)])


def submission(
    result: Submission, sheet_name: str, *, preview: bool = False, tr: Translator = ENGLISH
) -> str:
    """What became of a sheet: its refusal with every problem (quoting the file), or the POs
    made (or that would be made)."""
    if result.problems:
        return refusal(Refusing.SHEET, sheet_name, result.problems, tr=tr)
    sheet = flatten(sheet_name)
    n = len(result.orders)
    if result.repeated:
        lead = tr.plural(
            "{sheet} was already submitted; it made {count} purchase order:",
            "{sheet} was already submitted; it made {count} purchase orders:",
            n,
            sheet=sheet,
        )
        body = [
            f"{tr.ltr(job.po_number)}  {tr.ltr(flatten(draft.supplier_name))}  "
            f"{tr.ltr(format_pkr(draft.total_paisa))}  {tr.ltr(job.state.value)}"
            for job, draft in result.orders
        ]
        if all(job.state in CLOSED_UNSENT for job, _ in result.orders):
            body.append(
                tr(
                    "None of them was sent. To order the same again, change the file "
                    "(for example, add a note) and send it again."
                )
            )
        return "\n".join([lead, *body])
    elif preview:
        lead = tr.plural(
            "{sheet} is valid; it would make {count} purchase order:",
            "{sheet} is valid; it would make {count} purchase orders:",
            n,
            sheet=sheet,
        )
    else:
        lead = tr.plural(
            "{sheet} accepted; {count} purchase order drafted and sent for approval:",
            "{sheet} accepted; {count} purchase orders drafted and sent for approval:",
            n,
            sheet=sheet,
        )
    body = [line for job, draft in result.orders for line in order_summary(job, draft, tr=tr)]
    missing = (
        tr(NOBODY_TO_ASK)
        if result.unasked == (DEFAULT_GROUP,)
        else tr(NOBODY_IN_GROUP, groups=tr(" or ").join(map(flatten, result.unasked)))
    )
    return "\n".join([lead, *body, *([missing] if result.unasked else [])])


def terms_import(result: TermsImport, file_name: str) -> str:
    """The outcome of `suppliers import`."""
    if result.problems:
        return refusal(Refusing.IMPORT, file_name, result.problems)
    file_name = flatten(file_name)
    if not result.created:
        same = f"the same content as the terms in force, {result.version}"
        return f"{file_name} has {same}; nothing imported"
    return f"{file_name} imported as supplier terms {result.version}, now in force"


class Imported(Protocol):
    """What an import of an admin's file did (core.approval.approval_policy.PolicyImport,
    core.company.imports.CompanyImport)."""

    @property
    def problems(self) -> tuple[Problem, ...]: ...
    @property
    def version(self) -> str: ...
    @property
    def created(self) -> bool: ...


# What `… check` says of a file that is not one (`… import` says Refusing.IMPORT).
_CHECKED = {FileKind.POLICY: Refusing.POLICY, FileKind.COMPANY: Refusing.COMPANY}
# What an import says of a new version, and of a file that says what the one in force says.
_IMPORTED = {
    FileKind.POLICY: N_(
        "{file} imported as approval policy {version}, now in force for new requests and re-drafts"
    ),
    FileKind.COMPANY: N_("{file} imported as company version {version}, now in force for new POs"),
}
_SAME = {
    FileKind.POLICY: N_(
        "{file} says what the approval policy in force, {version}, says; nothing imported"
    ),
    FileKind.COMPANY: N_(
        "{file} says what the company version in force, {version}, says; nothing imported"
    ),
}


def file_problems(
    kind: FileKind,
    problems: Iterable[Problem],
    file_name: str,
    *,
    imported: bool = False,
    tr: Translator = ENGLISH,
) -> str:
    """Why `… check` (or `… import`, or the bot) refused an admin's file, every problem with
    its line (bot.words.problems)."""
    return refusal(Refusing.IMPORT if imported else _CHECKED[kind], file_name, problems, tr=tr)


def file_import(
    kind: FileKind, result: Imported, file_name: str, *, tr: Translator = ENGLISH
) -> str:
    """The outcome of `… import` (or of the file sent to the bot)."""
    if result.problems:
        return file_problems(kind, result.problems, file_name, imported=True, tr=tr)
    said = _IMPORTED[kind] if result.created else _SAME[kind]
    return tr(said, file=flatten(file_name), version=result.version)


def unreachable_warnings(groups: Iterable[str], *, tr: Translator = ENGLISH) -> list[str]:
    """What `policy import` warns of: each group the policy needs that nobody the bot can
    write to is in."""
    return [
        tr(
            "group {group} has nobody the bot can write to; requests needing it wait "
            "until an admin puts an approver in it (/group ID {group})",
            group=flatten(group),
        )
        for group in groups
    ]


def thin_warnings(thin: Iterable[ThinStage], *, tr: Translator = ENGLISH) -> list[str]:
    """What `policy check` and `policy import` warn of: each stage that asks for more
    approvals than its group has members (core.approval.shortfalls.thin_stages)."""
    warnings = []
    for stage in thin:
        values = {"group": flatten(stage.group), "members": stage.members}
        if stage.reason is StageReason.DRIFT:
            where = tr("the drift stage")
        elif stage.reason is StageReason.BUDGET:
            where = tr("the over-budget stage")
        else:
            where = tr("rule {rule}", rule=flatten(stage.rule))
        warnings.append(tr.plural(
            "{where} asks for {count} approval from group {group}; approvers in it: "
            "{members}. Its requests wait until an admin puts more in it (/group ID {group})",
            "{where} asks for {count} approvals from group {group}; approvers in it: "
            "{members}. Its requests wait until an admin puts more in it (/group ID {group})",
            stage.approvals, where=where, **values,
        ))  # fmt: skip
    return warnings


def described(
    lines: list[str], record: Mapping[str, Any] | None, tz: tzinfo, *, tr: Translator = ENGLISH
) -> list[str]:
    """What `… show` says of an admin's file in force: what it says (`lines`, its version
    first: bot.words.policy_texts, bot.words.company_texts), and who imported it when
    (`record`: its stored version's row; None for none imported)."""
    if record is not None:
        at = record["imported_at"]
        assert isinstance(at, datetime)
        by = flatten(str(record["imported_by"]))
        lines.insert(1, tr("Imported {at} by {by}", at=local_time(at, tz), by=by))
    return lines


def superseded(changes: Iterable[Superseded]) -> str:
    """Which waiting POs new terms re-drafted or withdrew, and why."""
    lines = []
    for item in changes:
        job = item.job
        if job.state is State.CANCELLED:
            lines.append(
                f"{item.po_number} cancelled: the supplier no longer offers any of its lines"
            )
        else:
            lines.append(
                f"{item.po_number} re-drafted as v{job.draft_version} "
                f"(was v{item.previous_version}); earlier approvals no longer count "
                "and it needs a new approval"
            )
        lines += [f"  ! {flag_text(flag)}" for flag in item.changes]
    return "\n".join(lines) if lines else "no waiting purchase order is affected"


def terms_listing(terms: Terms, imported_at: datetime, imported_by: str, tz: tzinfo) -> str:
    """The terms in force and their suppliers; addresses masked."""
    lines = [
        f"supplier terms {terms.version}, imported {local_time(imported_at, tz)} "
        f"by {flatten(imported_by)}",
        f"{_plural(len(terms.suppliers), 'supplier')}, {_plural(len(terms.offers), 'offer')}",
        "",
    ]
    for supplier_id, offers in offers_by_supplier(terms).items():
        supplier = terms.suppliers[supplier_id]
        skus = _plural(len(offers), "SKU")
        lines.append(f"{supplier_id}  {flatten(supplier.name)}  {supplier.masked_email}  {skus}")
    return "\n".join(lines)

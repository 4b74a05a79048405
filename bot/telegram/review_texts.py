"""What a review-queue message says once its PO has left the queue, and what each admin's
choice is called (bot.telegram.queue shows the queue; bot.telegram.notices edits its
messages when a PO leaves it another way)."""

from __future__ import annotations

from datetime import tzinfo
from typing import Any

from bot.telegram.cards import escaped
from bot.words.i18n import ENGLISH, Translator
from bot.words.texts import local_time
from core.drafting.money import format_pkr
from core.jobs.jobs import Job
from core.jobs.states import State
from core.outbox.reconcile import BY_RELAY
from core.outbox.review import Choice, LeftQueue


def left_html(left: LeftQueue, tz: tzinfo, *, tr: Translator = ENGLISH) -> str:
    """A queue message once its PO has left the queue: how it left, by whom and when, then the
    PO as it is now."""
    out, job = left.way_out, left.job
    at = escaped(local_time(out.at, tz))
    chosen = out.detail.get("choice")
    if chosen in set(Choice) and out.from_state is not None:
        headline = told(Choice(chosen), out.from_state, job.draft_version, tr)[1]
        name = escaped(left.by or out.actor)
        headline = tr("{headline} by {name} at {at}", headline=headline, name=name, at=at)
    elif out.detail.get("by") == BY_RELAY:
        headline = relay_headline(out.detail, at, tr)
    elif out.detail.get("by") == "supplier_link":
        headline = tr(
            "✅ <b>Settled as sent</b> at {at}: the supplier used the link in the e-mail", at=at
        )
    elif left.by is not None:
        state, name = escaped(job.state.value), escaped(left.by)
        headline = tr("ℹ️ <b>Now {state}</b> by {name} at {at}", state=state, name=name, at=at)
    else:
        headline = tr("ℹ️ <b>Now {state}</b> at {at}", state=escaped(job.state.value), at=at)
    return headed(headline, job, left.supplier, tr)


def headed(headline: str, job: Job, supplier: str, tr: Translator) -> str:
    """A queue message that can no longer be tapped: its headline, then the PO as it is."""
    summary = (
        f"<b>{escaped(job.po_number)}</b> v{job.draft_version} · {escaped(supplier)} · "
        f"{escaped(format_pkr(job.total_paisa or 0))} · {escaped(job.state.value)}"
    )
    return f"{headline}\n🧾 {tr.ltr(summary)}"


def relay_headline(detail: dict[str, Any], at: str, tr: Translator) -> str:
    """How a send left the queue on the mail relay's copies (core.outbox.reconcile)."""
    copies = detail.get("copies") or [{}]
    folder = escaped(str(copies[0].get("folder", "?")))
    if len(copies) == 1:
        return tr(
            "✅ <b>Settled as sent</b> at {at}: the mail relay's copy is in {folder}",
            at=at,
            folder=folder,
        )
    return tr(
        "✅ <b>Settled as sent</b> at {at}: {count} copies are in {folder}, so it left {count} "
        "times",
        at=at,
        folder=folder,
        count=len(copies),
    )


def told(choice: Choice, was: State, version: int | None, tr: Translator) -> tuple[str, str]:
    """What a choice taken in state `was` is called in the tap's answer and on the message."""
    match choice:
        case Choice.MARK_SENT:
            return tr("Marked sent."), tr("✅ <b>Marked sent</b>")
        case Choice.SEND_AGAIN if was in (State.UNKNOWN_OUTCOME, State.CANCEL_UNKNOWN):
            return (
                tr("Sending again with the same key."),
                tr("🔁 <b>Sending again</b> with the same key"),
            )
        case Choice.SEND_AGAIN:
            return (
                tr("Re-issued as v{version}; it needs a fresh approval.", version=version),
                tr("🔁 <b>Re-issued as v{version}</b> for a fresh approval", version=version),
            )
        case Choice.CANCEL:
            return tr("Cancelled."), tr("🚫 <b>Cancelled</b>")
        case Choice.SETTLED:
            return tr("Settled: the PO is cancelled."), tr("☎️ <b>Settled</b>")
    raise AssertionError(choice)

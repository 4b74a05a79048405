"""The PDF an approver opens to see what the supplier gets: the one kept for the e-mail once
the version was approved and staged (the very bytes the supplier receives), else the draft
rendered now by the same code, marked DRAFT. Telegram's Details and the Mini App send it."""

from __future__ import annotations

from datetime import datetime, tzinfo

from bot.documents import rendering
from core.jobs.effects import send_po_key
from core.jobs.jobs import Job
from core.ports import Store
from core.purchasing.po_document import document_of

# Lines above which no PDF preview is made for an approver (the e-mail still carries one): a
# PDF of over 20 pages is no preview on a phone, and rendering it would hold the renderer,
# everyone's e-mails and copies, for seconds. The CSV has every line.
PREVIEW_LINES = 500


async def approver_copy(store: Store, job: Job, version: int, zone: tzinfo, now: datetime) -> bytes:
    """The PDF of `job`'s draft `version` as an approver should read it, rendered in the
    renderer's workers (bot.documents.rendering)."""
    async with store.reading() as tx:
        draft_hash = job.draft_hash if version == job.draft_version else None
        if draft_hash is not None:
            kept = await tx.document(send_po_key(job.po_number, version, draft_hash))
            if kept is not None:
                return kept.pdf
        document = await document_of(tx, job, version, approved=False, zone=zone, now=now)
    return await rendering.render(document)

"""External effects named by business identifiers, never by attempts."""

from __future__ import annotations

from enum import StrEnum

from core.drafting.drafts import short_hash


class EffectStatus(StrEnum):
    """Where an outbox row stands."""

    PENDING = "pending"  # due at next_attempt_at
    CLAIMED = "claimed"  # leased to a runner; nothing sent yet
    STARTED = "started"  # attempt marker committed; the sender may have been called
    SUCCEEDED = "succeeded"
    FAILED = "failed"  # permanent, or retries exhausted (dead letter)
    UNKNOWN = "unknown"  # maybe delivered; waits for reconciliation
    CANCELLED = "cancelled"  # superseded by a new draft, expired, or cancelled


OPEN_STATUSES = frozenset({EffectStatus.PENDING, EffectStatus.CLAIMED, EffectStatus.STARTED})


class EffectKind(StrEnum):
    """What an outbox row does; the values are what the store keeps (effects.kind)."""

    SEND_PO = "send-po"  # e-mail the supplier an approved draft version
    CANCEL_PO = "cancel-po"  # e-mail the supplier that a PO it was sent is called off
    REMIND_PO = "remind-po"  # remind a silent supplier of a PO it was sent
    # tell the supplier the approvers turned its proposed changes down: the version it has
    # stands (named by the proposal's version and hash)
    REJECT_PROPOSAL = "reject-proposal"


# The e-mails that tell the supplier something without moving the job (core.outbox.notes):
# a failure of one is recorded and, if it may have gone, never sent again.
NOTES = frozenset({EffectKind.REMIND_PO, EffectKind.REJECT_PROPOSAL})


def effect_key(kind: EffectKind, po_number: str, draft_version: int, draft_hash: str) -> str:
    """The idempotency key of the e-mail of `kind` about one draft version of a PO: one
    business action, whatever the attempts."""
    return f"{kind.value}:{po_number}:v{draft_version}:{short_hash(draft_hash)}"


def send_po_key(po_number: str, draft_version: int, draft_hash: str) -> str:
    """The idempotency key of e-mailing one version of one purchase order."""
    return effect_key(EffectKind.SEND_PO, po_number, draft_version, draft_hash)


def cancel_po_key(po_number: str, draft_version: int, draft_hash: str) -> str:
    """The idempotency key of e-mailing the supplier that the sent version of a purchase
    order is called off: one per PO (a called-off PO never goes out again)."""
    return effect_key(EffectKind.CANCEL_PO, po_number, draft_version, draft_hash)


def remind_po_key(po_number: str, draft_version: int, draft_hash: str) -> str:
    """The idempotency key of reminding the supplier, once, of the sent version of a PO."""
    return effect_key(EffectKind.REMIND_PO, po_number, draft_version, draft_hash)


def message_id(key: str, domain: str) -> str:
    """An RFC 5322 Message-ID derived from the key (':' is not allowed in its left part)."""
    return f"<{key.replace(':', '.')}@{domain}>"

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


def send_po_key(po_number: str, draft_version: int, draft_hash: str) -> str:
    """The idempotency key of e-mailing one version of one purchase order."""
    return f"send-po:{po_number}:v{draft_version}:{short_hash(draft_hash)}"


def cancel_po_key(po_number: str, draft_version: int, draft_hash: str) -> str:
    """The idempotency key of e-mailing the supplier that the sent version of a purchase
    order is called off: one per PO (a called-off PO never goes out again)."""
    return f"cancel-po:{po_number}:v{draft_version}:{short_hash(draft_hash)}"


def message_id(key: str, domain: str) -> str:
    """An RFC 5322 Message-ID derived from the key (':' is not allowed in its left part)."""
    return f"<{key.replace(':', '.')}@{domain}>"

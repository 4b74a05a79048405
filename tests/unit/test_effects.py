"""Idempotency keys and Message-IDs named by the business action, never by the attempt."""

from __future__ import annotations

import hashlib

import pytest

from core.jobs.effects import EffectStatus, message_id, send_po_key
from core.jobs.notices import NoticeStatus

HASH_V2 = hashlib.sha256(b"draft version 2").hexdigest()
HASH_V3 = hashlib.sha256(b"draft version 3").hexdigest()
DOMAIN = "manzoori.example.pk"


def test_send_po_key_format() -> None:
    """send-po:<PO>:v<version>:<first 12 hex of the hash>."""
    key = send_po_key("PO-2026-014", 2, HASH_V2)
    assert key == "send-po:PO-2026-014:v2:" + HASH_V2[:12]
    assert key == f"send-po:PO-2026-014:v2:{HASH_V2[:12]}"
    assert len(key.rsplit(":", 1)[1]) == 12


def test_same_action_same_key_on_every_call() -> None:
    """Retries and restarts compute the very same key."""
    keys = {send_po_key("PO-2026-014", 2, HASH_V2) for _ in range(5)}
    assert len(keys) == 1


@pytest.mark.parametrize(
    ("po_number", "version", "draft_hash"),
    [
        pytest.param("PO-2026-014", 3, HASH_V2, id="new_version"),  # revision bumps the version
        pytest.param("PO-2026-014", 2, HASH_V3, id="new_hash"),  # different content
        pytest.param("PO-2026-015", 2, HASH_V2, id="other_po"),  # another order altogether
        pytest.param("PO-2026-014", 12, HASH_V2, id="version_12_not_1_2"),  # no digit run-on
    ],
)
def test_different_action_gives_different_key(
    po_number: str, version: int, draft_hash: str
) -> None:
    """A new version, hash or PO is a new business action with a new key."""
    assert HASH_V2[:12] != HASH_V3[:12]  # the two fixtures differ within the prefix
    assert send_po_key(po_number, version, draft_hash) != send_po_key("PO-2026-014", 2, HASH_V2)


def test_message_id_is_bracketed_with_no_colon_in_left_part() -> None:
    """<left@domain>, left part derived from the key with ':' replaced."""
    key = send_po_key("PO-2026-014", 2, HASH_V2)
    mid = message_id(key, DOMAIN)
    assert mid.startswith("<")
    assert mid.endswith(">")
    left, domain = mid[1:-1].split("@")
    assert ":" not in left
    assert domain == DOMAIN
    assert mid == f"<send-po.PO-2026-014.v2.{HASH_V2[:12]}@{DOMAIN}>"


def test_message_id_is_stable_and_distinct_per_key() -> None:
    """The same key gives the same Message-ID; another key another one."""
    first = send_po_key("PO-2026-014", 2, HASH_V2)
    second = send_po_key("PO-2026-014", 3, HASH_V3)
    assert message_id(first, DOMAIN) == message_id(first, DOMAIN)
    assert message_id(first, DOMAIN) != message_id(second, DOMAIN)


def test_both_outboxes_share_the_statuses_the_lease_claim_reads():
    """store.versioned.claim_rows serves effects and notices with the same two status names."""
    assert (EffectStatus.PENDING, EffectStatus.CLAIMED) == ("pending", "claimed")
    assert (NoticeStatus.PENDING, NoticeStatus.CLAIMED) == ("pending", "claimed")

"""The supplier's link: the one credential a supplier has, in the e-mail that places a PO (and
in its PDF, as a link and a QR code).

The token in the link names one job, one draft version and hash, the business action of the
e-mail that carried it (its idempotency key, rebuilt from these fields and the PO number),
and when it stops working. It carries an HMAC-SHA256 tag under MANZOORI_SECRET_KEY, derived
for this purpose alone, so a button or an invite never passes as a link or the other way
round. Its expiry is counted from when the e-mail was staged (the outbox row's creation), so
every attempt and resend of one e-mail carries the same link, and the PDF made before the
first attempt carries the one the e-mail does.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from core.approval.signing import TAG_BYTES, Secrets, seal, unseal, uuid_bytes, uuid_text
from core.drafting.drafts import HASH_PREFIX
from core.errors import ExpiredToken, InvalidToken
from core.jobs.effects import EffectKind
from core.jobs.jobs import Effect

DEFAULT_DAYS = 30  # MANZOORI_SUPPLIER_LINK_DAYS
# The e-mails that carry a link, by their byte in the token (its index here).
_KINDS = (EffectKind.SEND_PO, EffectKind.REMIND_PO)
# job id, draft version, hash prefix, e-mail kind, expiry in whole minutes since the epoch
_LINK = struct.Struct(f">16sH{HASH_PREFIX // 2}sBI")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# The longest token (base64url of the fields and the tag) a request may name.
TOKEN_CHARACTERS = (4 * (_LINK.size + TAG_BYTES) + 2) // 3


@dataclass(frozen=True)
class SupplierLink:
    """What one e-mail's link names: a job's draft version, the e-mail's business action and
    the link's expiry (whole minutes)."""

    job_id: str
    draft_version: int
    hash_prefix: str  # the first HASH_PREFIX hex digits of the draft's hash
    kind: EffectKind  # the e-mail that carried it: the PO itself, or a reminder of it
    expires_at: datetime

    def key(self, po_number: str) -> str:
        """The idempotency key of the e-mail that carried the link."""
        return f"{self.kind.value}:{po_number}:v{self.draft_version}:{self.hash_prefix}"

    def names(self, draft_version: int | None, draft_hash: str | None) -> bool:
        """Whether the link is of this draft version and hash."""
        return (
            draft_hash is not None
            and draft_version == self.draft_version
            and draft_hash.startswith(self.hash_prefix)
        )


def link_for(effect: Effect, days: int) -> SupplierLink:
    """The link the e-mail of outbox row `effect` carries: good for `days` from when the row
    was staged, to the minute (the token keeps whole minutes)."""
    if effect.kind not in _KINDS:
        raise ValueError(f"a {effect.kind} e-mail carries no supplier link")
    expires = effect.created_at + timedelta(days=days)
    minutes = int((expires - _EPOCH).total_seconds() // 60)
    return SupplierLink(
        job_id=effect.job_id,
        draft_version=effect.draft_version,
        hash_prefix=effect.draft_hash[:HASH_PREFIX],
        kind=EffectKind(effect.kind),
        expires_at=_EPOCH + timedelta(minutes=minutes),
    )


def sign_link(secret: bytes, link: SupplierLink) -> str:
    """The link's token: 55 characters of [A-Za-z0-9_-], safe in a URL's path."""
    minutes = int((link.expires_at - _EPOCH).total_seconds() // 60)
    body = _LINK.pack(
        uuid_bytes(link.job_id),
        link.draft_version,
        bytes.fromhex(link.hash_prefix),
        _KINDS.index(link.kind),
        minutes,
    )
    return seal(secret, b"supplier-link", body)


def verify_link(secret: Secrets, token: str | None, now: datetime) -> SupplierLink:
    """The link behind a token, or InvalidToken if forged, altered or truncated, ExpiredToken
    (an InvalidToken) if its time is up. The tag is checked before anything is read."""
    if not token or len(token) > TOKEN_CHARACTERS:
        raise InvalidToken("no token, or too long")
    body = unseal(secret, b"supplier-link", token, _LINK.size)
    job, version, prefix, kind, minutes = _LINK.unpack(body)
    if kind >= len(_KINDS):
        raise InvalidToken("unknown e-mail kind")
    link = SupplierLink(
        job_id=uuid_text(job),
        draft_version=version,
        hash_prefix=prefix.hex(),
        kind=_KINDS[kind],
        expires_at=_EPOCH + timedelta(minutes=minutes),
    )
    if now >= link.expires_at:
        raise ExpiredToken("expired")
    return link

"""Compact signed tokens: the data behind a Telegram button, and invite codes.

Telegram passes a button's callback data back verbatim (at most 64 bytes) and a `/start`
payload only if it is at most 64 characters of `[A-Za-z0-9_-]`. Both come from the client,
so both carry an HMAC-SHA256 tag under MANZOORI_SECRET_KEY, checked in constant time before
anything else looks at them. Each kind of token signs under its own derived key, so a valid
invite can never pass as a button or the other way round.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum

from core.approval.policies import Role
from core.drafting.drafts import HASH_PREFIX
from core.errors import ExpiredToken, InvalidToken

# 96 bits: far beyond guessing, and 16 characters in base64url.
TAG_BYTES = 12
CALLBACK_LIMIT = 64  # bytes: Telegram refuses longer callback_data (BUTTON_DATA_INVALID)
START_LIMIT = 64  # characters of [A-Za-z0-9_-]: Telegram drops a longer /start payload
_START_ALPHABET = re.compile(r"^[A-Za-z0-9_-]+$")


class ButtonAction(StrEnum):
    """What a button does; one character each, to keep callback data short."""

    APPROVE = "a"
    REJECT = "r"
    DETAILS = "d"
    RESEND = "p"  # /pending's, a reminder's or digest's list: send a waiting request's card again
    MARK_SENT = "s"  # admin queue: the supplier has the mail
    SEND_AGAIN = "g"  # admin queue: it never arrived, send once more with the same key
    CANCEL = "c"  # admin queue: withdraw
    SETTLED = "t"  # admin queue: a called-off PO's supplier was told another way
    CONFIRM_CANCEL = "x"  # /cancel's confirm card: cancel the PO (e-mail a sent one's supplier)
    KEEP = "k"  # /cancel's confirm card: keep the PO as it is
    SUBMIT_REQUEST = "y"  # a typed request's summary: submit it (the "job" is the request's id)
    CANCEL_REQUEST = "n"  # a typed request's summary: drop it


@dataclass(frozen=True)
class Button:
    """A button's meaning: the action, on one job, one draft version and hash."""

    action: ButtonAction
    job_id: str
    draft_version: int
    hash_prefix: str


def purpose_key(secret: bytes, purpose: bytes) -> bytes:
    """The HMAC key of one kind of token, derived from the secret."""
    return hmac.new(secret, b"manzoori/" + purpose, hashlib.sha256).digest()


def mac(key: bytes, data: bytes) -> bytes:
    """The truncated HMAC-SHA256 tag of `data` under `key`."""
    return hmac.new(key, data, hashlib.sha256).digest()[:TAG_BYTES]


def b64(data: bytes) -> str:
    """Unpadded base64url."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def unb64(text: str) -> bytes:
    """The bytes of unpadded base64url, or InvalidToken."""
    if not _START_ALPHABET.match(text):
        raise InvalidToken("not base64url")
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except ValueError as error:  # binascii.Error is a ValueError
        raise InvalidToken("not base64url") from error


_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def uuid_bytes(job_id: str) -> bytes:
    """A job id (a UUID in its usual text form) as its 16 bytes: 22 characters, not 36."""
    if not _UUID.match(job_id):
        raise ValueError("job ids are UUIDs")
    return bytes.fromhex(job_id.replace("-", ""))


def uuid_text(raw: bytes) -> str:
    """A job id's text form from its 16 bytes."""
    if len(raw) != 16:
        raise ValueError("a job id is 16 bytes")
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


# MANZOORI_SECRET_KEY's keys, newest first: the first signs, every one is accepted, so what was
# signed with an older key keeps working until it expires (`manzoori keys status`).
Secrets = bytes | Sequence[bytes]


def _keys(secret: Secrets) -> tuple[bytes, ...]:
    return (secret,) if isinstance(secret, bytes) else tuple(secret)


def seal(secret: bytes, purpose: bytes, body: bytes) -> str:
    """`body` and its tag under the key of `purpose`, as unpadded base64url."""
    return b64(body + mac(purpose_key(secret, purpose), body))


def unseal(secret: Secrets, purpose: bytes, token: str, size: int) -> bytes:
    """The `size` bytes of body `seal` made `token` of (under any of the keys), or
    InvalidToken if it is not that long or no tag matches; the tag is checked before anything
    is read."""
    raw = unb64(token)
    if len(raw) != size + TAG_BYTES:
        raise InvalidToken("wrong length")
    body, tag = raw[:size], raw[size:]
    for key in _keys(secret):
        if hmac.compare_digest(mac(purpose_key(key, purpose), body), tag):
            return body
    raise InvalidToken("tag does not match")


def sign_button(secret: bytes, button: Button) -> str:
    """Callback data such as "a.<job>.<version>.<hash>.<tag>", at most 64 bytes."""
    if not re.fullmatch(f"[0-9a-f]{{{HASH_PREFIX}}}", button.hash_prefix):
        raise ValueError("hash_prefix must be lowercase hex of the draft hash")
    body = ".".join(
        (
            button.action.value,
            b64(uuid_bytes(button.job_id)),
            format(button.draft_version, "x"),
            button.hash_prefix,
        )
    )
    token = f"{body}.{b64(mac(purpose_key(secret, b'button'), body.encode()))}"
    assert len(token.encode()) <= CALLBACK_LIMIT
    return token


def verify_button(secret: Secrets, data: str | None) -> Button:
    """The button behind callback data (signed with any of the keys), or InvalidToken; the
    tag is checked first."""
    if not data or len(data.encode("utf-8", "replace")) > CALLBACK_LIMIT:
        raise InvalidToken("no callback data, or too long")
    body, _, tag = data.rpartition(".")
    signed = body.encode("utf-8", "replace")
    given = tag.encode("utf-8", "replace")
    if not any(
        hmac.compare_digest(b64(mac(purpose_key(key, b"button"), signed)).encode(), given)
        for key in _keys(secret)
    ):
        raise InvalidToken("tag does not match")
    try:  # signed by us, so well formed; parse defensively all the same
        action, job, version, prefix = body.split(".")
        return Button(ButtonAction(action), uuid_text(unb64(job)), int(version, 16), prefix)
    except ValueError as error:
        raise InvalidToken("malformed") from error


@dataclass(frozen=True)
class Invite:
    """A single-use invitation to take a role, until it expires."""

    invite_id: str  # 12 characters; the store marks it used
    role: Role
    expires_at: datetime


_ROLES = (Role.APPROVER, Role.REQUESTER, Role.ADMIN)  # index = the role's byte in the code
_INVITE = struct.Struct(">BI9s")  # role, expiry (whole minutes since the epoch), random id


def sign_invite(secret: bytes, role: Role, expires_at: datetime, nonce: bytes) -> str:
    """A /start payload of 35 characters from [A-Za-z0-9_-]; `nonce` is 9 random bytes."""
    if len(nonce) != 9:
        raise ValueError("the invite id is 9 random bytes")
    minutes = int(expires_at.timestamp() // 60)
    body = _INVITE.pack(_ROLES.index(role), minutes, nonce)
    code = seal(secret, b"invite", body)
    assert len(code) <= START_LIMIT and _START_ALPHABET.match(code)
    return code


def verify_invite(secret: Secrets, code: str | None, now: datetime) -> Invite:
    """The invite behind a /start payload, or InvalidToken if forged, altered or expired."""
    if not code or len(code) > START_LIMIT:
        raise InvalidToken("no code, or too long")
    role, minutes, nonce = _INVITE.unpack(unseal(secret, b"invite", code, _INVITE.size))
    expires_at = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(minutes=minutes)
    if role >= len(_ROLES):
        raise InvalidToken("unknown role")
    if now >= expires_at:
        raise ExpiredToken("expired")
    return Invite(b64(nonce), _ROLES[role], expires_at)

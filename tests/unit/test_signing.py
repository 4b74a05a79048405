"""Signed button data and invite codes: round trips, limits, and every forgery refused."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.approval.policies import Role
from core.approval.signing import (
    CALLBACK_LIMIT,
    START_LIMIT,
    Button,
    ButtonAction,
    sign_button,
    sign_invite,
    verify_button,
    verify_invite,
)
from core.errors import InvalidToken

SECRET = b"k" * 32
OTHER = b"j" * 32
NOW = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)
JOB = "0b6f4c1e-9d1c-4a57-9a8e-2f1d3c4b5a69"
BUTTON = Button(ButtonAction.APPROVE, JOB, 3, "cc905f2486c4")
NONCE = bytes(range(9))


def test_a_button_round_trips_within_telegrams_limit():
    data = sign_button(SECRET, BUTTON)
    assert len(data.encode()) <= CALLBACK_LIMIT
    assert verify_button(SECRET, data) == BUTTON


@given(
    st.sampled_from(list(ButtonAction)),
    st.uuids(),
    st.integers(min_value=1, max_value=10**6),
    st.text("0123456789abcdef", min_size=12, max_size=12),
)
def test_every_button_fits_and_round_trips(action, job, version, prefix):
    button = Button(action, str(job), version, prefix)
    data = sign_button(SECRET, button)
    assert len(data.encode()) <= CALLBACK_LIMIT
    assert verify_button(SECRET, data) == button


def test_altered_truncated_swapped_or_foreign_data_is_refused():
    data = sign_button(SECRET, BUTTON)
    reject = sign_button(SECRET, Button(ButtonAction.REJECT, JOB, 3, "cc905f2486c4"))
    other_version = sign_button(SECRET, Button(ButtonAction.APPROVE, JOB, 4, "cc905f2486c4"))
    forged = [
        data.replace("a.", "r.", 1),  # reject turned into approve, or the other way round
        data[:-1],  # truncated
        data[: data.rindex(".")],  # tag cut off
        data.rsplit(".", 1)[0] + "." + reject.rsplit(".", 1)[1],  # another button's tag
        data.replace(".3.", ".4.", 1),  # another draft version
        other_version.rsplit(".", 1)[0] + "." + data.rsplit(".", 1)[1],
        sign_button(OTHER, BUTTON),  # signed under another key
        "",
        None,
        "a" * 65,
    ]
    for candidate in forged:
        with pytest.raises(InvalidToken):
            verify_button(SECRET, candidate)


def test_every_single_character_change_is_refused():
    data = sign_button(SECRET, BUTTON)
    alphabet = "ABCabc012-_."
    for index, original in enumerate(data):
        for replacement in alphabet:
            if replacement == original:
                continue
            altered = data[:index] + replacement + data[index + 1 :]
            with pytest.raises(InvalidToken):
                verify_button(SECRET, altered)


@settings(max_examples=300)
@given(st.text(max_size=70))
def test_random_data_never_verifies(data):
    with pytest.raises(InvalidToken):
        verify_button(SECRET, data)


def test_an_invite_fits_a_start_payload_and_round_trips():
    expires = NOW + timedelta(hours=72)
    code = sign_invite(SECRET, Role.APPROVER, expires, NONCE)
    assert len(code) <= START_LIMIT
    assert set(code) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
    invite = verify_invite(SECRET, code, NOW)
    assert invite.role is Role.APPROVER
    assert invite.expires_at == expires.replace(second=0, microsecond=0)
    assert len(invite.invite_id) == 12
    assert verify_invite(SECRET, sign_invite(SECRET, Role.REQUESTER, expires, NONCE), NOW).role is (
        Role.REQUESTER
    )


def test_an_expired_forged_or_cross_purpose_invite_is_refused():
    expires = NOW + timedelta(hours=72)
    code = sign_invite(SECRET, Role.REQUESTER, expires, NONCE)
    with pytest.raises(InvalidToken, match="expired"):
        verify_invite(SECRET, code, expires)
    for candidate in (
        code[:-1],
        code[:-2] + ("AA" if code[-2:] != "AA" else "BB"),
        sign_invite(OTHER, Role.REQUESTER, expires, NONCE),
        sign_button(SECRET, BUTTON),  # a button is never an invite
        "",
        None,
        "x" * 65,
    ):
        with pytest.raises(InvalidToken):
            verify_invite(SECRET, candidate, NOW)
    with pytest.raises(InvalidToken):  # and an invite is never a button
        verify_button(SECRET, code)


def test_a_role_byte_cannot_be_raised_to_admin():
    code = sign_invite(SECRET, Role.REQUESTER, NOW + timedelta(hours=1), NONCE)
    import base64

    raw = bytearray(base64.urlsafe_b64decode(code + "=" * (-len(code) % 4)))
    raw[0] = 2  # the index of admin
    tampered = base64.urlsafe_b64encode(bytes(raw)).rstrip(b"=").decode()
    with pytest.raises(InvalidToken):
        verify_invite(SECRET, tampered, NOW)


def test_job_ids_must_be_uuids():
    with pytest.raises(ValueError):
        sign_button(SECRET, Button(ButtonAction.APPROVE, "not-a-uuid", 1, "cc905f2486c4"))
    assert uuid.UUID(JOB)


def test_what_an_older_key_signed_works_while_it_is_listed_and_not_after():
    old, new = SECRET, b"n" * 32
    button = Button(ButtonAction.APPROVE, str(uuid.uuid4()), 3, "0123456789ab")
    data = sign_button(old, button)
    code = sign_invite(old, Role.APPROVER, NOW + timedelta(hours=1), b"123456789")
    assert verify_button((new, old), data) == button  # the new key first, the old one after
    assert verify_invite((new, old), code, NOW).role is Role.APPROVER
    with pytest.raises(InvalidToken):
        verify_button((new,), data)  # the old key removed
    with pytest.raises(InvalidToken):
        verify_invite((new,), code, NOW)
    fresh = sign_button(new, button)
    assert verify_button((new, old), fresh) == button
    with pytest.raises(InvalidToken):
        verify_button((old,), fresh)  # nor the other way round

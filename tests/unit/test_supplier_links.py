"""The supplier's link (core.suppliers.links): signed, naming one job's draft version and hash
and the e-mail that carried it, expiring; forged, altered, truncated, expired or foreign
tokens are worth nothing, and no button or invite passes as one."""

from __future__ import annotations

import base64
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.approval.policies import Role
from core.approval.signing import Button, ButtonAction, sign_button, sign_invite
from core.errors import ExpiredToken, InvalidToken
from core.jobs.effects import EffectKind, EffectStatus
from core.jobs.jobs import Effect
from core.suppliers.links import TOKEN_CHARACTERS, link_for, sign_link, verify_link

SECRET = b"s" * 32
OTHER = b"o" * 32
JOB = "7d3f8a52-1c4e-4b7a-9f0e-2a6b8c9d0e1f"
HASH = "81c7f9a520193b4de6f0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f6"
STAGED = datetime(2026, 12, 5, 9, 30, 20, tzinfo=UTC)


def effect(kind=EffectKind.SEND_PO, version=2, created=STAGED, job=JOB, hash_=HASH) -> Effect:
    key = f"{kind.value}:PO-2026-0042:v{version}:{hash_[:12]}"
    return Effect(
        key, job, kind.value, version, hash_, EffectStatus.SUCCEEDED, 3, 1,
        None, created, None, None, created, None, None, created, created,
    )  # fmt: skip


def test_a_link_names_the_job_version_hash_and_email_and_expires_after_the_days():
    link = link_for(effect(), 30)
    assert (link.job_id, link.draft_version, link.hash_prefix) == (JOB, 2, HASH[:12])
    assert link.kind is EffectKind.SEND_PO
    assert link.key("PO-2026-0042") == "send-po:PO-2026-0042:v2:81c7f9a52019"
    assert link.expires_at == datetime(2027, 1, 4, 9, 30, tzinfo=UTC)  # to the minute
    assert link.names(2, HASH) and not link.names(3, HASH) and not link.names(2, "0" * 64)


def test_the_token_round_trips_and_fits_a_url_path():
    link = link_for(effect(), 30)
    token = sign_link(SECRET, link)
    assert len(token) == TOKEN_CHARACTERS == 55
    assert token.replace("-", "").replace("_", "").isalnum()
    assert verify_link(SECRET, token, STAGED) == link


def test_every_attempt_of_one_email_carries_the_same_link():
    first, later = effect(), replace(effect(), attempts=4, updated_at=STAGED + timedelta(hours=5))
    assert sign_link(SECRET, link_for(first, 30)) == sign_link(SECRET, link_for(later, 30))


def test_a_reminder_names_its_own_email():
    link = link_for(effect(EffectKind.REMIND_PO), 30)
    assert link.key("PO-1") == "remind-po:PO-1:v2:81c7f9a52019"
    assert verify_link(SECRET, sign_link(SECRET, link), STAGED).kind is EffectKind.REMIND_PO


def test_a_cancellation_carries_no_link():
    with pytest.raises(ValueError, match="carries no supplier link"):
        link_for(effect(EffectKind.CANCEL_PO), 30)


def test_an_expired_link_says_so():
    token = sign_link(SECRET, link_for(effect(), 30))
    expiry = datetime(2027, 1, 4, 9, 30, tzinfo=UTC)
    assert verify_link(SECRET, token, expiry - timedelta(seconds=1)).draft_version == 2
    with pytest.raises(ExpiredToken):
        verify_link(SECRET, token, expiry)


def test_another_key_forges_nothing():
    with pytest.raises(InvalidToken, match="tag"):
        verify_link(SECRET, sign_link(OTHER, link_for(effect(), 30)), STAGED)


@pytest.mark.parametrize(
    "other",
    [
        effect(version=3),  # another version
        effect(hash_="0" * 64),  # another hash
        effect(job="00000000-0000-4000-8000-000000000000"),  # another PO
        effect(created=STAGED + timedelta(days=300)),  # a later expiry
    ],
)
def test_a_tag_moved_onto_other_fields_is_refused(other):
    """The fields of one token with the tag of another: never a valid link."""
    token = sign_link(SECRET, link_for(effect(), 30))
    forged_body = base64.urlsafe_b64decode(sign_link(SECRET, link_for(other, 30)) + "=")[:-12]
    tag = base64.urlsafe_b64decode(token + "=")[-12:]
    forged = base64.urlsafe_b64encode(forged_body + tag).rstrip(b"=").decode()
    with pytest.raises(InvalidToken, match="tag"):
        verify_link(SECRET, forged, STAGED)


@given(st.integers(min_value=0, max_value=54), st.sampled_from("AQgw-_"))
def test_any_altered_character_is_refused(position, replacement):
    token = sign_link(SECRET, link_for(effect(), 30))
    altered = token[:position] + replacement + token[position + 1 :]
    if altered == token:
        return
    with pytest.raises(InvalidToken):
        verify_link(SECRET, altered, STAGED)


@pytest.mark.parametrize("token", [None, "", "abc", "x" * 56, "é" * 55, "a.b", "A" * 55])
def test_junk_is_refused(token):
    with pytest.raises(InvalidToken):
        verify_link(SECRET, token, STAGED)


def test_a_truncated_token_is_refused():
    token = sign_link(SECRET, link_for(effect(), 30))
    for cut in (1, 2, 16, 40):
        with pytest.raises(InvalidToken):
            verify_link(SECRET, token[:-cut], STAGED)


def test_no_button_or_invite_passes_as_a_link():
    button = sign_button(SECRET, Button(ButtonAction.APPROVE, JOB, 2, HASH[:12]))
    invite = sign_invite(SECRET, Role.APPROVER, STAGED + timedelta(days=1), b"n" * 9)
    for token in (button, invite):
        with pytest.raises(InvalidToken):
            verify_link(SECRET, token, STAGED)


def test_a_link_signed_with_an_older_key_works_while_that_key_is_listed():
    link = link_for(effect(), 30)
    token = sign_link(OTHER, link)  # the key before the rotation
    assert verify_link((SECRET, OTHER), token, STAGED) == link
    with pytest.raises(InvalidToken):
        verify_link((SECRET,), token, STAGED)

"""The store as the tests set it up: one data key for every test store, the usual cast."""

from __future__ import annotations

from cryptography.fernet import Fernet

from core.approval.policies import Role
from store.sql import SqlStore
from tests.helpers.factories import APPROVER_A, APPROVER_B, REQUESTER, T0

# One key per test session: every store, bot and CLI subprocess of a test reads the same rows.
DATA_KEY = Fernet.generate_key()


async def grant_cast(store: SqlStore) -> None:
    """Register the usual cast: one requester and two approvers."""
    async with store.begin() as tx:
        await tx.grant(REQUESTER, Role.REQUESTER, "test", T0)
        await tx.grant(APPROVER_A, Role.APPROVER, "test", T0)
        await tx.grant(APPROVER_B, Role.APPROVER, "test", T0)

"""The store as the tests set it up: one data key for every test store, the usual cast."""

from __future__ import annotations

import os

from cryptography.fernet import Fernet
from sqlalchemy import make_url

from core.approval.policies import Role
from store.sql import SqlStore
from tests.helpers.factories import APPROVER_A, APPROVER_B, REQUESTER, T0

# The PostgreSQL the store tests also run on, or None. Under pytest-xdist (`make test` runs on
# both cores) each worker has a database of its own, TEST_POSTGRES_URL's name with the worker's
# id appended, made on first use (tests/conftest.py).
BASE_POSTGRES_URL = os.environ.get("TEST_POSTGRES_URL") or None
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
POSTGRES_URL = (
    make_url(BASE_POSTGRES_URL)
    .set(database=f"{make_url(BASE_POSTGRES_URL).database}_{_WORKER}")
    .render_as_string(hide_password=False)
    if BASE_POSTGRES_URL and _WORKER
    else BASE_POSTGRES_URL
)

# One key per test session: every store, bot and CLI subprocess of a test reads the same rows.
DATA_KEY = Fernet.generate_key()


async def grant_cast(store: SqlStore) -> None:
    """Register the usual cast: one requester and two approvers."""
    async with store.begin() as tx:
        await tx.grant(REQUESTER, Role.REQUESTER, "test", T0)
        await tx.grant(APPROVER_A, Role.APPROVER, "test", T0)
        await tx.grant(APPROVER_B, Role.APPROVER, "test", T0)

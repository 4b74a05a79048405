"""The `botapi` fixture: a Telegram Bot API emulator (bot/dev/botapi/) for one test.

Import it where it is needed, or once in tests/conftest.py to offer it to every test:

    from tests.helpers.botapi import botapi_fixture  # noqa: F401 - provides the `botapi` fixture

The function has another name than the fixture so that tests taking a `botapi` argument do not
shadow the import (ruff's F811).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bot.dev.botapi import Emulator


@pytest.fixture(name="botapi")
def botapi_fixture() -> Iterator[Emulator]:
    """A started emulator, stopped after the test.

    The teardown fails the test if the bot called a method the emulator does not implement (it
    answered 404, so the bot saw an error a real server would not give) or met an emulator bug.
    """
    with Emulator() as emu:
        yield emu
    assert not emu.internal_errors, f"Bot API emulator bugs: {emu.internal_errors}"
    assert not emu.unimplemented_calls, (
        f"the bot called methods the emulator does not implement: {emu.unimplemented_calls}"
    )

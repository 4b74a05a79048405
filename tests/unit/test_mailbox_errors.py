"""Every failure of the IMAP client's libraries is mapped to MailboxError by one table
(bot.mailbox.imap._FAILURES); a bug is not."""

from __future__ import annotations

import imaplib
import inspect
import ssl

import pytest
from imap_tools import errors as imap_errors
from imap_tools.errors import MailboxFolderSelectError, MailboxLoginError

from bot.mailbox.imap import _FAILURES, mapped


@pytest.mark.parametrize(
    ("error", "called"),
    [
        (MailboxLoginError(("NO", [b"no"]), "OK"), "the login was refused"),
        (MailboxFolderSelectError(("NO", [b"no"]), "OK"), "the server refused a command"),
        (imaplib.IMAP4.abort("socket error: EOF"), "the connection broke"),
        (imaplib.IMAP4.error("BAD command"), "the server answered something unexpected"),
        (ssl.SSLError("wrong version number"), "TLS failed"),
        (TimeoutError("timed out"), "the server did not answer in time"),
        (ConnectionRefusedError(111, "refused"), "the connection was refused"),
        (OSError(101, "Network is unreachable"), "the connection failed"),
        (EOFError(), "the connection broke"),
    ],
)
def test_every_failure_is_mapped_by_the_table(error, called):
    found = mapped(error)
    assert found is not None and str(found).startswith(called)


def test_a_bug_is_not_mapped():
    assert mapped(KeyError("x")) is None and mapped(ValueError("x")) is None


def test_every_exception_class_of_imap_tools_and_imaplib_is_mapped():
    classes = {c for _, c in inspect.getmembers(imap_errors, inspect.isclass)}
    classes |= {imaplib.IMAP4.error, imaplib.IMAP4.abort, imaplib.IMAP4.readonly}
    exceptions = {c for c in classes if issubclass(c, Exception)}
    assert imap_errors.MailboxLoginError in exceptions  # the scan itself found something
    kinds = tuple(kind for kind, _ in _FAILURES)
    unmapped = {c.__name__ for c in exceptions if not issubclass(c, kinds)}
    assert unmapped == set()

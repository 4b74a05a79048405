"""Encryption of the fields that carry personal or banking data, under MANZOORI_DATA_KEY: one
key, or several newest first (cryptography's MultiFernet): the first seals, every one opens,
and `reseal` moves a field sealed with an older key to the first (`manzoori keys rotate`)."""

from __future__ import annotations

from collections.abc import Sequence

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from core.errors import SealedDataUnreadable


class Sealer:
    """Fernet (AES-128-CBC + HMAC-SHA256) with MANZOORI_DATA_KEY's keys."""

    def __init__(self, keys: bytes | str | Sequence[bytes | str]) -> None:
        if isinstance(keys, bytes):
            keys = keys.decode("ascii")
        listed = [k.strip() for k in keys.split(",")] if isinstance(keys, str) else list(keys)
        fernets = [Fernet(key) for key in listed]
        self._first = fernets[0]
        self._fernet = MultiFernet(fernets)
        self.keys = len(fernets)

    def seal(self, plain: bytes) -> bytes:
        """Encrypt and authenticate, with the first key."""
        return self._fernet.encrypt(plain)

    def open(self, token: bytes) -> bytes:
        """Decrypt, or raise SealedDataUnreadable if the key is wrong or the data was altered."""
        try:
            return self._fernet.decrypt(token)
        except InvalidToken as error:
            raise SealedDataUnreadable(
                "stored data cannot be opened with this MANZOORI_DATA_KEY: is it the key "
                "the database was written with?"
            ) from error

    def current(self, token: bytes) -> bool:
        """Whether `token` is sealed with the first key already."""
        try:
            self._first.decrypt(token)
        except InvalidToken:
            return False
        return True

    def reseal(self, token: bytes) -> bytes:
        """`token` sealed again with the first key (SealedDataUnreadable if no key opens it)."""
        try:
            return self._fernet.rotate(token)
        except InvalidToken as error:
            raise SealedDataUnreadable(
                "stored data cannot be opened with any MANZOORI_DATA_KEY key"
            ) from error

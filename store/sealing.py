"""Encryption of the fields that carry personal or banking data."""

from __future__ import annotations

from cryptography.fernet import Fernet, InvalidToken

from core.errors import SealedDataUnreadable


class Sealer:
    """Fernet (AES-128-CBC + HMAC-SHA256) with MANZOORI_DATA_KEY."""

    def __init__(self, key: bytes | str) -> None:
        self._fernet = Fernet(key)

    def seal(self, plain: bytes) -> bytes:
        """Encrypt and authenticate."""
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

"""Files: uploads, sendDocument, getFile and the file URL."""

from __future__ import annotations

import re
import secrets
from typing import Any

from .errors import ApiError, bad_request
from .messages import MessagesMixin
from .params import Params
from .snapshots import StoredFile, Version

MAX_GETFILE_BYTES = 20 * 1024 * 1024


class FilesMixin(MessagesMixin):
    """Stored files; sendDocument is a message, hence the base class."""

    def _store_file(
        self, data: bytes, file_name: str | None, mime_type: str | None, uploaded_by: int
    ) -> StoredFile:
        number = next(self._file_counter)
        extension = ""
        if file_name and "." in file_name:
            extension = "." + re.sub(r"[^A-Za-z0-9]", "", file_name.rsplit(".", 1)[1])[:10]
        stored = StoredFile(
            file_id="BQACAgIAAxkBAA" + secrets.token_urlsafe(40).replace("-", "x")[:50],
            file_unique_id="AgAD" + secrets.token_urlsafe(9)[:12],
            data=data,
            file_name=file_name,
            mime_type=mime_type,
            file_path=f"documents/file_{number}{extension}",
            uploaded_by=uploaded_by,
        )
        self._files[stored.file_id] = stored
        self._file_paths[stored.file_path] = stored.file_id
        return stored

    def _m_sendDocument(self, p: Params) -> dict[str, Any]:
        markup = self._reply_markup(p)
        caption, entities, raw, parse_mode = self._formatted(
            p, "caption", "caption_entities", caption=True
        )
        document = self._input_file(p, "document")
        chat = self._chat_for_sending(p)
        reply_to = self._reply_target(p, chat)
        version = Version(
            None,
            (),
            caption,
            tuple(entities),
            raw,
            parse_mode,
            markup,
            self._wall(),
            "sendDocument",
        )
        return self._bot_sends(chat, version, reply_to, document)

    def _input_file(self, p: Params, name: str) -> StoredFile:
        """An uploaded part (directly or by attach://) or a known file_id."""
        part = p.files.get(name)
        value = p.text(name)
        if part is None and value and value.startswith("attach://"):
            part = p.files.get(value.removeprefix("attach://"))
        if part is not None:
            file_name, data, mime_type = part
            if not data:
                raise bad_request("file must be non-empty")
            return self._store_file(data, file_name or None, mime_type or None, self.bot_id)
        if not value:
            raise bad_request(f'parameter "{name}" is required')
        if value in self._files:
            return self._files[value]
        # URLs would make Telegram fetch from the internet: the emulator never does.
        raise bad_request("wrong file identifier/HTTP URL specified")

    def _m_getFile(self, p: Params) -> dict[str, Any]:
        file_id = p.text("file_id")
        if not file_id:
            raise bad_request('parameter "file_id" is required')
        stored = self._files.get(file_id)
        if stored is None:
            raise bad_request("wrong file_id or the file is temporarily unavailable")
        if stored.file_size > MAX_GETFILE_BYTES:
            raise bad_request("file is too big")
        return {
            "file_id": stored.file_id,
            "file_unique_id": stored.file_unique_id,
            "file_size": stored.file_size,
            "file_path": stored.file_path,
        }

    def download(self, token: str, file_path: str) -> bytes:
        """The bytes behind a file URL, or ApiError as Telegram's file server answers."""
        if token != self.token:
            raise ApiError(401, "Unauthorized")
        with self._lock:
            file_id = self._file_paths.get(file_path)
            if file_id is None:
                raise ApiError(404, "Not Found")
            return self._files[file_id].data

"""SqlTx's queries for the replies read from the buyer's inbox (core.suppliers.replies): the
replies filed on a PO, sealed, and the cursor of each folder."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Any

from sqlalchemy import insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from core.errors import InsertConflict
from core.suppliers.mail import Attachment, InboundMail
from core.suppliers.replies import Cursor, FiledMail
from store import schema
from store.sealing import Sealer


def _hashed(message_id: str) -> str:
    return hashlib.sha256(message_id.encode("utf-8", "replace")).hexdigest()


class MailboxQueries:
    """Mixed into SqlTx: everything here runs inside its transaction."""

    conn: AsyncConnection
    _sealer: Sealer

    async def mailbox_cursor(self, folder: str) -> Cursor | None:
        """Where the reading of a mailbox folder stands; None if it was never read."""
        t = schema.mailbox_cursors
        row = (await self.conn.execute(select(t).where(t.c.folder == folder))).first()
        return None if row is None else Cursor(row.uidvalidity, row.last_uid)

    async def set_mailbox_cursor(self, folder: str, cursor: Cursor, now: datetime) -> None:
        """Move a folder's cursor: never back within one UIDVALIDITY; a new UIDVALIDITY
        starts it again."""
        t = schema.mailbox_cursors
        values = {"uidvalidity": cursor.uidvalidity, "last_uid": cursor.last_uid, "updated_at": now}
        standing = await self.mailbox_cursor(folder)
        if standing is None:
            try:
                await self.conn.execute(insert(t).values(folder=folder, **values))
            except IntegrityError as error:
                raise InsertConflict(f"the cursor of {folder} was set meanwhile") from error
            return
        same = standing.uidvalidity == cursor.uidvalidity
        if same and standing.last_uid >= cursor.last_uid:
            return
        await self.conn.execute(update(t).where(t.c.folder == folder).values(values))

    async def supplier_mail_filed(self, job_id: str, message_id: str) -> bool:
        """Whether a reply with that Message-ID was filed on the job already."""
        t = schema.supplier_mail
        query = select(t.c.id).where(
            t.c.job_id == job_id, t.c.message_id_hash == _hashed(message_id)
        )
        return (await self.conn.execute(query.limit(1))).first() is not None

    async def insert_supplier_mail(self, reply: FiledMail) -> int:
        """Keep a reply, its sender, subject, text and attachments' names sealed; its id.
        InsertConflict if that folder's UID was filed meanwhile."""
        mail = reply.mail
        sealed = {
            "uid": mail.uid,
            "sender": mail.sender,
            "sender_name": mail.sender_name,
            "subject": mail.subject,
            "message_id": mail.message_id,
            "in_reply_to": list(mail.in_reply_to),
            "references": list(mail.references),
            "text": mail.text,
            "excerpt": mail.excerpt,
            "attachments": [[a.name, a.size] for a in mail.attachments],
        }
        values = {
            "job_id": reply.job_id,
            "folder": reply.folder,
            "uidvalidity": reply.uidvalidity,
            "uid": mail.uid,
            "message_id_hash": _hashed(mail.message_id),
            "sent_at": mail.date,
            "filed_at": reply.filed_at,
            "matched_by": reply.matched_by,
            "on_file": reply.on_file,
            "readable": mail.readable,
            "size": mail.size,
            "mail_encrypted": self._sealer.seal(json.dumps(sealed).encode()),
        }
        try:
            table = schema.supplier_mail
            result = await self.conn.execute(insert(table).values(values).returning(table.c.id))
        except IntegrityError as error:
            raise InsertConflict(f"{reply.folder} UID {mail.uid} was filed meanwhile") from error
        return int(result.scalar_one())

    async def supplier_mail(self, mail_id: int) -> FiledMail | None:
        """A reply filed on a PO, its text opened (emptied once purged); None if unknown."""
        t = schema.supplier_mail
        row = (await self.conn.execute(select(t).where(t.c.id == mail_id))).first()
        return None if row is None else self._filed(row)

    async def supplier_mails(self, job_id: str) -> list[FiledMail]:
        """The replies filed on a job, oldest first."""
        t = schema.supplier_mail
        query = select(t).where(t.c.job_id == job_id).order_by(t.c.filed_at, t.c.id)
        return [self._filed(row) for row in await self.conn.execute(query)]

    def _filed(self, row: Any) -> FiledMail:
        opened: dict[str, Any] = {}
        if row.mail_encrypted:
            opened = json.loads(self._sealer.open(row.mail_encrypted))
        mail = InboundMail(
            uid=row.uid,
            sender=opened.get("sender", ""),
            sender_name=opened.get("sender_name", ""),
            date=row.sent_at,
            subject=opened.get("subject", ""),
            message_id=opened.get("message_id", ""),
            in_reply_to=tuple(opened.get("in_reply_to", ())),
            references=tuple(opened.get("references", ())),
            text=opened.get("text", ""),
            excerpt=opened.get("excerpt", ""),
            attachments=tuple(Attachment(n, s) for n, s in opened.get("attachments", ())),
            size=row.size,
            readable=row.readable,
        )
        return FiledMail(
            id=row.id,
            job_id=row.job_id,
            folder=row.folder,
            uidvalidity=row.uidvalidity,
            mail=mail,
            matched_by=row.matched_by,
            on_file=row.on_file,
            filed_at=row.filed_at,
        )

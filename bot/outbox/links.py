"""The supplier's link each PO e-mail carries (core.suppliers.links): its URL below
MANZOORI_PUBLIC_URL, the same for every attempt and resend of one e-mail."""

from __future__ import annotations

from dataclasses import dataclass

from core.jobs.jobs import Effect
from core.suppliers.links import link_for, sign_link

# The supplier's page on the web front door (bot.web.supplier); `token` is the signed link.
SUPPLIER_ROUTE = "/s/{token}"


@dataclass(frozen=True)
class SupplierLinks:
    """How links are made: signed with the secret key, below the public URL, good for `days`
    from when the e-mail was staged."""

    secret: bytes
    public_url: str
    days: int

    def url(self, effect: Effect) -> str:
        """The link the e-mail of outbox row `effect` carries."""
        token = sign_link(self.secret, link_for(effect, self.days))
        return self.public_url.rstrip("/") + SUPPLIER_ROUTE.format(token=token)

"""Where the Mini App's page of a PO is, for the card's Review button and the routes alike."""

from __future__ import annotations

from urllib.parse import quote

PAGE_ROUTE = "/app/po/{po}"


def page_path(po_number: str) -> str:
    """The path of a PO's Mini App page on the web front door."""
    return PAGE_ROUTE.format(po=quote(po_number, safe=""))


def page_url(public_url: str, po_number: str) -> str:
    """The page's URL as Telegram opens it: below MANZOORI_PUBLIC_URL."""
    return public_url.rstrip("/") + page_path(po_number)


CATALOGUE_ROUTE = "/app/new"


def catalogue_url(public_url: str) -> str:
    """The catalogue page's URL as Telegram opens it (/new, the menu button)."""
    return public_url.rstrip("/") + CATALOGUE_ROUTE

"""The supplier's link in the PO e-mail (bot.outbox.emails, SmtpSender.render): near the top of
the body, with when it stops working; the one URL for every attempt of one outbox row; a token
that names the row's job, version, hash and e-mail; none in a cancellation, and none anywhere
without MANZOORI_PUBLIC_URL (links None)."""

from __future__ import annotations

import dataclasses
import uuid
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage

import pytest

from bot.outbox.emails import render_body, render_po_email
from bot.outbox.links import SUPPLIER_ROUTE, SupplierLinks
from bot.outbox.smtp import SmtpSender, SmtpServer
from core.drafting.drafts import HASH_PREFIX, Draft, DraftLine, draft_hash
from core.errors import ExpiredToken
from core.jobs.effects import EffectKind, EffectStatus
from core.jobs.jobs import WORKFLOW_VERSION, Cancellation, Effect, Job, SendOrder
from core.jobs.states import State
from core.suppliers.links import verify_link

SECRET = bytes(range(32))
PUBLIC_URL = "https://manzoori.example.com/"  # the trailing "/" is not doubled
MAIL_FROM = "orders@manzoori.example"
PO = "PO-2026-0042"
T0 = datetime(2026, 12, 5, 9, 30, 45, tzinfo=UTC)  # when the row was staged
LINKS = SupplierLinks(SECRET, PUBLIC_URL, 30)
LINK_INTRO = "To accept, decline or propose changes, open:"


def _order(kind: EffectKind = EffectKind.SEND_PO, version: int = 3) -> SendOrder:
    """An outbox row of `kind` about version `version` of one PO, staged at T0."""
    draft = Draft(
        PO,
        "SUP-LHR-07",
        "Hall Road Traders",
        "orders@hallroad.example",
        "terms-2026-12",
        (DraftLine("CBL-USBC-1M", "USB-C cable, 1 m", 120, 45_000),),
    )
    digest = draft_hash(draft)
    job = Job(
        id=str(uuid.UUID(int=42)), po_number=PO, state=State.SENDING, version=7,
        requester_id=1001, input_ref="tg-file:abc", workflow_version=WORKFLOW_VERSION,
        source_versions={}, tool_results={}, draft_version=version, draft_hash=digest,
        supplier_id="SUP-LHR-07", total_paisa=draft.total_paisa, retry_count=0,
        decision_deadline=None, created_at=T0, updated_at=T0,
    )  # fmt: skip
    effect = Effect.of_job(kind, job, T0)
    cancellation = Cancellation("wrong supplier", T0) if kind is EffectKind.CANCEL_PO else None
    return SendOrder(effect, job, draft, cancellation=cancellation)


def _sender(links: SupplierLinks | None = LINKS) -> SmtpSender:
    """A sender that is never connected: these tests only render."""
    server = SmtpServer(host="127.0.0.1", port=25, tls="none")  # type: ignore[arg-type]
    return SmtpSender(server, mail_from=MAIL_FROM, links=links)


def _body(message: EmailMessage) -> str:
    part = message.get_body(preferencelist=("plain",))
    assert part is not None
    return str(part.get_content())


def _link_in(body: str) -> str:
    """The URL on the line after the link's introduction."""
    lines = body.splitlines()
    return lines[lines.index(LINK_INTRO) + 1]


def test_the_link_comes_before_the_order_with_when_it_stops_working() -> None:
    order = _order()
    message = render_po_email(
        order,
        mail_from=MAIL_FROM,
        now=T0,
        link="https://manzoori.example.com/s/token",
        link_expires=datetime(2027, 1, 4, 9, 30, tzinfo=UTC),
    )
    body = _body(message)
    assert body.startswith(
        f"Purchase order {PO} from Manzoori\n"  # no company file: the unnamed buyer
        "\n"
        f"{LINK_INTRO}\n"
        "https://manzoori.example.com/s/token\n"
        "(This link is yours alone and works until 4 Jan 2027, 09:30 UTC.)\n"
        "\n"
        "This is version 3 of the order: it replaces any earlier version you may have had.\n"
        "\n"
        "Supplier: Hall Road Traders\n"
    ), body


def test_the_sender_puts_the_rows_link_in_the_po_email() -> None:
    order = _order()
    body = _body(_sender().render(order))
    url = _link_in(body)
    assert url == LINKS.url(order.effect)
    assert url.startswith(PUBLIC_URL + SUPPLIER_ROUTE.format(token="")[1:])
    # Good for 30 days from when the row was staged, to the minute.
    assert "works until 4 Jan 2027, 09:30 UTC.)" in body


def test_the_token_names_the_rows_job_version_hash_and_email() -> None:
    order = _order()
    token = _link_in(_body(_sender().render(order))).rpartition("/")[2]
    link = verify_link(SECRET, token, T0)
    assert link.job_id == order.job.id
    assert link.draft_version == 3
    assert link.hash_prefix == order.effect.draft_hash[:HASH_PREFIX]
    assert link.kind is EffectKind.SEND_PO
    assert link.key(PO) == order.effect.key  # the e-mail that carried it
    assert link.expires_at == datetime(2027, 1, 4, 9, 30, tzinfo=UTC)
    with pytest.raises(ExpiredToken):
        verify_link(SECRET, token, link.expires_at)


def test_every_attempt_of_one_row_carries_the_same_link() -> None:
    first = _order()
    # A later attempt: the row moved on (attempts, lease, version), its identity did not.
    effect = dataclasses.replace(
        first.effect,
        status=EffectStatus.STARTED,
        attempts=2,
        version=5,
        started_at=T0 + timedelta(minutes=3),
        updated_at=T0 + timedelta(minutes=3),
    )
    again = dataclasses.replace(first, effect=effect)
    sender = _sender()
    assert _link_in(_body(sender.render(first))) == _link_in(_body(sender.render(again)))
    # Another version of the PO is another e-mail, with a link of its own.
    assert _link_in(_body(sender.render(_order(version=4)))) != _link_in(
        _body(sender.render(first))
    )


@pytest.mark.parametrize(
    ("kind", "linked"),
    [
        (EffectKind.SEND_PO, True),  # the PO itself
        (EffectKind.REMIND_PO, True),  # a reminder of it: a link of its own kind
        (EffectKind.CANCEL_PO, False),  # called off: nothing left to answer
        (EffectKind.REJECT_PROPOSAL, False),  # core.suppliers.links makes no link for it
    ],
)
def test_which_emails_carry_a_link(kind: EffectKind, linked: bool) -> None:
    order = _order(kind)
    body = _body(_sender().render(order))
    assert (LINK_INTRO in body) is linked
    assert ("/s/" in body) is linked
    if linked:
        token = _link_in(body).rpartition("/")[2]
        assert verify_link(SECRET, token, T0).kind is kind


def test_without_links_the_email_is_as_it_was() -> None:
    order = _order()
    body = _body(_sender(links=None).render(order))
    assert body == render_body(order)
    assert LINK_INTRO not in body and "/s/" not in body and "link" not in body.lower()

"""Wires settings into the store, the sender and the runner: the one place that does."""

from __future__ import annotations

from datetime import timedelta

from bot.config import Settings
from bot.runner import OutboxRunner
from bot.senders import SmtpSender
from store.engine import make_engine
from store.sql import SqlStore


def build_store(settings: Settings) -> SqlStore:
    """The durable store at DATABASE_URL, sealing with MANZOORI_DATA_KEY."""
    return SqlStore(
        make_engine(settings.database_url), settings.manzoori_data_key.get_secret_value()
    )


def build_sender(settings: Settings) -> SmtpSender:
    """The SMTP sender the settings describe."""
    password = settings.smtp_password.get_secret_value() if settings.smtp_password else None
    return SmtpSender(
        host=settings.smtp_host,
        port=settings.smtp_port,
        username=settings.smtp_username,
        password=password,
        tls=settings.smtp_tls,
        timeout=settings.smtp_timeout_seconds,
        mail_from=settings.mail_from,
    )


def build_runner(settings: Settings, store: SqlStore) -> OutboxRunner:
    """An outbox runner sending through SMTP under the configured lease and policies."""
    return OutboxRunner(
        store,
        build_sender(settings),
        settings.rules(),
        lease=timedelta(seconds=settings.manzoori_lease_seconds),
        fault_point=settings.manzoori_fault_point,
    )

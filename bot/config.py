"""Settings from the environment and `.env`: the only module that reads either.

`load_settings()` is the entry point; it turns pydantic's errors into one `ConfigError` that names
each bad variable by its environment name, so the CLI can print it and exit. `manzoori init`
writes a fresh `.env` from the same fields (bot.cli.env_file).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from datetime import timedelta
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, SecretStr, ValidationError, ValidationInfo, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from bot.mailbox import MailboxConfig
from bot.outbox.links import SupplierLinks
from bot.outbox.runner import CONNECTIONS, SENDS_PER_CONNECTION, FaultPoint
from bot.outbox.smtp import TlsMode
from core.approval.ladder import Ladder, WorkingHours, parse_clock, parse_duration
from core.approval.policies import ApprovalPolicy, Rules
from core.drafting.drafts import is_email
from core.errors import ConfigError
from core.jobs.retries import RetryPolicy
from core.records.retention import RETENTION_DAYS, Retention
from core.suppliers.links import DEFAULT_DAYS as DEFAULT_LINK_DAYS

DATABASE_SCHEMES = ("sqlite+aiosqlite", "postgresql+asyncpg")
KEY_VARIABLES = ("MANZOORI_SECRET_KEY", "MANZOORI_DATA_KEY")
# Fernet.generate_key(): 32 random bytes, URL-safe base64 with padding, 44 characters.
_KEY_BYTES = 32
_KEY_PATTERN = re.compile(r"[A-Za-z0-9_-]+={0,2}")
_INIT_HINT = "run `manzoori init` to write a .env with fresh keys"
# The hosts a MANZOORI_PUBLIC_URL may name over plain http: this machine only.
_LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
# The reminder ladder's settings, each "off" or what its parser reads.
_LADDER_PARSERS: dict[str, Callable[[str], object]] = {
    "manzoori_remind_after": parse_duration,
    "manzoori_escalate_after": parse_duration,
    "manzoori_before_expiry": parse_duration,
    "manzoori_digest_at": parse_clock,
}


class WebAppScript(StrEnum):
    """Where the Mini App's page gets window.Telegram.WebApp from."""

    TELEGRAM = "telegram"  # https://telegram.org/js/telegram-web-app.js, inside Telegram
    LOCAL = "local"  # bot/web/static's stand-in: initData from the URL fragment


class LogFormat(StrEnum):
    """How log lines are written (MANZOORI_LOG_FORMAT)."""

    TEXT = "text"
    JSON = "json"


def _is_key(text: str) -> bool:
    """Whether `text` is 32 bytes in URL-safe base64, as Fernet and the signing key want."""
    try:
        # Fernet itself wants URL-safe base64; the pattern rejects what b64decode would skip.
        raw = base64.urlsafe_b64decode(text) if _KEY_PATTERN.fullmatch(text) else None
    except (binascii.Error, ValueError):
        raw = None
    return raw is not None and len(raw) == _KEY_BYTES


class Settings(BaseSettings):
    """Every setting the bot, the runner and the CLI read; a field is its env name, lower-cased."""

    model_config = SettingsConfigDict(
        env_file=".env",
        env_file_encoding="utf-8",
        extra="ignore",
        case_sensitive=False,
        # `NAME=` left empty (as in .env.example) means "use the default", not "the empty string".
        env_ignore_empty=True,
        # Defaults go through the validators too, so the cross-field checks see them.
        validate_default=True,
    )

    database_url: str = Field(
        "sqlite+aiosqlite:///manzoori.db",
        description="SQLAlchemy URL; scheme sqlite+aiosqlite:// or postgresql+asyncpg://",
    )
    manzoori_secret_key: SecretStr = Field(
        description="HMAC keys that sign buttons, invitations and supplier links, newest first, "
        "comma-separated: the first signs, all are accepted until what they signed expires "
        "(`manzoori keys status`); each 32 bytes in URL-safe base64 (44 chars)",
    )
    manzoori_data_key: SecretStr = Field(
        description="Fernet keys that seal stored fields, newest first, comma-separated: the "
        "first seals, all open (`manzoori keys rotate` re-seals with the first); each 32 bytes "
        "in URL-safe base64 (44 chars)",
    )
    manzoori_admin_ids: Annotated[frozenset[int], NoDecode] = Field(
        frozenset(),
        description="Telegram user ids of admins; comma-separated positive integers, e.g. 11,22",
    )
    telegram_bot_token: SecretStr | None = Field(
        None,
        description="The bot's token from @BotFather; required by `manzoori run` (the CLI "
        "works without it)",
    )
    telegram_api_url: str = Field(
        "https://api.telegram.org",
        description="Bot API server; requests go to {url}/bot{token}/{method}, files to "
        "{url}/file/bot{token}/{path} (a self-hosted Bot API server works too)",
    )
    webhook_url: str | None = Field(
        None,
        description="Public https URL Telegram posts updates to; empty: long polling. Several "
        "webhook processes can sit behind one load balancer on PostgreSQL",
    )
    webhook_secret: SecretStr | None = Field(
        None,
        description="Required with WEBHOOK_URL: 1-256 characters of A-Z a-z 0-9 _ -; Telegram "
        "sends it in X-Telegram-Bot-Api-Secret-Token and other requests get 403",
    )
    web_listen: str = Field(
        "127.0.0.1",
        description="Address the web front door (webhook, /healthz, /metrics) listens on; "
        "behind a reverse proxy the default suits, 0.0.0.0 listens on every interface",
    )
    web_port: int = Field(
        8080, ge=1, le=65535, description="Port the web front door listens on, 1..65535"
    )
    manzoori_public_url: str | None = Field(
        None,
        description="Where the web front door is reached from outside: https, or plain http "
        "only for a loopback host (localhost, 127.0.0.1, ::1); empty: not reachable from outside",
    )
    manzoori_supplier_link_days: int = Field(
        DEFAULT_LINK_DAYS,
        gt=0,
        le=366,
        description="Days the link in a PO's e-mail lets the supplier answer, counted from when "
        "the e-mail was staged; integer 1..366 (links need MANZOORI_PUBLIC_URL)",
    )
    manzoori_webapp_max_age_seconds: int = Field(
        3600,
        gt=0,
        description="Seconds a Mini App's Telegram initData stays good for the API (its "
        "auth_date at most this old); integer > 0",
    )
    manzoori_webapp_script: WebAppScript = Field(
        WebAppScript.TELEGRAM,
        description="Where the Mini App page loads Telegram's script from: telegram "
        "(https://telegram.org, production) or local (a stand-in served by the front door, "
        "for tests and the demo; only with a loopback MANZOORI_PUBLIC_URL)",
    )
    manzoori_metrics_token: SecretStr | None = Field(
        None,
        description="When set, /metrics answers only with `Authorization: Bearer <token>`; "
        "empty: /metrics is open to whoever reaches WEB_LISTEN",
    )
    smtp_host: str = Field("localhost", description="SMTP server host name")
    smtp_port: int = Field(25, ge=1, le=65535, description="SMTP server port, 1..65535")
    smtp_username: str | None = Field(None, description="SMTP login name; empty: no login")
    smtp_password: SecretStr | None = Field(None, description="SMTP password; empty: no login")
    smtp_tls: TlsMode = Field(
        TlsMode.NONE, description="SMTP transport security: none, starttls or tls (implicit TLS)"
    )
    smtp_timeout_seconds: float = Field(
        30.0,
        gt=0,
        description="Seconds one whole SMTP send may take, from connect to the reply to DATA; > 0",
    )
    # At most 50: Postfix, a common relay, refuses a client's 51st concurrent connection by default
    # (smtpd_client_connection_count_limit).
    manzoori_smtp_connections: int = Field(
        CONNECTIONS,
        ge=1,
        le=50,
        description="SMTP connections the outbox runner sends over at once, each reused for "
        f"up to {SENDS_PER_CONNECTION} messages a pass; integer 1..50",
    )
    mail_from: str = Field(
        "orders@localhost.localdomain", description="Sender address of purchase-order e-mail"
    )
    manzoori_approval_ttl_seconds: int = Field(
        86400, gt=0, description="Seconds an approval stays valid; integer > 0"
    )
    manzoori_typed_request_seconds: int = Field(
        86400, gt=0, description="Seconds a typed request's Submit button works; integer > 0"
    )
    manzoori_dual_approval_above_pkr: int = Field(
        500_000, ge=0, description="Totals above this many rupees need two approvers; integer >= 0"
    )
    manzoori_timezone: str = Field(
        "Asia/Karachi", description="IANA time zone for dates shown to users and in e-mail"
    )
    manzoori_lease_seconds: float = Field(
        120.0,
        gt=0,
        description=f"Seconds a runner owns an outbox row; must exceed {SENDS_PER_CONNECTION} "
        "x SMTP_TIMEOUT_SECONDS, since a pass makes that many sends in a row on each "
        "connection (a dead runner's rows wait this long before recovery)",
    )
    manzoori_poll_seconds: float = Field(
        2.0,
        gt=0,
        description="Seconds a runner waits when it has nothing to do, unless a commit that "
        "gives it work wakes it first (store/wakeups.py); > 0",
    )
    manzoori_retry_base_seconds: float = Field(
        5.0, gt=0, description="First retry delay in seconds, doubled per attempt; > 0"
    )
    manzoori_retry_max_seconds: float = Field(
        900.0, gt=0, description="Cap on one retry delay in seconds; >= the base delay"
    )
    manzoori_retry_max_attempts: int = Field(
        12, ge=1, description="Attempts before a send is dead-lettered; integer >= 1"
    )
    manzoori_retry_max_elapsed_seconds: float = Field(
        7200.0, gt=0, description="Seconds of retrying before a send is dead-lettered; > 0"
    )
    manzoori_retention_days: int = Field(
        RETENTION_DAYS,
        ge=1,
        description="Days a closed PO keeps its personal data (draft bodies, supplier address, "
        "notes, reasons) before the daily purge removes them; integer >= 1",
    )
    # The reminder ladder of a policy in force with no [reminders] (core.approval.ladder,
    # core.messaging.nudges).
    manzoori_working_hours: str = Field(
        "Mon-Sat 09:00-19:00",
        description="Working hours of the configured reminder ladder, in MANZOORI_TIMEZONE: "
        "nudges due outside them wait for the next opening; Mon-Sun 00:00-24:00 is always",
    )
    manzoori_remind_after: str = Field(
        "2h",
        description="The configured ladder's reminder to each approver a request waits for, "
        "after their card was delivered (90s, 45m, 2h, 3d); off: no ladder unless the "
        "policy in force has [reminders]",
    )
    manzoori_escalate_after: str = Field(
        "6h", description="When the admins hear who has not decided; off: never"
    )
    manzoori_before_expiry: str = Field(
        "1h", description="The last warning before a request expires; off: none"
    )
    manzoori_digest_at: str = Field(
        "09:30", description="Time of day (HH:MM) of each approver's daily digest; off: none"
    )
    manzoori_ladder_check_seconds: float = Field(
        60.0,
        gt=0,
        description="Seconds between two sweeps for due reminders, across all processes (a "
        "nudge is at most this late); > 0",
    )
    imap_host: str | None = Field(
        None,
        description="The buyer's IMAP server; empty: the mailbox is not read (docs/mailbox.md)",
    )
    imap_port: int = Field(993, ge=1, le=65535, description="IMAP server port, 1..65535")
    imap_tls: TlsMode = Field(
        TlsMode.TLS, description="IMAP transport security: tls (implicit TLS), starttls or none"
    )
    imap_username: str = Field("", description="IMAP login name")
    imap_password: SecretStr = Field(SecretStr(""), description="IMAP password")
    imap_sent_folder: str = Field(
        "Sent",
        min_length=1,
        description="The folder where the mail relay files its copies of our e-mails (or the "
        "journal mailbox's folder, with MAIL_JOURNAL_BCC)",
    )
    imap_inbox_folder: str = Field(
        "INBOX", min_length=1, description="The folder suppliers' replies arrive in"
    )
    imap_timeout_seconds: float = Field(
        20.0, gt=0, description="Seconds one IMAP socket operation may take; > 0"
    )
    mail_journal_bcc: str | None = Field(
        None,
        description="An address every supplier e-mail also goes to, in the envelope only, for "
        "a relay that files no Sent copy; empty: none",
    )
    manzoori_reconcile_grace_seconds: int = Field(
        900,
        ge=0,
        description="Seconds the mail relay may take to file its copy of an e-mail before a "
        "missing copy counts as evidence that it did not leave; integer >= 0",
    )
    manzoori_mailbox_check_seconds: float = Field(
        60.0, gt=0, description="Seconds between two passes over the mailbox, per process; > 0"
    )
    manzoori_backup_dir: Path | None = Field(
        None,
        description="Where the runner writes a daily backup (`manzoori backup`), under a "
        "lease, so one process a day does it; empty: no daily backup",
    )
    manzoori_backup_keep: int = Field(
        14, ge=1, description="Daily backups kept in MANZOORI_BACKUP_DIR; integer >= 1"
    )
    manzoori_log_format: LogFormat = Field(
        LogFormat.TEXT,
        description="text: one readable line per event; json: one JSON object per line, with "
        "update_id, po_number and job_id as fields",
    )
    manzoori_fault_point: FaultPoint | None = Field(
        None,
        description="For crash tests only: the runner kills itself with SIGKILL at that point; "
        "one of after_claim, after_marker, after_accept, after_record; leave unset otherwise",
    )

    @field_validator("database_url")
    @classmethod
    def _known_scheme(cls, value: str) -> str:
        scheme = value.split("://", 1)[0] if "://" in value else ""
        if scheme not in DATABASE_SCHEMES:
            # Only the scheme is echoed: the rest of the URL may hold a password.
            raise ValueError(
                f"scheme must be sqlite+aiosqlite:// or postgresql+asyncpg://, got {scheme!r}"
            )
        return value

    @field_validator("manzoori_secret_key", "manzoori_data_key")
    @classmethod
    def _fernet_keys(cls, value: SecretStr) -> SecretStr:
        keys = [key.strip() for key in value.get_secret_value().split(",")]
        for place, key in enumerate(keys, 1):
            if not _is_key(key):
                which = "" if len(keys) == 1 else f"key {place} of {len(keys)}: "
                raise ValueError(
                    f"{which}not {_KEY_BYTES} bytes of URL-safe base64 (44 characters); "
                    "make one with `manzoori init`"
                )
        if len(set(keys)) != len(keys):
            raise ValueError("a key is listed twice")
        return SecretStr(",".join(keys))

    @field_validator("manzoori_admin_ids", mode="before")
    @classmethod
    def _comma_separated_ids(cls, value: Any) -> frozenset[int]:
        items = value.split(",") if isinstance(value, str) else value
        ids = set()
        for item in items:
            text = str(item).strip()
            if not text:
                continue  # tolerate "1,2," and spaces around commas
            if not text.isdigit() or int(text) <= 0:
                raise ValueError(
                    f"expected comma-separated positive Telegram user ids, got {text!r}"
                )
            ids.add(int(text))
        return frozenset(ids)

    @field_validator("mail_from")
    @classmethod
    def _one_at_sign(cls, value: str) -> str:
        local, at, domain = value.strip().partition("@")
        if not at or not local or not domain or "@" in domain:
            raise ValueError(f"expected an address like orders@example.com, got {value!r}")
        return value.strip()

    @field_validator("mail_journal_bcc")
    @classmethod
    def _journal_is_an_address(cls, value: str | None) -> str | None:
        if not value:
            return None
        if not is_email(value) or not value.isascii():
            raise ValueError("must be one plain ASCII e-mail address, like journal@shop.pk")
        return value

    @field_validator("webhook_secret")
    @classmethod
    def _telegram_secret(cls, value: SecretStr | None, info: ValidationInfo) -> SecretStr | None:
        if value is None:
            if info.data.get("webhook_url"):
                raise ValueError("is required with WEBHOOK_URL, or anyone could post updates")
            return value
        if not re.fullmatch(r"[A-Za-z0-9_-]{1,256}", value.get_secret_value()):
            raise ValueError("must be 1-256 characters of A-Z a-z 0-9 _ - (Telegram's rule)")
        return value

    @field_validator("webhook_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("https://", "http://")):
            raise ValueError("must be an http(s) URL")
        return value

    @field_validator("manzoori_public_url")
    @classmethod
    def _public_url(cls, value: str | None) -> str | None:
        if value is None:
            return value
        parts = urlsplit(value)
        if parts.scheme == "https" and parts.hostname:
            return value.rstrip("/")
        if parts.scheme == "http" and parts.hostname in _LOOPBACK_HOSTS:
            return value.rstrip("/")
        raise ValueError(
            f"must be an https URL (plain http only for localhost, 127.0.0.1 or ::1), got {value!r}"
        )

    @field_validator("manzoori_webapp_script")
    @classmethod
    def _local_script_on_loopback(cls, value: WebAppScript, info: ValidationInfo) -> WebAppScript:
        public = info.data.get("manzoori_public_url")
        # The stand-in is no Telegram client: a page reached from outside runs inside Telegram.
        if value is WebAppScript.LOCAL and (
            public is None or urlsplit(public).hostname not in _LOOPBACK_HOSTS
        ):
            raise ValueError(
                "local is only for a MANZOORI_PUBLIC_URL on localhost, 127.0.0.1 or ::1"
            )
        return value

    @field_validator("manzoori_timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(
                f"unknown time zone {value!r}; use an IANA name like Asia/Karachi"
            ) from None
        return value

    @field_validator("manzoori_working_hours")
    @classmethod
    def _working_hours(cls, value: str) -> str:
        WorkingHours.parse(value)
        return value

    @field_validator(*_LADDER_PARSERS)
    @classmethod
    def _ladder_step(cls, value: str, info: ValidationInfo) -> str:
        """A step of the reminder ladder: off, or what its parser reads."""
        assert info.field_name is not None  # a field validator's
        if not _off(value):
            _LADDER_PARSERS[info.field_name](value)
        return value

    @field_validator("manzoori_lease_seconds")
    @classmethod
    def _lease_outlives_smtp(cls, value: float, info: ValidationInfo) -> float:
        timeout = info.data.get("smtp_timeout_seconds")
        # A pass marks its whole batch at once, and each connection then makes its sends one
        # after another, each bounded by the timeout: a lease shorter than that lets recovery
        # take a row still waiting for, or in the middle of, its send.
        if timeout is not None and value <= timeout * SENDS_PER_CONNECTION:
            raise ValueError(
                f"must exceed {SENDS_PER_CONNECTION} x SMTP_TIMEOUT_SECONDS "
                f"({timeout * SENDS_PER_CONNECTION:g}), got {value:g}; a shorter lease lets "
                "a row still being sent be taken from its runner"
            )
        return value

    @field_validator("manzoori_retry_max_seconds")
    @classmethod
    def _cap_above_base(cls, value: float, info: ValidationInfo) -> float:
        base = info.data.get("manzoori_retry_base_seconds")
        if base is not None and value < base:
            raise ValueError(
                f"must be at least MANZOORI_RETRY_BASE_SECONDS ({base:g}), got {value:g}"
            )
        return value

    def approval_policy(self) -> ApprovalPolicy:
        """The approval rules these settings describe."""
        return ApprovalPolicy(
            ttl=timedelta(seconds=self.manzoori_approval_ttl_seconds),
            dual_above_paisa=self.manzoori_dual_approval_above_pkr * 100,
            zone=self.tz,
        )

    def ladder(self) -> Ladder | None:
        """The reminder ladder of a policy in force with no [reminders]; None: no ladder."""
        if _off(self.manzoori_remind_after):
            return None

        def duration(text: str) -> timedelta | None:
            return None if _off(text) else parse_duration(text)

        at = self.manzoori_digest_at
        return Ladder(
            working_hours=WorkingHours.parse(self.manzoori_working_hours),
            remind_after=parse_duration(self.manzoori_remind_after),
            escalate_after=duration(self.manzoori_escalate_after),
            before_expiry=duration(self.manzoori_before_expiry),
            digest_at=None if _off(at) else parse_clock(at),
        )

    def retry_policy(self) -> RetryPolicy:
        """The outbox retry rules these settings describe."""
        return RetryPolicy(
            base_delay=timedelta(seconds=self.manzoori_retry_base_seconds),
            max_delay=timedelta(seconds=self.manzoori_retry_max_seconds),
            max_attempts=self.manzoori_retry_max_attempts,
            max_elapsed=timedelta(seconds=self.manzoori_retry_max_elapsed_seconds),
        )

    def retention(self) -> Retention:
        """How long stored data is kept (core.records.retention)."""
        return Retention(closed_jobs=timedelta(days=self.manzoori_retention_days))

    def rules(self) -> Rules:
        """The policies handed to core's use cases (core.approval.policies.Rules)."""
        return Rules(approval=self.approval_policy(), retry=self.retry_policy())

    @property
    def tz(self) -> ZoneInfo:
        """The time zone users see dates in."""
        return ZoneInfo(self.manzoori_timezone)

    def mailbox(self) -> MailboxConfig | None:
        """Where the buyer's mailbox is (bot.mailbox); None without IMAP_HOST."""
        if not self.imap_host:
            return None
        return MailboxConfig(
            host=self.imap_host,
            port=self.imap_port,
            tls=self.imap_tls,
            username=self.imap_username,
            password=self.imap_password.get_secret_value(),
            sent_folder=self.imap_sent_folder,
            inbox_folder=self.imap_inbox_folder,
            timeout=self.imap_timeout_seconds,
        )

    def reconcile_grace(self) -> timedelta:
        """How long the relay may take to file its copy (MANZOORI_RECONCILE_GRACE_SECONDS)."""
        return timedelta(seconds=self.manzoori_reconcile_grace_seconds)

    def supplier_links(self) -> SupplierLinks | None:
        """How the links in supplier e-mails are made; None without MANZOORI_PUBLIC_URL, when
        no supplier could reach the page (the e-mail then carries none)."""
        if self.manzoori_public_url is None:
            return None
        return SupplierLinks(
            self.secret, self.manzoori_public_url, self.manzoori_supplier_link_days
        )

    @property
    def secret(self) -> bytes:
        """The 32 bytes of MANZOORI_SECRET_KEY's first key: what signs buttons, invitations
        and supplier links."""
        return self.secrets[0]

    @property
    def secrets(self) -> tuple[bytes, ...]:
        """Every MANZOORI_SECRET_KEY key, newest first: what a signature is checked against."""
        keys = self.manzoori_secret_key.get_secret_value().split(",")
        return tuple(base64.urlsafe_b64decode(key) for key in keys)

    @property
    def mail_domain(self) -> str:
        """The domain of MAIL_FROM, for Message-ID headers."""
        return self.mail_from.rpartition("@")[2]


def _off(setting: str) -> bool:
    """Whether a ladder setting turns its step off."""
    return setting.strip().lower() in {"", "off"}


def load_settings() -> Settings:
    """Read the environment and `.env`; raise ConfigError naming every bad variable."""
    try:
        return Settings()  # the required fields come from the environment
    except ValidationError as exc:
        lines = [_describe(error) for error in exc.errors(include_url=False)]
        # `from None`: pydantic's own text repeats the raw input, which may be a key.
        raise ConfigError("\n".join(lines)) from None


def _describe(error: Any) -> str:
    """One `ENV_NAME: reason` line for one pydantic error."""
    name = str(error["loc"][0]).upper() if error["loc"] else "configuration"
    if error["type"] == "missing":
        reason = f"missing — {_INIT_HINT}" if name in KEY_VARIABLES else "missing"
    elif error["type"] == "value_error":
        reason = str(error["ctx"]["error"])
    else:
        reason = error["msg"]
    return f"{name}: {reason}"

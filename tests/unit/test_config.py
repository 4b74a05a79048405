"""Settings from the environment and .env: defaults, every malformed value, and `manzoori init`."""

from __future__ import annotations

import base64
import os
import re
import stat
from datetime import time, timedelta
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from bot.cli.env_file import write_env_file
from bot.config import Settings, WebAppScript, load_settings
from core.approval.ladder import WorkingHours
from core.approval.policies import ApprovalPolicy, Rules
from core.errors import ConfigError
from core.jobs.retries import RetryPolicy

REPO_ROOT = Path(__file__).resolve().parents[2]
ENV_NAMES = [name.upper() for name in Settings.model_fields]
SECRET_KEY = Fernet.generate_key().decode()
DATA_KEY = Fernet.generate_key().decode()


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """A clean environment with two valid keys, in an empty directory so no real .env leaks in."""
    monkeypatch.chdir(tmp_path)
    # Names are case-insensitive, so a lower-case stray variable would count too.
    for name in list(os.environ):
        if name.upper() in ENV_NAMES:
            monkeypatch.delenv(name)
    monkeypatch.setenv("MANZOORI_SECRET_KEY", SECRET_KEY)
    monkeypatch.setenv("MANZOORI_DATA_KEY", DATA_KEY)
    return monkeypatch


def config_error(env: pytest.MonkeyPatch, **values: str) -> str:
    """Set `values`, load, and return the ConfigError's message."""
    for name, value in values.items():
        env.setenv(name, value)
    with pytest.raises(ConfigError) as caught:
        load_settings()
    return str(caught.value)


def test_defaults(env: pytest.MonkeyPatch) -> None:
    settings = load_settings()
    assert settings.database_url == "sqlite+aiosqlite:///manzoori.db"
    assert settings.manzoori_secret_key.get_secret_value() == SECRET_KEY
    assert settings.manzoori_data_key.get_secret_value() == DATA_KEY
    assert settings.manzoori_admin_ids == frozenset()
    assert (settings.smtp_host, settings.smtp_port, settings.smtp_tls) == ("localhost", 25, "none")
    assert settings.smtp_username is None and settings.smtp_password is None
    assert settings.smtp_timeout_seconds == 30
    assert settings.manzoori_lease_seconds == 120
    assert settings.manzoori_smtp_connections == 10
    assert settings.manzoori_poll_seconds == 2
    assert settings.manzoori_fault_point is None
    assert settings.tz.key == "Asia/Karachi"
    assert settings.mail_domain == "localhost.localdomain"


def test_policies_follow_the_settings(env: pytest.MonkeyPatch) -> None:
    env.setenv("MANZOORI_APPROVAL_TTL_SECONDS", "3600")
    env.setenv("MANZOORI_DUAL_APPROVAL_ABOVE_PKR", "250000")
    env.setenv("MANZOORI_RETRY_BASE_SECONDS", "1")
    env.setenv("MANZOORI_RETRY_MAX_SECONDS", "60")
    env.setenv("MANZOORI_RETRY_MAX_ATTEMPTS", "3")
    env.setenv("MANZOORI_RETRY_MAX_ELAPSED_SECONDS", "600")
    settings = load_settings()
    approval = ApprovalPolicy(ttl=timedelta(hours=1), dual_above_paisa=25_000_000)
    retry = RetryPolicy(
        base_delay=timedelta(seconds=1),
        max_delay=timedelta(minutes=1),
        max_attempts=3,
        max_elapsed=timedelta(minutes=10),
    )
    assert settings.approval_policy() == approval
    assert settings.retry_policy() == retry
    assert settings.rules() == Rules(approval=approval, retry=retry)


def test_default_policies_match_core_defaults(env: pytest.MonkeyPatch) -> None:
    assert load_settings().rules() == Rules()


def test_values_are_parsed(env: pytest.MonkeyPatch) -> None:
    env.setenv("MANZOORI_ADMIN_IDS", " 12, 34 ,56,")
    env.setenv("DATABASE_URL", "postgresql+asyncpg://app:pw@db:5432/manzoori")
    env.setenv("smtp_tls", "starttls")  # lower case: names are case-insensitive
    env.setenv("SMTP_PASSWORD", "hunter2")
    env.setenv("MAIL_FROM", "po@buyer.example.pk")
    env.setenv("MANZOORI_FAULT_POINT", "after_accept")
    settings = load_settings()
    assert settings.manzoori_admin_ids == frozenset({12, 34, 56})
    assert settings.database_url.startswith("postgresql+asyncpg://")
    assert settings.smtp_tls == "starttls"
    assert settings.smtp_password is not None
    assert settings.smtp_password.get_secret_value() == "hunter2"
    assert "hunter2" not in repr(settings)
    assert settings.mail_domain == "buyer.example.pk"
    assert settings.manzoori_fault_point == "after_accept"


def test_empty_values_mean_default(env: pytest.MonkeyPatch) -> None:
    env.setenv("MANZOORI_ADMIN_IDS", "")
    env.setenv("SMTP_USERNAME", "")
    settings = load_settings()
    assert settings.manzoori_admin_ids == frozenset()
    assert settings.smtp_username is None


def test_dotenv_in_the_working_directory_is_read(env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    env.delenv("MANZOORI_DATA_KEY")
    (tmp_path / ".env").write_text(f"MANZOORI_DATA_KEY={DATA_KEY}\nSMTP_PORT=2525\n")
    settings = load_settings()
    assert settings.manzoori_data_key.get_secret_value() == DATA_KEY
    assert settings.smtp_port == 2525


SHORT_KEY = base64.urlsafe_b64encode(b"k" * 31).decode()

MALFORMED = [
    # 31 bytes: valid base64, wrong length
    ("MANZOORI_SECRET_KEY", SHORT_KEY, "manzoori init"),
    # 33 bytes
    ("MANZOORI_DATA_KEY", base64.urlsafe_b64encode(b"k" * 33).decode(), "32 bytes"),
    # not base64 at all
    ("MANZOORI_DATA_KEY", "this is not a key!!", "manzoori init"),
    # standard (not URL-safe) alphabet
    ("MANZOORI_SECRET_KEY", base64.b64encode(b"\xfb" * 32).decode(), "URL-safe"),
    # an id that is not a number
    ("MANZOORI_ADMIN_IDS", "12,abc", "'abc'"),
    # ids are positive
    ("MANZOORI_ADMIN_IDS", "12,-5", "positive"),
    # JSON is not the format
    ("MANZOORI_ADMIN_IDS", "[1, 2]", "comma-separated"),
    # ssl is not one of the three modes
    ("SMTP_TLS", "ssl", "starttls"),
    # port out of range
    ("SMTP_PORT", "70000", "65535"),
    # port not a number
    ("SMTP_PORT", "smtp", "integer"),
    # timeout must be positive
    ("SMTP_TIMEOUT_SECONDS", "0", "greater than 0"),
    # a runner needs at least one connection to send over
    ("MANZOORI_SMTP_CONNECTIONS", "0", "greater than or equal to 1"),
    # more than a relay such as Postfix lets one client open at once
    ("MANZOORI_SMTP_CONNECTIONS", "51", "less than or equal to 50"),
    # not an IANA zone
    ("MANZOORI_TIMEZONE", "Asia/Lahore", "Asia/Lahore"),
    # unsupported driver
    ("DATABASE_URL", "mysql://root@localhost/po", "'mysql'"),
    # sync driver, would block the event loop
    ("DATABASE_URL", "postgresql://postgres@localhost/po", "postgresql+asyncpg"),
    # no scheme at all
    ("DATABASE_URL", "manzoori.db", "sqlite+aiosqlite"),
    # two @ signs
    ("MAIL_FROM", "a@b@c", "orders@example.com"),
    # no @ sign
    ("MAIL_FROM", "purchasing", "orders@example.com"),
    # TTL must be positive
    ("MANZOORI_APPROVAL_TTL_SECONDS", "0", "greater than 0"),
    # threshold cannot be negative
    ("MANZOORI_DUAL_APPROVAL_ABOVE_PKR", "-1", "greater than or equal to 0"),
    # at least one attempt
    ("MANZOORI_RETRY_MAX_ATTEMPTS", "0", "greater than or equal to 1"),
    # the cap below the base delay
    ("MANZOORI_RETRY_MAX_SECONDS", "1", "MANZOORI_RETRY_BASE_SECONDS"),
    # a fault point that does not exist
    ("MANZOORI_FAULT_POINT", "after_lunch", "after_claim"),
]


@pytest.mark.parametrize(("name", "value", "reason"), MALFORMED)
def test_malformed_value_is_named(
    env: pytest.MonkeyPatch, name: str, value: str, reason: str
) -> None:
    message = config_error(env, **{name: value})
    [line] = message.splitlines()
    assert line.startswith(f"{name}: ")
    assert reason in line


@pytest.mark.parametrize("name", ["MANZOORI_SECRET_KEY", "MANZOORI_DATA_KEY"])
def test_malformed_key_is_not_echoed(env: pytest.MonkeyPatch, name: str) -> None:
    assert SHORT_KEY not in config_error(env, **{name: SHORT_KEY})


def test_missing_keys_are_each_named_with_the_fix(env: pytest.MonkeyPatch) -> None:
    env.delenv("MANZOORI_SECRET_KEY")
    env.delenv("MANZOORI_DATA_KEY")
    assert config_error(env).splitlines() == [
        "MANZOORI_SECRET_KEY: missing — run `manzoori init` to write a .env with fresh keys",
        "MANZOORI_DATA_KEY: missing — run `manzoori init` to write a .env with fresh keys",
    ]


def test_empty_key_counts_as_missing(env: pytest.MonkeyPatch) -> None:
    assert config_error(env, MANZOORI_DATA_KEY="").startswith("MANZOORI_DATA_KEY: missing")


@pytest.mark.parametrize(
    "values",
    [
        # equal is not enough: the send may still be running when the lease ends
        {"MANZOORI_LEASE_SECONDS": "30", "SMTP_TIMEOUT_SECONDS": "30"},
        # the default lease (120) against a slow server's timeout
        {"SMTP_TIMEOUT_SECONDS": "200"},
        # a short lease against the default timeout (30)
        {"MANZOORI_LEASE_SECONDS": "10"},
        # longer than one send, but not than the three each connection makes in a pass
        {"MANZOORI_LEASE_SECONDS": "100", "SMTP_TIMEOUT_SECONDS": "34"},
    ],
)
def test_lease_must_outlive_the_smtp_timeout(
    env: pytest.MonkeyPatch, values: dict[str, str]
) -> None:
    message = config_error(env, **values)
    assert message.startswith("MANZOORI_LEASE_SECONDS: ")
    assert "SMTP_TIMEOUT_SECONDS" in message


def test_every_bad_variable_is_listed(env: pytest.MonkeyPatch) -> None:
    message = config_error(env, SMTP_TLS="ssl", MANZOORI_TIMEZONE="Nowhere", SMTP_PORT="0")
    assert [line.split(":")[0] for line in message.splitlines()] == [
        "SMTP_PORT",
        "SMTP_TLS",
        "MANZOORI_TIMEZONE",
    ]


def test_written_env_file_loads(env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    env.delenv("MANZOORI_SECRET_KEY")
    env.delenv("MANZOORI_DATA_KEY")
    path = write_env_file(tmp_path / ".env")
    settings = load_settings()
    assert path == tmp_path / ".env"
    assert settings.database_url == "sqlite+aiosqlite:///manzoori.db"
    assert settings.manzoori_secret_key != settings.manzoori_data_key
    Fernet(settings.manzoori_data_key.get_secret_value())  # the sealer must accept it


def test_written_env_file_is_private(tmp_path: Path) -> None:
    path = write_env_file(tmp_path / ".env")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_written_env_file_documents_every_variable(tmp_path: Path) -> None:
    lines = write_env_file(tmp_path / ".env").read_text().splitlines()
    assert_documented(lines)


def test_each_call_makes_fresh_keys(tmp_path: Path) -> None:
    first = read_keys(write_env_file(tmp_path / "a.env"))
    second = read_keys(write_env_file(tmp_path / "b.env"))
    assert len(set(first.values()) | set(second.values())) == 4


def test_existing_file_is_kept_without_force(tmp_path: Path) -> None:
    path = tmp_path / ".env"
    path.write_text("MANZOORI_DATA_KEY=the-one-that-seals-the-database\n")
    with pytest.raises(ConfigError, match="exists"):
        write_env_file(path)
    assert path.read_text() == "MANZOORI_DATA_KEY=the-one-that-seals-the-database\n"


def test_force_overwrites_and_tightens_the_mode(tmp_path: Path) -> None:
    path = tmp_path / ".env"
    path.write_text("OLD=1\n")
    path.chmod(0o644)
    write_env_file(path, force=True)
    assert "OLD=1" not in path.read_text()
    assert set(read_keys(path)) == {"MANZOORI_SECRET_KEY", "MANZOORI_DATA_KEY"}
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_env_example_documents_every_variable() -> None:
    assert_documented((REPO_ROOT / ".env.example").read_text().splitlines())


def test_env_example_holds_the_defaults(env: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / ".env").write_text((REPO_ROOT / ".env.example").read_text())
    # The example leaves the keys empty, so the ones from the environment win.
    assert load_settings() == Settings(
        manzoori_secret_key=SECRET_KEY, manzoori_data_key=DATA_KEY, _env_file=None
    )


def assert_documented(lines: list[str]) -> None:
    """Each variable appears once, as `NAME=` or `# NAME=`, right below a comment."""
    for name in ENV_NAMES:
        [index] = [i for i, line in enumerate(lines) if line.lstrip("# ").startswith(f"{name}=")]
        assert lines[index - 1].startswith("# "), name
        assert not re.match(r"# [A-Z_]+=", lines[index - 1]), f"{name} has no comment of its own"


def read_keys(path: Path) -> dict[str, str]:
    """The two key lines of a written .env file."""
    pairs = (line.split("=", 1) for line in path.read_text().splitlines() if "_KEY=" in line)
    return {name: value for name, value in pairs if not name.startswith("#")}


def test_telegram_and_webhook_settings(env: pytest.MonkeyPatch) -> None:
    settings = load_settings()
    assert settings.telegram_bot_token is None  # the CLI works without one
    assert settings.telegram_api_url == "https://api.telegram.org"
    assert settings.webhook_url is None and (settings.web_listen, settings.web_port) == (
        "127.0.0.1",
        8080,
    )
    assert len(settings.secret) == 32  # the HMAC key behind buttons and invitations


@pytest.mark.parametrize(
    ("values", "reason"),
    [
        (
            {"WEBHOOK_URL": "https://bot.example/hook"},
            "WEBHOOK_SECRET: is required with WEBHOOK_URL",
        ),
        (
            {"WEBHOOK_URL": "https://bot.example/hook", "WEBHOOK_SECRET": "has space"},
            "WEBHOOK_SECRET: must be 1-256 characters of A-Z a-z 0-9 _ -",
        ),
        (
            {"WEBHOOK_URL": "ftp://bot.example/hook", "WEBHOOK_SECRET": "ok"},
            "WEBHOOK_URL: must be an http(s) URL",
        ),
        ({"WEB_PORT": "0"}, "WEB_PORT"),
    ],
)
def test_webhook_settings_are_checked(env: pytest.MonkeyPatch, values, reason) -> None:
    assert reason in config_error(env, **values)


@pytest.mark.parametrize(
    ("url", "kept"),
    [
        ("https://po.example.com/", "https://po.example.com"),
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
        ("http://localhost:8080/", "http://localhost:8080"),
        ("http://[::1]:8080", "http://[::1]:8080"),
    ],
)
def test_a_public_url_is_https_or_loopback_http(env: pytest.MonkeyPatch, url, kept) -> None:
    env.setenv("MANZOORI_PUBLIC_URL", url)
    assert load_settings().manzoori_public_url == kept


@pytest.mark.parametrize("url", ["http://po.example.com", "ftp://po.example.com", "https://"])
def test_a_public_url_over_plain_http_elsewhere_is_refused(env: pytest.MonkeyPatch, url) -> None:
    reason = config_error(env, MANZOORI_PUBLIC_URL=url)
    assert "MANZOORI_PUBLIC_URL: must be an https URL (plain http only for localhost" in reason


@pytest.mark.parametrize(
    ("values", "reason"),
    [
        # the stand-in without a public URL at all
        ({"MANZOORI_WEBAPP_SCRIPT": "local"}, "MANZOORI_WEBAPP_SCRIPT: local is only for"),
        # the stand-in on a page the world reaches
        (
            {"MANZOORI_WEBAPP_SCRIPT": "local", "MANZOORI_PUBLIC_URL": "https://po.example"},
            "MANZOORI_WEBAPP_SCRIPT: local is only for a MANZOORI_PUBLIC_URL on localhost",
        ),
        # neither of the two scripts
        ({"MANZOORI_WEBAPP_SCRIPT": "cdn"}, "MANZOORI_WEBAPP_SCRIPT: Input should be"),
        # initData that is never good
        ({"MANZOORI_WEBAPP_MAX_AGE_SECONDS": "0"}, "MANZOORI_WEBAPP_MAX_AGE_SECONDS: Input"),
    ],
)
def test_mini_app_settings_are_checked(env: pytest.MonkeyPatch, values, reason) -> None:
    assert reason in config_error(env, **values)


def test_the_mini_app_loads_telegrams_script_unless_told(env: pytest.MonkeyPatch) -> None:
    settings = load_settings()
    assert settings.manzoori_webapp_script is WebAppScript.TELEGRAM
    assert settings.manzoori_webapp_max_age_seconds == 3600
    env.setenv("MANZOORI_PUBLIC_URL", "http://127.0.0.1:8080")
    env.setenv("MANZOORI_WEBAPP_SCRIPT", "local")
    assert load_settings().manzoori_webapp_script is WebAppScript.LOCAL


def test_the_configured_ladder_and_how_to_turn_it_off(env: pytest.MonkeyPatch) -> None:
    ladder = load_settings().ladder()
    assert ladder is not None
    assert (ladder.remind_after, ladder.escalate_after) == (timedelta(hours=2), timedelta(hours=6))
    assert ladder.before_expiry == timedelta(hours=1) and ladder.digest_at == time(9, 30)
    assert ladder.working_hours == WorkingHours.parse("Mon-Sat 09:00-19:00")
    env.setenv("MANZOORI_ESCALATE_AFTER", "off")
    env.setenv("MANZOORI_DIGEST_AT", "Off")
    fewer = load_settings().ladder()
    assert fewer is not None and fewer.escalate_after is None and fewer.digest_at is None
    env.setenv("MANZOORI_REMIND_AFTER", "off")
    assert load_settings().ladder() is None


@pytest.mark.parametrize(
    ("name", "value", "words"),
    [
        ("MANZOORI_REMIND_AFTER", "2 hours", "is not a duration"),
        ("MANZOORI_BEFORE_EXPIRY", "0s", "no time at all"),
        ("MANZOORI_WORKING_HOURS", "weekdays", "is not working hours"),
        ("MANZOORI_DIGEST_AT", "9.30", "is not a time of day"),
    ],
)
def test_a_bad_ladder_setting_is_named(
    env: pytest.MonkeyPatch, name: str, value: str, words: str
) -> None:
    message = config_error(env, **{name: value})
    assert name in message and words in message


def test_the_mailbox_is_off_without_imap_host_and_described_with_it(
    env: pytest.MonkeyPatch,
) -> None:
    settings = load_settings()
    assert settings.mailbox() is None and settings.mail_journal_bcc is None
    assert settings.reconcile_grace() == timedelta(seconds=900)
    env.setenv("IMAP_HOST", "imap.gmail.com")
    env.setenv("IMAP_USERNAME", "orders@shop.pk")
    env.setenv("IMAP_PASSWORD", "app password")
    env.setenv("IMAP_SENT_FOLDER", "[Gmail]/Sent Mail")
    env.setenv("MAIL_JOURNAL_BCC", "journal@shop.pk")
    settings = load_settings()
    config = settings.mailbox()
    assert config is not None
    assert (config.host, config.port, config.tls.value, config.password) == (
        "imap.gmail.com",
        993,
        "tls",
        "app password",
    )
    assert (config.sent_folder, config.inbox_folder, config.timeout) == (
        "[Gmail]/Sent Mail",
        "INBOX",
        20.0,
    )
    assert settings.mail_journal_bcc == "journal@shop.pk"


@pytest.mark.parametrize(
    ("values", "reason"),
    [
        ({"IMAP_TLS": "ssl"}, "IMAP_TLS"),
        ({"IMAP_PORT": "0"}, "IMAP_PORT"),
        ({"IMAP_TIMEOUT_SECONDS": "0"}, "IMAP_TIMEOUT_SECONDS"),
        ({"MAIL_JOURNAL_BCC": "not an address"}, "MAIL_JOURNAL_BCC: must be one plain ASCII"),
        ({"MANZOORI_RECONCILE_GRACE_SECONDS": "-1"}, "MANZOORI_RECONCILE_GRACE_SECONDS"),
    ],
)
def test_mailbox_settings_are_checked(env: pytest.MonkeyPatch, values, reason) -> None:
    assert reason in config_error(env, **values)


def test_the_data_key_may_hold_several_keys_each_checked(env: pytest.MonkeyPatch) -> None:
    new = Fernet.generate_key().decode()
    env.setenv("MANZOORI_DATA_KEY", f" {new} , {DATA_KEY}")
    assert load_settings().manzoori_data_key.get_secret_value() == f"{new},{DATA_KEY}"
    reason = config_error(env, MANZOORI_DATA_KEY=f"{new},not-a-key")
    assert "MANZOORI_DATA_KEY: key 2 of 2: not 32 bytes of URL-safe base64" in reason
    assert "not-a-key" not in reason  # a secret, even when malformed
    assert "listed twice" in config_error(env, MANZOORI_DATA_KEY=f"{new},{new}")


def test_the_secret_key_may_hold_several_keys_the_first_signs(env: pytest.MonkeyPatch) -> None:
    new = Fernet.generate_key().decode()
    env.setenv("MANZOORI_SECRET_KEY", f"{new},{SECRET_KEY}")
    settings = load_settings()
    assert settings.secret == base64.urlsafe_b64decode(new)
    assert settings.secrets == (settings.secret, base64.urlsafe_b64decode(SECRET_KEY))
    reason = config_error(env, MANZOORI_SECRET_KEY=f"{new},short")
    assert "MANZOORI_SECRET_KEY: key 2 of 2: not 32 bytes" in reason and "short" not in reason

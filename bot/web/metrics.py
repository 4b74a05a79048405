"""Every Prometheus metric manzoori exports, on a registry of its own per application (two
applications in one test process do not collide). Row counts are read at scrape time."""

from __future__ import annotations

from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from bot.mailbox.runner import MailboxCounters
from core.jobs.states import NEEDS_REVIEW
from store.counts import RowCounts

# Seconds: an SMTP send is a few hundred milliseconds, a slow server several seconds.
_SMTP_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
# Seconds: a tap should be answered well within Telegram's few seconds of spinner.
_TAP_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
# Seconds: a sheet parses in a forked worker, well under a second unless it is huge.
_PARSE_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


@dataclass
class Metrics:
    """The registry and its metrics; `text` renders them after `record_rows` has set the
    row-count gauges from a fresh read."""

    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def __post_init__(self) -> None:
        registry = self.registry
        self.jobs = Gauge("manzoori_jobs", "Jobs by state", ["state"], registry=registry)
        self.effects = Gauge(
            "manzoori_outbox_effects", "Outbox effects by status", ["status"], registry=registry
        )
        self.notices = Gauge(
            "manzoori_notices", "Notice rows by status", ["status"], registry=registry
        )
        self.review_queue = Gauge(
            "manzoori_review_queue", "Jobs waiting for manual review (/queue)", registry=registry
        )

        def seconds(name: str, documentation: str, buckets: tuple[float, ...]) -> Histogram:
            return Histogram(name, documentation, buckets=buckets, registry=registry)

        def by_method(name: str, documentation: str) -> Counter:
            return Counter(name, documentation, ["method"], registry=registry)

        self.smtp_send = seconds(
            "manzoori_smtp_send_seconds",
            "Duration of one SMTP send, successful or not",
            _SMTP_BUCKETS,
        )
        self.tap_answer = seconds(
            "manzoori_tap_answer_seconds",
            "From a button tap reaching the handlers to Telegram taking its answer",
            _TAP_BUCKETS,
        )
        self.sheet_parse = seconds(
            "manzoori_sheet_parse_seconds",
            "Duration of one upload's parse in its worker (a sheet or a terms file)",
            _PARSE_BUCKETS,
        )
        self.webhook_updates = Counter(
            "manzoori_webhook_updates",
            "Posts to this front door's webhook, by outcome (queued; refused: no or a wrong "
            "secret; unreadable: not an update, or too large)",
            ["outcome"],
            registry=registry,
        )
        self.telegram_errors = by_method(
            "manzoori_telegram_errors", "Bot API calls that failed, 429s included, by method"
        )
        self.telegram_429s = by_method(
            "manzoori_telegram_rate_limited",
            "Bot API calls answered 429 Too Many Requests, by method",
        )

        self.mailbox = MailboxCounters(
            passes=Counter(
                "manzoori_mailbox_passes",
                "Passes over the buyer's IMAP mailbox, by outcome (ok, or failed)",
                ["outcome"],
                registry=registry,
            ),
            settled=Counter(
                "manzoori_mailbox_settled",
                "Ambiguous sends looked up in the Sent folder, by finding",
                ["finding"],
                registry=registry,
            ),
            replies=Counter(
                "manzoori_mailbox_replies",
                "Inbox messages read, by what became of them (filed on a PO, or left alone)",
                ["fate"],
                registry=registry,
            ),
        )

    def record_rows(self, counts: RowCounts) -> None:
        """Set the row-count gauges to `counts`; states no longer present drop out."""
        for gauge, values in (
            (self.jobs, counts.jobs),
            (self.effects, counts.effects),
            (self.notices, counts.notices),
        ):
            gauge.clear()
            for label, count in values.items():
                gauge.labels(label).set(count)
        self.review_queue.set(sum(counts.jobs.get(state.value, 0) for state in NEEDS_REVIEW))

    def text(self) -> bytes:
        """The Prometheus text exposition of every metric."""
        return generate_latest(self.registry)

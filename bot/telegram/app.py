"""The Telegram front end: thin handlers that parse an update, call one use case, and reply.

Every update first passes `claim`, which records its id: Telegram may deliver an update more
than once, and a repeat is dropped before any handler sees it (an Approve tap's id is recorded
with its decision instead, in the one write the tap makes). A button tap's signed data is
checked before that, so a forged tap costs no database work at all; a stranger (no role, no
invitation in hand) costs one read and no write, and hears from us once per period. If a
handler fails, `release` forgets the claim, so a redelivery is handled. Who the sender is
comes only from the update Telegram signed for us (`effective_user`), never from text in a
message. Updates are handled side by side, fairly (bot.telegram.fairness).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from datetime import timedelta
from functools import partial
from typing import Any

from telegram import Update
from telegram.error import RetryAfter, TelegramError
from telegram.ext import (
    AIORateLimiter,
    Application,
    ApplicationBuilder,
    ApplicationHandlerStop,
    CallbackQueryHandler,
    CommandHandler,
    ContextTypes,
    MessageHandler,
    TypeHandler,
    filters,
)

from bot import logs
from bot.clock import utcnow
from bot.config import Settings
from bot.files.parsing import SheetParser
from bot.telegram.admin_files import COMPANY_FILE, POLICY_FILE
from bot.telegram.calling_off import cancel_command, on_call_off_tap
from bot.telegram.catalogue import new_command
from bot.telegram.company import company_command, company_file
from bot.telegram.context import (
    Deps,
    answer_tap,
    deps_of,
    record_claim,
    roles_of,
    tap_arrived,
    tell_dropped,
    turn_away,
)
from bot.telegram.decisions import (
    NOT_VALID,
    REASON_REPLY,
    claimed_with_decision,
    on_reason,
    on_tap,
)
from bot.telegram.fairness import FairProcessor
from bot.telegram.language import CHOICE, language_command, on_language, speaking
from bot.telegram.orders import export, history, sheet, status
from bot.telegram.pending import on_resend_tap, pending_command
from bot.telegram.people import (
    away,
    back,
    branch,
    group,
    groups,
    help_command,
    invite,
    promote,
    revoke,
    start,
    users,
)
from bot.telegram.policy import policy_command, policy_file
from bot.telegram.queue import on_queue_tap, queue_command
from bot.telegram.transport import AiohttpRequest
from bot.telegram.typed import PATTERN as SUMMARY_TAP
from bot.telegram.typed import on_summary_tap, on_text
from bot.web.metrics import Metrics
from bot.words.i18n import ENGLISH, N_, Translator
from core.approval.signing import Button, verify_button
from core.errors import ConfigError, InvalidToken, StoreBusy
from core.ports import ShellStore

log = logging.getLogger(__name__)


# After a handler failed. True however far it got: a tap that counted does not count twice,
# a sheet sent again returns the POs it made, and nothing here names the internals.
TAP_FAILED = N_(
    "Something went wrong on our side. Try again in a minute; "
    "a tap that already counted will not count twice."
)
MESSAGE_FAILED = N_("Something went wrong on our side. Try again in a minute.")
# After the database stayed busy through every retry (core.errors.StoreBusy): nothing of the
# update was recorded, so saying so is true, and the same tap or message again will count.
TAP_BUSY = N_("Could not record that, please tap again.")
MESSAGE_BUSY = N_("Could not record that, please send it again.")


async def claim(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    """Refuse a forged button before any database work; turn a stranger away without writing
    anything; drop an update already handled (Telegram delivered it again). An Approve tap is
    claimed later, in the transaction that records its decision with its burst's
    (decisions.decide_taps), and a refused one leaves no claim behind."""
    deps, user, query = deps_of(context), update.effective_user, update.callback_query
    logs.handling(update.update_id)  # on every line this update's handlers log
    if query is not None:
        tap_arrived(deps)
    button = None if query is None else _verified(deps, query.data)
    if query is not None and button is None and not CHOICE.match(query.data or ""):
        await answer_tap(query, NOT_VALID)
        raise ApplicationHandlerStop
    if user is None or user.is_bot:
        raise ApplicationHandlerStop  # a channel post, say: nobody to answer, nothing to keep
    if button is not None and claimed_with_decision(button):
        return  # who taps is read with the burst's jobs (decisions.decide_taps), in one read
    roles = await roles_of(deps, user.id)
    if not roles and _redeeming(update) is None:
        await turn_away(deps, update, user)
        raise ApplicationHandlerStop
    async with deps.store.begin() as tx:
        # An invitee's name is kept once their invitation gave a role.
        fresh = await record_claim(tx, update, user, utcnow(), met=bool(roles))
    if not fresh:
        log.info("update %s delivered again; ignored", update.update_id)
        raise ApplicationHandlerStop


def _redeeming(update: Update) -> str | None:
    """The invitation code of a "/start CODE" message, if it is one."""
    words = (update.message.text or "").split() if update.message else []
    return words[1] if len(words) == 2 and words[0] == "/start" else None


async def release(update: object, context: ContextTypes.DEFAULT_TYPE) -> None:
    """After a handler failed: forget its update's claim, so that Telegram's redelivery (or a
    tap made again) is handled instead of dropped as a repeat. Every use case is safe to run
    twice; best effort: if even this fails, the claim expires with the purge."""
    if not isinstance(update, Update):
        return
    try:
        async with deps_of(context).store.begin() as tx:
            await tx.release_update(update.update_id)
    except Exception:  # the store is down or busy: the apology (on_error) still goes out
        log.warning("claim of update %s not released", update.update_id, exc_info=True)


def _verified(deps: Deps, data: str | None) -> Button | None:
    """The button of callback data that carries our tag (compared in constant time)."""
    try:
        return verify_button(deps.settings.secrets, data)
    except InvalidToken:
        return None


async def on_error(update: object, context: ContextTypes.DEFAULT_TYPE) -> None:
    """Log first; then tell the sender it failed, without internals and without claiming what
    was or was not recorded (the failure may come after a decision was committed), except
    for a busy database, whose transaction left nothing: then "please tap again", and the
    update goes no further."""
    update_id = update.update_id if isinstance(update, Update) else None
    log.error("handling update %s failed", update_id, exc_info=context.error)
    if not isinstance(update, Update):
        return  # a job or the updater failed: nobody is waiting for an answer
    busy = isinstance(context.error, StoreBusy)
    tr = ENGLISH if busy else await _speaking_if_possible(context, update)
    try:
        if update.callback_query is not None:
            await update.callback_query.answer(tr(TAP_BUSY if busy else TAP_FAILED))
        elif update.effective_message is not None:
            text = tr(MESSAGE_BUSY if busy else MESSAGE_FAILED)
            await update.effective_message.reply_text(text)
    except TelegramError as error:  # too old a tap, already answered, or Telegram unreachable
        log.info("update %s: the apology was not delivered: %s", update_id, error)
    if busy:
        # Nothing was recorded and the sender was told so: no later handler of this update
        # may now record it after all and make that answer untrue.
        raise ApplicationHandlerStop


async def _speaking_if_possible(context: ContextTypes.DEFAULT_TYPE, update: Update) -> Translator:
    """The sender's language for an apology; English when even that read fails (a busy
    database is apologised for in English without trying: it is the reason for the apology)."""
    user = update.effective_user
    if user is None:
        return ENGLISH
    try:
        return await speaking(deps_of(context), user.id)
    except Exception:  # the store is down: the apology still goes out
        log.warning("language of user %s not read for an apology", user.id, exc_info=True)
        return ENGLISH


async def start_updates(
    app: Application,  # type: ignore[type-arg]
    settings: Settings,
    long_poll: float,
) -> None:
    """Long polling (each getUpdates waiting up to `long_poll` seconds), or, when WEBHOOK_URL
    is set, the webhook registered with Telegram (bot/web serves it); the app must be started."""
    assert app.updater is not None
    if settings.webhook_url is None:
        # Retry start-up calls (deleteWebhook) through a flaky link instead of giving up.
        await app.updater.start_polling(timeout=timedelta(seconds=long_poll), bootstrap_retries=-1)
        return
    assert settings.webhook_secret is not None  # the settings refuse a URL without it
    await app.bot.set_webhook(
        settings.webhook_url, secret_token=settings.webhook_secret.get_secret_value()
    )


class CountingRateLimiter(AIORateLimiter):
    """PTB's rate limiter, counting each Bot API call that fails (and each 429) by method into
    `metrics`: every call but getUpdates passes here, each of its own retries after a 429
    included (telegram.ext.ExtBot._do_post)."""

    def __init__(self, metrics: Metrics, **limits: Any) -> None:
        super().__init__(**limits)
        self._metrics = metrics

    async def process_request(
        self,
        callback: Callable[..., Coroutine[Any, Any, Any]],
        args: Any,
        kwargs: dict[str, Any],
        endpoint: str,
        data: dict[str, Any],
        rate_limit_args: int | None,
    ) -> Any:
        metrics = self._metrics

        async def counted(*call_args: Any, **call_kwargs: Any) -> Any:
            try:
                return await callback(*call_args, **call_kwargs)
            except TelegramError as error:
                metrics.telegram_errors.labels(endpoint).inc()
                if isinstance(error, RetryAfter):
                    metrics.telegram_429s.labels(endpoint).inc()
                raise

        return await super().process_request(counted, args, kwargs, endpoint, data, rate_limit_args)


def _paced(metrics: Metrics) -> AIORateLimiter:
    """PTB's rate limiter at Telegram's 30 messages a second, one at a time every 1/30 s: its
    default bucket lets 30 go at once and then 30 a second more, so a fan-out's first second
    carried up to 60 and drew 429s, each of which stops every send for its retry_after."""
    return CountingRateLimiter(
        metrics, overall_max_rate=1, overall_time_period=1 / 30, max_retries=3
    )


def build_application(
    settings: Settings, store: ShellStore, metrics: Metrics | None = None
) -> Application:  # type: ignore[type-arg]
    """The PTB application, pointed at TELEGRAM_API_URL, with every handler registered; its
    Bot API errors, taps and parses are measured into `metrics` (a registry of its own if
    None)."""
    metrics = metrics if metrics is not None else Metrics()
    token = settings.telegram_bot_token
    if token is None:
        raise ConfigError("TELEGRAM_BOT_TOKEN is required to run the bot")
    url = settings.telegram_api_url.rstrip("/")
    deps = Deps(settings, store, parser=SheetParser(timer=metrics.sheet_parse), metrics=metrics)
    app = (
        ApplicationBuilder()
        .token(token.get_secret_value())
        .base_url(f"{url}/bot")
        .base_file_url(f"{url}/file/bot")
        .rate_limiter(_paced(metrics))
        .request(AiohttpRequest())  # a tenth of httpx's CPU per call (bot.telegram.transport)
        .get_updates_request(AiohttpRequest(pool_size=1))
        # Per person, taps apart (fairness.Shares); what it drops is said (tell_dropped).
        .concurrent_updates(
            FairProcessor(partial(tell_dropped, deps), finished=deps.replies.finished)
        )
        .build()
    )
    app.bot_data["deps"] = deps
    app.add_handler(TypeHandler(Update, claim), group=-1)
    for name, callback in (
        ("start", start),
        ("help", help_command),
        ("invite", invite),
        ("users", users),
        ("promote", promote),
        ("revoke", revoke),
        ("groups", groups),
        ("group", group),
        ("branch", branch),
        ("away", away),
        ("back", back),
        ("status", status),
        ("new", new_command),
        ("history", history),
        ("export", export),
        ("queue", queue_command),
        ("cancel", cancel_command),
        ("pending", pending_command),
        ("policy", policy_command),
        ("company", company_command),
        ("language", language_command),
    ):
        app.add_handler(CommandHandler(name, callback))
    # The review queue's buttons (core.approval.signing: action letter, then "."), before the
    # cards'.
    app.add_handler(CallbackQueryHandler(on_queue_tap, pattern=r"^[sgct]\."))
    # /cancel's confirm card: Confirm, Keep it.
    app.add_handler(CallbackQueryHandler(on_call_off_tap, pattern=r"^[xk]\."))
    # 🔁 on /pending's and the ladder's lists: a request's card again.
    app.add_handler(CallbackQueryHandler(on_resend_tap, pattern=r"^p\."))
    app.add_handler(CallbackQueryHandler(on_language, pattern=CHOICE))
    # A typed request's summary: Submit, Cancel (bot.telegram.typed).
    app.add_handler(CallbackQueryHandler(on_summary_tap, pattern=SUMMARY_TAP))
    app.add_handler(CallbackQueryHandler(on_tap))
    app.add_handler(MessageHandler(REASON_REPLY & ~filters.COMMAND, on_reason))
    app.add_handler(MessageHandler(COMPANY_FILE, company_file))  # before a policy's
    app.add_handler(MessageHandler(POLICY_FILE, policy_file))  # before a sheet's
    app.add_handler(MessageHandler(filters.Document.ALL, sheet))
    # Free text never decides: an approver is shown the buttons that do (telegram.pending); a
    # requester's order lines get a summary with Submit and Cancel (telegram.typed).
    app.add_handler(MessageHandler(filters.TEXT & ~filters.COMMAND, on_text))
    app.add_handler(MessageHandler(filters.ALL, help_command))  # anything else: help
    app.add_error_handler(on_error)
    app.add_error_handler(release)
    return app

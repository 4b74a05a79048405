"""What every Telegram handler shares: the Deps kept in the application's bot_data, replies
that fit Telegram's limit, the roles a sender holds, the claim of an update, and the answers
to a tap, to a stranger and to someone whose updates were dropped."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime
from typing import TypeVar

from prometheus_client import Histogram
from telegram import CallbackQuery, InlineKeyboardMarkup, Update, User
from telegram.error import BadRequest
from telegram.ext import ContextTypes

from bot.config import Settings
from bot.files.parsing import SheetParser
from bot.telegram.cards import MESSAGE_LIMIT
from bot.telegram.errors import classify
from bot.telegram.fairness import OVERRUN_MEMORY, Guards
from bot.telegram.texts import stranger
from bot.web.metrics import Metrics
from bot.words.i18n import N_, Translator, language_of, translator
from core.approval.policies import Role
from core.ports import ShellStore, ShellTx

log = logging.getLogger(__name__)
T = TypeVar("T")

# A stranger's tap is answered in a callback answer (at most 200 characters): short, and it
# says how to get the id an admin needs.
STRANGER_TAP = "You are not registered. Send me /start to get the id your admin needs."
# The answers to updates the fair shares dropped (bot.telegram.fairness): they were not
# handled, and saying so is true.
TAP_DROPPED = N_("Too many taps at once: this one was not counted. Wait a moment, then tap again.")
TOO_MANY = N_(
    "Too many messages at once: I could not take them all. Wait a moment, then send again "
    "the ones I did not answer."
)


class OneThread:
    """The one thread where handlers run pure-Python CPU work off the event loop (a sheet's
    checking and pricing, a Details CSV): core.ports.Offload.

    One, not a pool. Under the GIL more threads add no speed; they only take turns with the
    event loop, and every time the loop wakes (an update, a reply, a COMMIT done) it waited for
    each running one in turn, up to sys.getswitchinterval() apiece: eight sheets checked at
    once held a tap for most of a second. With one, a wake-up waits for one at most, and the
    sheets are checked one after the other, as fast as before in all."""

    def __init__(self) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cpu-work")

    def __call__(self, work: Callable[[], T], /) -> Awaitable[T]:
        return asyncio.get_running_loop().run_in_executor(self._executor, work)


# How long the webhook holds a tap's POST open for the tap's answer (TapReplies): well under
# Telegram's wait for a webhook, and long enough for a decision's commit under a burst.
REPLY_WITHIN = 1.5
# answerCallbackQuery's text limit: a longer answer would be dropped silently in a reply.
TAP_ANSWER_LIMIT = 200


@dataclass
class Waiting:
    """One tap's webhook POST, waiting for the tap's answer."""

    query_id: str
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    call: dict[str, str] | None = None
    closed: bool = False


class TapReplies:
    """Taps answered in the webhook's HTTP response: Telegram executes one Bot API call a
    webhook answers with, as if the bot had sent it, without the round trip from this server to
    Telegram's. The webhook (bot.web.app) holds a tap's POST open for up to REPLY_WITHIN
    seconds; an answer_tap within that time fills the response, a later one goes the ordinary
    way. Both run in one event loop and neither awaits between looking and acting, so each tap
    is answered exactly once. Per process: a tap is handled where its POST arrived."""

    def __init__(self, within: float = REPLY_WITHIN) -> None:
        self.within = within  # seconds a tap's response waits for its answer
        self._waiting: dict[str, Waiting] = {}

    def expect(self, query_id: str) -> Waiting:
        """Hold tap `query_id`'s response open for its answer: called before it is queued."""
        waiting = self._waiting[query_id] = Waiting(query_id)
        return waiting

    async def answer_of(self, waiting: Waiting) -> dict[str, str] | None:
        """Wait up to `within` seconds for the tap's answer (answerCallbackQuery's parameters
        with its "method"), or None: then its handler answers it the ordinary way."""
        try:
            async with asyncio.timeout(self.within):
                await waiting.ready.wait()
        except TimeoutError:
            pass
        finally:
            if self._waiting.get(waiting.query_id) is waiting:  # not a repeat's, posted since
                del self._waiting[waiting.query_id]
            waiting.closed = True
        return waiting.call

    def finished(self, update: object) -> None:
        """The handlers of `update` are done: if it is a tap whose response still waits, that
        response goes now, without an answer (a repeat, ignored; a drop, answered already)."""
        query = update.callback_query if isinstance(update, Update) else None
        waiting = None if query is None else self._waiting.get(query.id)
        if waiting is not None and not waiting.closed:
            waiting.closed = True
            waiting.ready.set()

    def offer(self, query_id: str, text: str) -> bool:
        """Put the answer to tap `query_id` in its webhook response if that is still open."""
        waiting = self._waiting.get(query_id)
        if waiting is None or waiting.closed or len(text) > TAP_ANSWER_LIMIT:
            return False
        method = "answerCallbackQuery"
        waiting.call = {"method": method, "callback_query_id": query_id, "text": text}
        waiting.closed = True  # one answer per tap
        waiting.ready.set()
        return True


@dataclass(frozen=True)
class Deps:
    """The settings, the store, the sheet parser, the CPU-work thread and this process's
    fair-share guards, for every handler."""

    settings: Settings
    store: ShellStore
    # One per application: its semaphore is the cap on parses in flight across all users.
    parser: SheetParser = field(default_factory=SheetParser)
    offload: OneThread = field(default_factory=OneThread)
    guards: Guards = field(default_factory=Guards)
    metrics: Metrics = field(default_factory=Metrics)  # the application's (bot/web/metrics.py)
    replies: TapReplies = field(default_factory=TapReplies)  # taps answered in webhook replies


def deps_of(context: ContextTypes.DEFAULT_TYPE) -> Deps:
    """The shared Deps of the running application."""
    deps = context.application.bot_data["deps"]
    assert isinstance(deps, Deps)
    return deps


def chunks(text: str, limit: int = MESSAGE_LIMIT) -> list[str]:
    """The text in pieces of at most `limit` characters, cut between lines where possible."""
    pieces: list[str] = []
    current = ""
    for line in text.splitlines():
        for start in range(0, max(len(line), 1), limit):  # a line longer than a message is cut
            part = line[start : start + limit]
            candidate = f"{current}\n{part}" if current else part
            if current and len(candidate) > limit:
                pieces.append(current)
                candidate = part
            current = candidate
    return [*pieces, current] if current else pieces


async def reply(update: Update, text: str, markup: InlineKeyboardMarkup | None = None) -> None:
    """Reply to the update's message, in as many messages as the text needs; `markup`, if any,
    under the last."""
    if update.effective_message is not None:
        pieces = chunks(text)
        for n, piece in enumerate(pieces, start=1):
            last = markup if n == len(pieces) else None
            await update.effective_message.reply_text(piece, reply_markup=last)


async def record_claim(
    tx: ShellTx, update: Update, user: User, now: datetime, *, met: bool = True
) -> bool:
    """Record the update as handled, so that Telegram delivering it again is dropped, and
    (with `met`) what its sender is called; False if it was handled before."""
    fresh = await tx.claim_update(update.update_id, now)
    if fresh and met:
        started = bool(update.message and (update.message.text or "").startswith("/start"))
        await tx.met(user.id, user.first_name, now, started=started)
    return fresh


async def roles_of(deps: Deps, user_id: int) -> frozenset[Role]:
    """The user's roles, with admin for MANZOORI_ADMIN_IDS."""
    async with deps.store.reading() as tx:
        return held_roles(deps, user_id, await tx.roles(user_id))


def held_roles(deps: Deps, user_id: int, granted: frozenset[Role]) -> frozenset[Role]:
    """The roles granted in the database, with admin for MANZOORI_ADMIN_IDS."""
    if user_id in deps.settings.manzoori_admin_ids:
        return granted | {Role.ADMIN}
    return granted


async def turn_away(deps: Deps, update: Update, user: User) -> None:
    """The stranger's refusal: to every tap, which is no chat message and costs no share of
    the broadcast limit, while its spinner turns until it is answered; to messages once per
    period (STRANGER_PERIOD) and within the strangers' shared budget (STRANGER_REPLIES), the
    rest dropped unanswered. A flood of strangers costs a read each, no write, few messages."""
    if update.callback_query is not None:
        await answer_tap(update.callback_query, STRANGER_TAP)
        return
    guards, now = deps.guards, time.monotonic()
    if guards.strangers.seen(user.id, now) or not guards.stranger_replies.take(now):
        return
    guards.strangers.note(user.id, now)
    await reply(update, stranger(user.first_name, user.id))


async def tell_dropped(deps: Deps, update: Update, *, first: bool) -> None:
    """What the fair shares say of an update they dropped (fairness.Dropped): a tap is
    answered TAP_DROPPED; of messages, the `first` gets TOO_MANY, or, from a stranger, their
    refusal within its budget. In the sender's language."""
    user = update.effective_user
    if user is None or user.is_bot:
        return
    roles, tr = await _overrun(deps, user.id)
    if update.callback_query is not None:
        await answer_tap(update.callback_query, tr(TAP_DROPPED))
    elif not roles:
        await turn_away(deps, update, user)
    elif first:
        await reply(update, tr(TOO_MANY))


async def _overrun(deps: Deps, user_id: int) -> tuple[frozenset[Role], Translator]:
    """The roles and translator of a sender whose updates were dropped, read once per
    OVERRUN_MEMORY seconds, however many of their updates ask at once: their flood costs
    them, not the database."""
    now, remembered = time.monotonic(), deps.guards.overrun
    known: tuple[float, asyncio.Future[tuple[frozenset[Role], Translator]]] | None
    known = remembered.get(user_id)
    if known is None or known[0] < now - OVERRUN_MEMORY:
        known = (now, asyncio.ensure_future(_roles_and_language(deps, user_id)))
        remembered.put(user_id, known)
    read = known[1]
    try:
        return await asyncio.shield(read)
    except Exception:
        if remembered.get(user_id) is known:  # the next drop reads again
            remembered.put(user_id, (0.0, read))
        raise


async def _roles_and_language(deps: Deps, user_id: int) -> tuple[frozenset[Role], Translator]:
    async with deps.store.reading() as tx:
        roles = held_roles(deps, user_id, await tx.roles(user_id))
        chosen = (await tx.languages([user_id])).get(user_id)
    return roles, translator(language_of(chosen))


# When the tap being handled reached the handlers, the histogram its answer's latency goes to,
# and where its webhook response waits: set by tap_arrived (app.claim, the first handler of
# every update), taken by the first answer_tap. PTB handles each update in a task of its own,
# so taps never share it.
_TAP_ARRIVED: ContextVar[tuple[float, Histogram, TapReplies] | None] = ContextVar(
    "tap_arrived", default=None
)


def tap_arrived(deps: Deps) -> None:
    """Start the clock of the tap this task handles (manzoori_tap_answer_seconds)."""
    _TAP_ARRIVED.set((time.monotonic(), deps.metrics.tap_answer, deps.replies))


async def answer_tap(query: CallbackQuery, text: str) -> None:
    """Answer a tap: in its webhook response while that waits (TapReplies), otherwise through
    the Bot API; a query that is too old already timed out on the phone: nothing to do. The
    first answer of a tap records its latency since tap_arrived."""
    arrived = _TAP_ARRIVED.get()
    _TAP_ARRIVED.set(None)
    if arrived is None or not arrived[2].offer(query.id, text):
        try:
            await query.answer(text)
        except BadRequest as error:  # too old, or answered already: nobody is waiting any more
            log.info("tap not answered: %s", classify(error).detail)
            return
    if arrived is not None:
        started, latency, _ = arrived
        latency.observe(time.monotonic() - started)


async def holding(
    update: Update,
    context: ContextTypes.DEFAULT_TYPE,
    role: Role | frozenset[Role],
    refusal: str,
) -> tuple[Deps, User] | None:
    """The deps and the sender if they hold `role` (or one of the roles); otherwise the
    refusal (an English msgid, marked with bot.words.i18n.N_) is sent in their language, and
    None."""
    deps, user = deps_of(context), update.effective_user
    assert user is not None
    wanted = {role} if isinstance(role, Role) else role
    async with deps.store.reading() as tx:
        held = bool(held_roles(deps, user.id, await tx.roles(user.id)) & wanted)
        chosen = None if held else (await tx.languages([user.id])).get(user.id)
    if held:
        return deps, user
    await reply(update, translator(language_of(chosen))(refusal))
    return None

"""The Bot API emulator in a process of its own, for the benchmarks that run the bot as its own
process (`manzoori run`), as deployed: neither the bot nor the emulator then takes the other's
CPU or event loop.

`python -m bench.emulator_server` prints `READY <port> <token>` once it serves, then answers
one line on stdout for each line on stdin:

    users FIRST COUNT         ->  "ok": users FIRST … FIRST+COUNT-1, who started the bot
    cards FIRST COUNT N TEXT  ->  "ok" once each of them holds exactly N messages with a
                                  button TEXT ("timeout" after PATIENCE seconds)
    tap FIRST COUNT TEXT      ->  "ok": each taps TEXT on their oldest message that has it,
                                  all at once
    answers                   ->  once every tap is answered (or PATIENCE has passed), a JSON
                                  object: "ms", per tap, from the update leaving the emulator
                                  (its getUpdates answer, or its webhook POST) to the answer;
                                  "texts"; "in_reply", how many came in a webhook's answer
"""

from __future__ import annotations

import functools
import json
import sys
import time
from collections.abc import Callable

from bot.dev.botapi import EmulatedUser, Emulator, Message

PATIENCE = 120.0


def _with_button(messages: list[Message], text: str) -> list[Message]:
    """These messages that have an inline button `text`, oldest first."""
    return [
        message
        for message in messages
        if any(
            button.get("text") == text
            for row in (message.reply_markup or {}).get("inline_keyboard", [])
            for button in row
        )
    ]


def _all_hold(users: list[EmulatedUser], many: int, text: str) -> bool:
    return all(len(_with_button(user.messages(), text)) == many for user in users)


def _all_answered(emu: Emulator, queries: list[str]) -> bool:
    return all(emu.callback_answer(query) for query in queries)


def _wait(condition: Callable[[], bool], patience: float = PATIENCE) -> bool:
    """Whether `condition` came true within `patience` seconds (the emulator runs meanwhile,
    in its own thread)."""
    deadline = time.monotonic() + patience
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


def main() -> None:
    """Serve until stdin closes."""
    with Emulator() as emu:
        print(f"READY {emu.port} {emu.token}", flush=True)
        queries: list[str] = []
        for line in sys.stdin:
            command, *args = line.split(maxsplit=3)
            if command == "users":
                first, count = int(args[0]), int(args[1])
                for user_id in range(first, first + count):
                    emu.user(user_id, f"U{user_id}", started=True)
                print("ok", flush=True)
            elif command == "cards":
                first, count, rest = int(args[0]), int(args[1]), args[2].split(maxsplit=1)
                users = [emu.user(u) for u in range(first, first + count)]
                held = _wait(functools.partial(_all_hold, users, int(rest[0]), rest[1].strip()))
                print("ok" if held else "timeout", flush=True)
            elif command == "tap":
                first, count, text = int(args[0]), int(args[1]), args[2].strip()
                users = [emu.user(u) for u in range(first, first + count)]
                cards = [(u, _with_button(u.messages(), text)) for u in users]
                queries = [u.tap(held[0], text) for u, held in cards if held]
                print("ok", flush=True)
            elif command == "answers":
                _wait(functools.partial(_all_answered, emu, queries))
                ms, texts = [], []
                for query_id in queries:
                    query = emu.callback_query(query_id)
                    out = emu.handed_out(query.update_id)
                    if query.answer is not None and out is not None:
                        ms.append((query.answer.at - out) * 1000)
                        texts.append(query.answer.text)
                replied = {
                    c.params.get("callback_query_id")
                    for c in emu.calls_to("answerCallbackQuery")
                    if c.in_reply
                }
                in_reply = sum(q in replied for q in queries)
                untaken = sum(
                    emu.handed_out(emu.callback_query(q).update_id) is None for q in queries
                )
                print(json.dumps({"ms": ms, "texts": texts, "in_reply": in_reply,
                                  "untaken": untaken}), flush=True)  # fmt: skip
            else:
                print(f"unknown command {command!r}", flush=True)


if __name__ == "__main__":
    main()

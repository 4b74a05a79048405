"""The benchmark's SMTP server, in a process of its own, so that the CPU time the bench
measures in its own process is the system's and not the server's.

`python -m bench.smtp_server [--data-delay SECONDS]` runs bot.dev.smtp's sink, prints
`PORT <n>` once it listens, then answers one line on stdout for each line on stdin:

    count   ->  "<accepted messages> <distinct Message-IDs>"
    times   ->  a JSON list of [Subject, time.monotonic() when accepted], one per message
                (the clock is the machine's, so the parent can compare it with its own)
    reset   ->  "ok", after forgetting every message accepted so far
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from dataclasses import dataclass
from types import TracebackType

from bot.dev.smtp import running_sink

# How long the parent waits for the child to say which port it listens on.
START_TIMEOUT_SECONDS = 30.0


def main(argv: list[str] | None = None) -> None:
    """Serve until stdin closes, answering the parent's questions line by line."""
    parser = argparse.ArgumentParser(prog="python -m bench.smtp_server")
    parser.add_argument("--data-delay", type=float, default=0.0, help="seconds before DATA's 250")
    args = parser.parse_args(argv)
    with running_sink(data_delay=args.data_delay) as sink:
        print(f"PORT {sink.port}", flush=True)
        for line in sys.stdin:
            command = line.strip()
            if command == "count":
                distinct = len({str(m["Message-ID"]) for m in list(sink.messages)})
                print(f"{len(sink.messages)} {distinct}", flush=True)
            elif command == "times":
                taken = zip(list(sink.messages), list(sink.accepted_at), strict=False)
                print(json.dumps([[str(m["Subject"]), at] for m, at in taken]), flush=True)
            elif command == "reset":
                sink.messages.clear()
                sink.accepted_at.clear()
                sink.envelopes.clear()
                sink.commands.clear()
                print("ok", flush=True)
            else:
                print(f"unknown command {command!r}", flush=True)


@dataclass(frozen=True)
class Accepted:
    """What the server took: messages, and how many distinct Message-IDs among them."""

    messages: int
    distinct: int


class SinkProcess:
    """The parent's handle on a running `bench.smtp_server` child."""

    def __init__(self, data_delay: float = 0.0, host: str = "127.0.0.1") -> None:
        self.data_delay, self.host, self.port = data_delay, host, 0
        self._proc: asyncio.subprocess.Process | None = None

    async def __aenter__(self) -> SinkProcess:
        """Start the child and learn its port."""
        self._proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bench.smtp_server",
            "--data-delay",
            str(self.data_delay),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        line = await asyncio.wait_for(self._readline(), START_TIMEOUT_SECONDS)
        if not line.startswith("PORT "):
            raise RuntimeError(f"the SMTP server did not start: {line!r}")
        self.port = int(line.split()[1])
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Close the child's stdin, which ends it, and wait for it."""
        proc = self._proc
        if proc is None:
            return
        assert proc.stdin is not None
        proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 10.0)
        except TimeoutError:
            proc.kill()
            await proc.wait()

    @property
    def address(self) -> tuple[str, int]:
        """(host, port) to connect to."""
        return self.host, self.port

    async def accepted(self) -> Accepted:
        """What the server has accepted since the last reset."""
        messages, distinct = (await self._ask("count")).split()
        return Accepted(int(messages), int(distinct))

    async def times(self) -> list[tuple[str, float]]:
        """Each message accepted since the last reset: its Subject, and when (monotonic)."""
        return [(subject, at) for subject, at in json.loads(await self._ask("times"))]

    async def reset(self) -> None:
        """Forget what was accepted, so the next flow's mail is counted alone."""
        if await self._ask("reset") != "ok":
            raise RuntimeError("the SMTP server did not reset")

    async def _ask(self, command: str) -> str:
        proc = self._proc
        assert proc is not None and proc.stdin is not None
        proc.stdin.write(f"{command}\n".encode())
        await proc.stdin.drain()
        return await self._readline()

    async def _readline(self) -> str:
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        line = await proc.stdout.readline()
        if not line:
            raise RuntimeError("the SMTP server exited")
        return line.decode().strip()


if __name__ == "__main__":
    main()

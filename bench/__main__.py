"""`python -m bench [--quick] [--only NAME ...] [--no-write]`: run the benchmarks, print one
table, and write it to docs/benchmarks.md with the machine it ran on."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import importlib.util
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from bench.common import Context, Result
from bench.databases import postgres_url_from_env, reachable
from bench.report import Machine, document, render

ROOT = Path(__file__).resolve().parent.parent
REPORT = ROOT / "docs" / "benchmarks.md"
# Name on the command line -> module; each module's `run(ctx)` gives its rows. The DBOS peer
# (bench.peer) is measured by the lifecycle module, beside the flow it is compared with.
MODULES = {
    "lifecycle": "bench.lifecycle",
    "bot": "bench.bot",
    "process": "bench.bot_process",
    "stack": "bench.stack",
    "documents": "bench.documents",
    "miniapp": "bench.miniapp_page",
    "backups": "bench.backups",
    "growth": "bench.growth",
}

Run = Callable[[Context], Awaitable[list[Result]]]


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a smoke run: small N, seconds")
    parser.add_argument("--only", nargs="+", choices=sorted(MODULES), metavar="NAME")
    parser.add_argument("--no-write", action="store_true", help="print, leave docs/ alone")
    return parser.parse_args(argv)


def _runs(names: list[str] | None) -> dict[str, Run]:
    """The `run` of every module asked for; one not in this tree is skipped unless asked for."""
    runs: dict[str, Run] = {}
    for name, module_name in MODULES.items():
        if names is not None and name not in names:
            continue
        if importlib.util.find_spec(module_name) is None:
            if names is not None:
                raise SystemExit(f"bench: {module_name} is not in this tree")
            print(f"bench: {module_name} is not in this tree; skipped", file=sys.stderr)
            continue
        runs[name] = importlib.import_module(module_name).run
    return runs


async def _postgres_url() -> str | None:
    url = postgres_url_from_env()
    if url is not None and not await reachable(url):
        print("bench: PostgreSQL is not reachable; its rows are left out", file=sys.stderr)
        return None
    return url


async def _bench(args: argparse.Namespace) -> list[Result]:
    runs = _runs(args.only)
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="bench-") as sqlite_dir:
        ctx = Context(quick=args.quick, sqlite_dir=sqlite_dir, postgres_url=await _postgres_url())
        for name, run in runs.items():
            start = time.perf_counter()
            results += await run(ctx)
            print(f"bench: {name} took {time.perf_counter() - start:.0f} s", file=sys.stderr)
    return results


def main(argv: list[str] | None = None) -> None:
    """Run, print, write."""
    args = _parse(argv)
    results = asyncio.run(_bench(args))
    machine = Machine.here(ROOT)
    print(f"{machine.markdown()}\n\n{render(results)}", end="")
    if not args.no_write:
        command = "make bench" if not args.quick else "python -m bench --quick"
        REPORT.write_text(document(results, machine, command), encoding="utf-8")
        print(f"bench: wrote {REPORT.relative_to(ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    main()

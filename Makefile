# Developer entry points; everything runs inside the uv-managed environment from uv.lock.

# `pip install --user` puts uv in ~/.local/bin, which is often not on PATH yet.
export PATH := $(HOME)/.local/bin:$(PATH)

# Some machines set PYTHONDONTWRITEBYTECODE: then every run compiles every module again, and
# pytest rewrites every test module's asserts again (12 of test-fast's seconds on 2 cores).
unexport PYTHONDONTWRITEBYTECODE

# Extra pytest arguments, e.g. `make test PYTEST_ARGS="-k config -x"`.
PYTEST_ARGS ?=

.PHONY: uv install browser fonts imap proxy check test test-fast bench demo clean messages

uv:
	@command -v uv >/dev/null 2>&1 || python3 -m pip install --quiet uv \
		|| python3 -m pip install --quiet --user --break-system-packages uv

# --frozen: install exactly what uv.lock pins; never re-resolve on a developer's machine.
# --all-groups: the dev tools and the benchmark's peer (dbos), so its tests run in `make test`.
install: uv
	uv sync --frozen --all-groups

# Debian's packages among $(1) that are missing, installed: root (CI) directly, others via sudo.
define apt_install
	@missing=$$(for p in $(1); do \
		dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		sudo=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$sudo apt-get install -y $$missing \
		|| { $$sudo apt-get update && $$sudo apt-get install -y $$missing; }; \
	fi
endef

# The Mini App's browser tests drive Debian's Chromium through Playwright (Playwright's own
# browser download is not reachable here), with Noto fonts so that Urdu and the buttons'
# emoji render in screenshots.
BROWSER_PACKAGES = chromium fonts-noto-core fonts-noto-color-emoji
browser:
	$(call apt_install,$(BROWSER_PACKAGES))

# The PO's PDF (bot.documents.pdf) is set in Noto Sans and Noto Nastaliq Urdu from
# fonts-noto-core; its tests rasterise pages with poppler's pdftoppm and read the supplier's
# QR code back with zbar's zbarimg.
FONT_PACKAGES = fonts-noto-core poppler-utils zbar-tools
fonts:
	$(call apt_install,$(FONT_PACKAGES))

# The mailbox's tests (docs/mailbox.md) read a real IMAP server: Debian's Dovecot, started by
# each test on a port of its own (tests/helpers/dovecot.py); the system service is not used.
IMAP_PACKAGES = dovecot-imapd
imap:
	$(call apt_install,$(IMAP_PACKAGES))

# The HTTPS front (deploy/Caddyfile) is tested with Debian's Caddy, started by the test with
# `tls internal` on ports of its own; the system service is not used.
PROXY_PACKAGES = caddy
proxy:
	$(call apt_install,$(PROXY_PACKAGES))

# The quality gates: lint, formatting, types (mypy's files are in pyproject.toml), and the
# layers (import-linter's contracts, [tool.importlinter] in pyproject.toml). CI runs it. ruff
# reads no cache: a cached verdict can pass what a fresh clone's ruff refuses.
check: install
	uv run ruff check --no-cache .
	uv run ruff format --check .
	uv run mypy
	uv run lint-imports

# Every test, with coverage of core/, store/ and bot/ and its floor ([tool.coverage.report]);
# a run given PYTEST_ARGS (a subset, say) reports coverage without holding it to the floor.
# Two runs: every test but the timed ones on both cores (pytest-xdist; each worker has a
# PostgreSQL database of its own, tests/helpers/store.py), then the timed ones, which race the
# clock, one at a time on a quiet machine; the second adds its coverage to the first's. Exit
# status 5 is pytest's "no test selected", which a PYTEST_ARGS subset may leave either run.
test: install browser fonts imap proxy
	uv run pytest -q -m "not timed" -n 2 --cov --cov-report= --cov-fail-under=0 \
		$(PYTEST_ARGS) || [ $$? -eq 5 ]
	uv run pytest -q -m timed --cov --cov-append --cov-report=term:skip-covered \
		$(if $(strip $(PYTEST_ARGS)),--cov-fail-under=0) $(PYTEST_ARGS) || [ $$? -eq 5 ]

# The suite without the slow tests (processes, the state machine), on SQLite only (the
# PostgreSQL variants double it): a loop of under two minutes while working, on both cores
# (pytest-xdist; 165 s on one).
test-fast: install browser fonts imap proxy
	TEST_POSTGRES_URL= uv run pytest -q -m "not slow" -n 2 $(PYTEST_ARGS)

# The benchmarks (bench/): lifecycle throughput, tap to answer, sheet intake and card fan-out
# against their targets; one table, printed and written to docs/benchmarks.md.
# Not part of `make test`: a benchmark is not a timed test. PostgreSQL rows use the `bench`
# database on 127.0.0.1 (BENCH_POSTGRES_URL overrides; empty leaves PostgreSQL out), which the
# bench wipes. `uv run python -m bench --quick` is a smoke run of seconds.
bench: install browser fonts
	uv run python -m bench

demo: install fonts
	uv run manzoori demo

# Leaves .venv alone: removing it would only make the next target reinstall everything.
clean:
	rm -rf .pytest_cache .ruff_cache .mypy_cache .coverage .coverage.* build dist
	find . -path ./.venv -prune -o -type d -name __pycache__ -prune -exec rm -rf {} +

# The bot's messages (docs/development.md, "Languages"): extract them from bot/ into the
# template, then merge it into each language's catalogue; a new message arrives with an empty
# msgstr, which tests/unit/test_i18n.py refuses until it is translated. No build step: bot.words.i18n reads the .po.
messages: install
	uv run pybabel extract -F babel.cfg --no-default-keywords -k tr -k plural:1,2 -k N_ \
		--no-location --sort-output --omit-header -o bot/words/locale/manzoori.pot .
	uv run pybabel update -i bot/words/locale/manzoori.pot -d bot/words/locale -D manzoori \
		--no-fuzzy-matching --ignore-obsolete

# Developer entry points; everything runs inside the uv-managed environment from uv.lock.

# `pip install --user` puts uv in ~/.local/bin, which is often not on PATH yet.
export PATH := $(HOME)/.local/bin:$(PATH)

# Extra pytest arguments, e.g. `make test PYTEST_ARGS="-k config -x"`.
PYTEST_ARGS ?=

.PHONY: uv install test lint demo clean

uv:
	@command -v uv >/dev/null 2>&1 || python3 -m pip install --quiet uv \
		|| python3 -m pip install --quiet --user --break-system-packages uv

# --frozen: install exactly what uv.lock pins; never re-resolve on a developer's machine.
install: uv
	uv sync --frozen

# Every test, with coverage of core/, store/ and bot/ and its floor ([tool.coverage.report]).
test: install
	uv run pytest -q --cov --cov-report=term:skip-covered $(PYTEST_ARGS)

lint: install
	uv run ruff check .
	uv run ruff format --check .
	uv run mypy

demo: install
	uv run manzoori demo

# Leaves .venv alone: removing it would only make the next target reinstall everything.
clean:
	rm -rf .pytest_cache .ruff_cache .mypy_cache .coverage .coverage.* build dist
	find . -path ./.venv -prune -o -type d -name __pycache__ -prune -exec rm -rf {} +

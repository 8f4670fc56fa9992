# groove: `make run` (the main job) and `make test`. Both create .venv and install what they need.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
PIP := $(BIN)/python -m pip

.PHONY: run test lint typecheck unit bench clean

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet -c constraints.txt -e '.[dev]'
	touch $(STAMP)

## run: groove swarm — a coordinator on a fresh data dir and agents learning, rating, searching, injecting
run: $(STAMP)
	$(BIN)/groove swarm --agents $(or $(AGENTS),6) --duration $(or $(DURATION),20)

## test: lint, type-check, then every test (slow integration tests included)
test: lint typecheck unit

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest -q

## bench: the load, search and injection benchmarks (figures in README)
bench: $(STAMP)
	$(BIN)/python -m benchmarks.load
	$(BIN)/python -m benchmarks.search
	$(BIN)/python -m benchmarks.inject

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache

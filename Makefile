# groove: `make run` (the main job) and `make test`. Both create .venv and install what they need.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
PIP := $(BIN)/python -m pip

AGENTS_DIR := coding-agents
AGENTS_STAMP := $(AGENTS_DIR)/node_modules/.installed-stamp

.PHONY: install run test check lint contracts typecheck wheels unit compose-test bench screenshots docs clean

# The dashboard's browser tests drive Debian's Chromium (Playwright's own browser download is not reachable
# here); CHROMIUM=/path/to/chromium uses another one
CHROMIUM ?= /usr/bin/chromium
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)

# pip compiles what it installs one file at a time (about 40 s here); compileall on every core takes 25. A file
# this Python cannot compile (torch ships one written for 3.12) is skipped, as pip skips it.
$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet --no-compile -c constraints.txt -e '.[dev,ray,openai-agents]'
	$(BIN)/python -m compileall -q -j 0 $(VENV)/lib > /dev/null || true
	touch $(STAMP)

## install: .venv with groove, its dependencies and the Ray extra (source .venv/bin/activate to put `groove` on PATH),
## and the pinned Claude Code and Codex in coding-agents/ (the real agents the swarm tests run, offline)
install: $(STAMP) $(AGENTS_STAMP)

# npm ci from the lock file; Claude Code's postinstall (it puts the platform's native binary in place) is run
# by hand, as npm 11 holds back install scripts it was not told to allow
$(AGENTS_STAMP): $(AGENTS_DIR)/package.json $(AGENTS_DIR)/package-lock.json
	cd $(AGENTS_DIR) && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	cd $(AGENTS_DIR)/node_modules/@anthropic-ai/claude-code && node install.cjs
	$(AGENTS_DIR)/node_modules/.bin/claude --version && $(AGENTS_DIR)/node_modules/.bin/codex --version
	touch $(AGENTS_STAMP)

$(CHROMIUM):
	@command -v apt-get >/dev/null || { echo "no $(CHROMIUM): install Chromium, or give make CHROMIUM=/path/to/it"; exit 1; }
	$(SUDO) apt-get install -y -q chromium >/dev/null 2>&1 \
		|| { $(SUDO) apt-get update -q >/dev/null && $(SUDO) apt-get install -y -q chromium >/dev/null; }
	$(CHROMIUM) --version

## run: groove swarm — a coordinator on a fresh data dir and agents learning, rating, searching, injecting;
## it prints the dashboard's URL (groove ui) to watch them
run: $(STAMP)
	$(BIN)/groove swarm --agents $(or $(AGENTS),6) --duration $(or $(DURATION),20)

## test: lint, import contracts, type-check, a wheels-only install, then every test (integration tests included)
# The venv's install (pip, one core), the coding agents' (npm, mostly waiting on the registry) and the wheels-only
# install (pip again, one core; it needs no venv) side by side; then lint and the import contracts; then the
# type-check (one core, 45-50 s from a fresh clone) beside the tests, whose output it does not hold back (it
# prints its one line when done). Measured by /proc/stat in a fresh clone's CI run: the venv's install alone left
# one core idle for a minute, and the type-check alone another 45 s.
test:
	$(MAKE) --no-print-directory -j3 --output-sync=target $(STAMP) $(AGENTS_STAMP) wheels
	$(MAKE) --no-print-directory -j2 --output-sync=target lint contracts
	$(MAKE) --no-print-directory -j2 typecheck unit

## check: the inner loop, well under 2 minutes: lint, import contracts, types, and the tests that start no
## browser, agent or coordinator process of their own
PACKAGES := groove benchmarks tests
FAST_TESTS := tests/protocol tests/coordinator tests/test_house.py tests/test_diagnostics.py tests/ui/test_parts.py \
	tests/cli/test_output.py tests/cli/test_entry.py tests/swarm/test_coding.py tests/integrations/test_install.py \
	tests/test_scripted_model.py tests/integrations/test_plugin.py
check: $(STAMP)
	$(MAKE) --no-print-directory -j3 --output-sync=target lint contracts typecheck
	$(BIN)/pytest -q -n 3 $(FAST_TESTS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

## contracts: which way imports run (import-linter; contracts in pyproject.toml)
contracts: $(STAMP)
	$(BIN)/lint-imports

typecheck: $(STAMP)
	$(BIN)/mypy

## wheels: a fresh venv installs groove and every dependency from wheels alone (no compiler, no headers), and
## groove puts one top-level package there, `groove`, which imports beside the OpenAI Agents SDK's `agents`; that
## default install holds no torch, adds at most 400 MB, and alone finds a learning by meaning (buildtools/leancheck.py)
WHEELS_VENV := .wheels-venv
# built from a copy of the tree's files (tracked, and new ones git does not ignore), as a fresh clone has them: a
# build here would share setuptools' build/ and egg-info with the venv's install, which `make test` runs beside it
WHEELS_SRC := .wheels-src
# The OpenAI Agents SDK's wheel has one package, a top-level `agents` (constraints.txt pins its version): it and
# groove's integration must import side by side.
wheels:
	rm -rf $(WHEELS_VENV) $(WHEELS_VENV).empty-mb $(WHEELS_SRC)
	mkdir $(WHEELS_SRC) && git ls-files -z --cached --others --exclude-standard \
		| tar --null --ignore-failed-read -T - -c | tar -x -C $(WHEELS_SRC)
	$(PYTHON) -m venv $(WHEELS_VENV)
	du -sm $(WHEELS_VENV) | cut -f1 > $(WHEELS_VENV).empty-mb
	$(WHEELS_VENV)/bin/python -m pip install --quiet --no-compile --only-binary=:all: -c constraints.txt ./$(WHEELS_SRC) \
		> $(WHEELS_VENV)/pip.log 2>&1 \
		|| { grep -v '^WARNING: Location' $(WHEELS_VENV)/pip.log; exit 1; }
	cd / && $(CURDIR)/$(WHEELS_VENV)/bin/python -c "import groove.coordinator.net.server, groove.cli.main, usearch; \
		from groove import GrooveClient, AsyncGrooveClient; \
		from groove.ui.app import templates; templates.get_template('board.html')"  # the dashboard's files shipped
	cd / && $(CURDIR)/$(WHEELS_VENV)/bin/python -c "import importlib.metadata as m; \
		tops = sorted({str(f).split('/')[0] for f in m.files('groove') if not str(f).startswith('..')}); \
		assert tops == ['groove', 'groove-' + m.version('groove') + '.dist-info'], tops"  # one top-level name
	cd / && $(CURDIR)/$(WHEELS_VENV)/bin/python $(CURDIR)/buildtools/leancheck.py $$(cat $(CURDIR)/$(WHEELS_VENV).empty-mb)
	$(WHEELS_VENV)/bin/python -m pip install --quiet --no-compile --only-binary=:all: -c constraints.txt \
		openai-agents > $(WHEELS_VENV)/pip.log 2>&1 || { cat $(WHEELS_VENV)/pip.log; exit 1; }
	cd / && $(CURDIR)/$(WHEELS_VENV)/bin/python -c "from agents import Agent, Runner; \
		from groove import GrooveClient, AsyncGrooveClient; from groove.integrations.openai_agents import GrooveRun"
	rm -rf $(WHEELS_VENV) $(WHEELS_VENV).empty-mb $(WHEELS_SRC)

# three workers (pytest-xdist), even on two cores: most tests wait on processes and sockets (measured: 6.6 min
# against 7.6 with two); Ray's tests share one worker. The two kill -9 tortures (`serial`) would starve the other
# tests, so they run after them, side by side: each keeps about one core busy for its 40 s of paced kills
# (getrusage: 34-37 CPU-s in 39-40 s), and one at a time left a core idle (84 s; side by side 54 s, 85 % busy).
# The sources are compiled first: with PYTHONDONTWRITEBYTECODE set (as on CI) each of the hundreds of processes
# the tests start would compile them again (40-70 ms a process).
unit: $(STAMP) $(AGENTS_STAMP) $(CHROMIUM)
	$(BIN)/python -m compileall -q $(PACKAGES)
	GROOVE_CHROMIUM=$(CHROMIUM) $(BIN)/pytest -q -n 3 --dist loadgroup -m "not serial"
	GROOVE_CHROMIUM=$(CHROMIUM) $(BIN)/pytest -q -n 2 -m serial

## compose-test: docker-compose.yml on a real Docker engine (`make test` runs it too): built (its base and wheels
## made locally where no registry answers), up, loaded, stopped and up again with nothing acked lost, backed up and
## restored, taken down; Operations' compose commands run as written. Figures in test-artifacts/compose.json
compose-test: $(STAMP)
	$(BIN)/pytest -q -s tests/deploy/test_compose_engine.py

## screenshots: the dashboard page's pictures (docs/screenshots), taken by its browser tests
screenshots: $(STAMP) $(CHROMIUM)
	GROOVE_CHROMIUM=$(CHROMIUM) GROOVE_SCREENSHOTS=docs/screenshots $(BIN)/pytest -q tests/ui/test_pages.py

## docs: serve the documentation site (docs/, mkdocs.yml) at http://127.0.0.1:8000; `make test` builds it with
## --strict (tests/test_docs.py)
DOCS_ADDR ?= 127.0.0.1:8000
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve -a $(DOCS_ADDR)

## bench: the load, search and injection benchmarks (figures in docs/performance.md)
bench: $(STAMP)
	$(BIN)/python -m benchmarks.load
	$(BIN)/python -m benchmarks.search
	$(BIN)/python -m benchmarks.inject

clean:
	rm -rf $(VENV) $(WHEELS_VENV) $(WHEELS_SRC) $(AGENTS_DIR)/node_modules .pytest_cache .mypy_cache .ruff_cache test-artifacts site \
		buildtools/wheelhouse docker-compose.local.yml

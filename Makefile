# gradledger: the whole set-up is `make demo` or `make test` on a fresh clone.
# Every target is idempotent: set-up steps re-run only when their inputs change.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
CONTRACTS := contracts
FORGE := $(CONTRACTS)/node_modules/.bin/forge
VENV_STAMP := $(VENV)/.installed
NPM_STAMP := $(CONTRACTS)/node_modules/.installed
BUILD_STAMP := $(CONTRACTS)/out/.built
SOLIDITY := $(shell find $(CONTRACTS)/src $(CONTRACTS)/test $(CONTRACTS)/script -name '*.sol' 2>/dev/null)

.PHONY: setup demo test lint pytest forge-test vectors bench clean browser

setup: $(VENV_STAMP) $(NPM_STAMP) $(BUILD_STAMP) browser

# torch is pinned to the CPU build (2.13.0) and installed first, so nothing pulls a CUDA build.
$(VENV_STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

# anvil, forge, cast, solc (solcjs), OpenZeppelin and forge-std, pinned in package-lock.json.
# Install scripts are not needed: the platform binaries ship inside the packages.
# `npm install --no-save` rather than `npm ci`: the lock lists the foundry binaries of other
# platforms as optional dependencies the registry mirror here does not carry, which `npm ci`
# refuses; `--no-save` still installs exactly the locked versions and never rewrites the lock.
$(NPM_STAMP): $(CONTRACTS)/package.json $(CONTRACTS)/package-lock.json
	cd $(CONTRACTS) && npm install --no-save --ignore-scripts --no-audit --no-fund
	touch $@

# Compile the contracts once (the npm compiler takes a while); forge's cache makes later builds instant.
$(BUILD_STAMP): $(NPM_STAMP) $(SOLIDITY) $(CONTRACTS)/foundry.toml
	cd $(CONTRACTS) && ./node_modules/.bin/forge build
	touch $@

# Headless Chromium renders the audit's HTML report in the tests (tests/auditor); installed from the
# distribution's packages when missing (Debian/Ubuntu: the `chromium` package).
browser:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || { \
		SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
		$$SUDO apt-get update && $$SUDO apt-get install -y chromium; }

demo: setup
	$(VENV)/bin/gradledger demo

test: setup lint pytest forge-test

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

pytest: setup
	$(VENV)/bin/pytest -q

forge-test: setup
	cd $(CONTRACTS) && ./node_modules/.bin/forge test

vectors: setup
	$(PY) -m tests.vectors.generate

bench: setup
	$(PY) bench/lsh.py

clean:
	rm -rf $(VENV) $(CONTRACTS)/node_modules $(CONTRACTS)/out $(CONTRACTS)/cache

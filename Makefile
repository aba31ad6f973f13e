# Two commands do all set-up: `make demo` and `make test`. Both create or reuse .venv.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export PREFECT_SERVER_ANALYTICS_ENABLED := false
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: demo venv test test-fast bench clean system-deps

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

venv: $(STAMP)

# What the tests need from the system: headless Chromium renders `memoir report` (Debian's package).
# Installed when missing (with sudo when not root); where that cannot work, one line says what to do.
system-deps:
	@command -v chromium >/dev/null || command -v chromium-browser >/dev/null || { \
	  SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  if command -v apt-get >/dev/null; then \
	    echo "installing chromium (Debian package) for the report tests"; \
	    $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; \
	  fi; \
	  command -v chromium >/dev/null || command -v chromium-browser >/dev/null || { \
	    echo "make test needs a headless Chromium: install your system's 'chromium' package, then run make test again" >&2; \
	    exit 1; }; }

demo: $(STAMP)
	$(BIN)/memoir demo

# Two workers, one test file each at a time (module fixtures are built once), the longest files first
# (tests/conftest.py LONGEST_FIRST; --no-loadscope-reorder keeps that order). TEST_WORKERS=0: one process.
TEST_WORKERS ?= 2
PYTEST_WORKERS = $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder)

test: $(STAMP) system-deps
	$(BIN)/python -m pytest -q $(PYTEST_WORKERS)

test-fast: $(STAMP)
	$(BIN)/python -m pytest -q $(PYTEST_WORKERS) -m "not slow"

# Issue 26's table (ingest, memory, session length, one huge line), memoir beside its baseline.
bench: $(STAMP)
	$(BIN)/python -m bench.speed

clean:
	rm -rf $(VENV) build *.egg-info

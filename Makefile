# Two commands do all set-up: `make demo` and `make test`. Both create or reuse .venv.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export PREFECT_SERVER_ANALYTICS_ENABLED := false
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: demo test test-fast bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/memoir demo

test: $(STAMP)
	$(BIN)/python -m pytest -q

test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -m "not slow"

# Issue 26's table (ingest, memory, session length, one huge line), memoir beside its baseline.
bench: $(STAMP)
	$(BIN)/python -m bench.speed

clean:
	rm -rf $(VENV) build *.egg-info

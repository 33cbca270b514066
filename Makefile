# `make demo` and `make test` work on a fresh machine with only Python 3.10+.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: demo test lint typecheck bench bench-compare clean

$(VENV)/.installed: pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet -e .
	@touch $@

$(VENV)/.installed-dev: $(VENV)/.installed pyproject.toml
	$(PY) -m pip install --quiet -e '.[dev]'
	@touch $@

demo: $(VENV)/.installed
	$(VENV)/bin/graph-agent demo

# The whole suite, then the linters: ruff and mypy must stay clean too.
test: $(VENV)/.installed-dev
	$(PY) -m pytest
	$(VENV)/bin/ruff check graph_agent checkpoint hooks tests examples
	$(VENV)/bin/ruff format --check graph_agent checkpoint hooks tests examples
	$(VENV)/bin/mypy

lint: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check graph_agent checkpoint hooks tests examples
	$(VENV)/bin/ruff format --check graph_agent checkpoint hooks tests examples

typecheck: $(VENV)/.installed-dev
	$(VENV)/bin/mypy

# Benchmarks (shared/bench/WORKLOADS.md): ours alone, then beside LangGraph on this machine.
PEER_VENV ?= .venv-peer
SHARED_BENCH ?= ../shared/bench

bench: $(VENV)/.installed
	$(PY) benchmarks/run.py

$(PEER_VENV)/.installed: $(SHARED_BENCH)/requirements-peer.txt
	@test -x $(PEER_VENV)/bin/python || $(PYTHON) -m venv $(PEER_VENV)
	$(PEER_VENV)/bin/python -m pip install --quiet -r $(SHARED_BENCH)/requirements-peer.txt
	@touch $@

bench-compare: $(VENV)/.installed $(PEER_VENV)/.installed
	SHARED_BENCH=$(SHARED_BENCH) $(PY) benchmarks/compare.py --peer-python $(PEER_VENV)/bin/python

clean:
	rm -rf $(VENV) $(PEER_VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache

# `make demo` and `make test` work on a fresh machine with only Python 3.10+.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: demo serve-demo test test-mcp1 lint typecheck bench bench-compare clean

# Editable installs in setuptools' "compat" mode: a .pth file puts the checkout on sys.path,
# which type checkers read, so mypy or pyright run on a file anywhere finds graph_agent,
# checkpoint and hooks (tests/test_editable_install.py). The default mode installs an
# import hook instead, which only the interpreter sees: mypy then says "Cannot find
# implementation or library stub". ("strict" mode would be seen too, but it links the files
# that exist at install time: a module added later is missing until the next install.)
# --config-settings needs pip 22.1 or later, hence the upgrade of an older pip first.
EDITABLE := --config-settings editable_mode=compat

$(VENV)/.installed: pyproject.toml Makefile
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet 'pip>=22.1'
	$(PY) -m pip install --quiet -e . $(EDITABLE)
	@touch $@

# 'mcp>=2': the suite tests the MCP SDK's current major; pip would keep a 1.x already
# installed, which the extra still admits (test-mcp1 below tests that one).
$(VENV)/.installed-dev: $(VENV)/.installed pyproject.toml Makefile
	$(PY) -m pip install --quiet -e '.[dev,mcp,otel,hiredis,server,queue,vectors,a2a,agui]' 'mcp>=2' $(EDITABLE)
	@touch $@

# The benchmarks measure the Redis saver as docs/redis.md recommends it: with hiredis. W15
# serves an agent (extra 'server') and drives it with langgraph-sdk (requirements-bench.txt).
$(VENV)/.installed-bench: $(VENV)/.installed pyproject.toml Makefile benchmarks/requirements-bench.txt
	$(PY) -m pip install --quiet -e '.[hiredis,server,queue,vectors]' $(EDITABLE)
	$(PY) -m pip install --quiet -r benchmarks/requirements-bench.txt
	@touch $@

demo: $(VENV)/.installed
	$(VENV)/bin/graph-agent demo

# The demo agent served over HTTP (the Agent Protocol; extra 'server') on
# http://127.0.0.1:8123, threads in memory; Ctrl-C stops it.
$(VENV)/.installed-server: $(VENV)/.installed pyproject.toml Makefile
	$(PY) -m pip install --quiet -e '.[server]' $(EDITABLE)
	@touch $@

serve-demo: $(VENV)/.installed-server
	$(VENV)/bin/graph-agent serve graph_agent.cli:demo_agent --saver memory

# The whole suite, then the linters: ruff and mypy must stay clean too. The JS tests' npm
# packages (tests/server/js, tests/server/usestream and tests/server/agui-js, each pinned by
# its lockfile) are installed once in a cache where npm is there (.ci/npm-cached; .ci/run
# installs Node.js): without npm those tests skip and say so.
test: $(VENV)/.installed-dev
	LANGGRAPH_SDK_JS="$${LANGGRAPH_SDK_JS:-$$(.ci/npm-cached tests/server/js js-client)}" \
	USESTREAM_JS="$${USESTREAM_JS:-$$(.ci/npm-cached tests/server/usestream usestream)}" \
	AGUI_JS="$${AGUI_JS:-$$(.ci/npm-cached tests/server/agui-js agui-js)}" \
	$(PY) -m pytest
	$(VENV)/bin/ruff check graph_agent checkpoint hooks tests examples
	$(VENV)/bin/ruff format --check graph_agent checkpoint hooks tests examples
	$(VENV)/bin/mypy

# graph_agent.mcp runs on the SDK's 1.x too (docs/mcp.md): its tests on the newest 1.x, in a
# venv of their own inside $(VENV). `make test-mcp1 MCP1=mcp==1.22.0` tries the oldest 1.x we
# support. .ci/run runs it after `make test`.
MCP1 ?= mcp<2
MCP1_VENV ?= $(VENV)/mcp1

test-mcp1:
	@test -x $(MCP1_VENV)/bin/python || $(PYTHON) -m venv $(MCP1_VENV)
	$(MCP1_VENV)/bin/python -m pip install --quiet 'pip>=22.1'
	$(MCP1_VENV)/bin/python -m pip install --quiet -e '.[dev,mcp]' $(EDITABLE)
	$(MCP1_VENV)/bin/python -m pip install --quiet --upgrade '$(MCP1)'
	GRAPH_AGENT_TEST_MCP_MAJOR=1 $(MCP1_VENV)/bin/python -m pytest tests/mcp

lint: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check graph_agent checkpoint hooks tests examples
	$(VENV)/bin/ruff format --check graph_agent checkpoint hooks tests examples

typecheck: $(VENV)/.installed-dev
	$(VENV)/bin/mypy

# Benchmarks (benchmarks/WORKLOADS.md): ours alone, then beside LangGraph on this machine.
# LangGraph runs in its own venv, pinned by benchmarks/requirements-peer.txt (from PyPI), with
# langgraph-cli[inmem] for W15's `langgraph dev` (langgraph-api: Python 3.11 or later).
PEER_VENV ?= .venv-peer

bench: $(VENV)/.installed-bench
	$(PY) benchmarks/run.py

$(PEER_VENV)/.installed: benchmarks/requirements-peer.txt
	@test -x $(PEER_VENV)/bin/python || $(PYTHON) -m venv $(PEER_VENV)
	$(PEER_VENV)/bin/python -m pip install --quiet -r benchmarks/requirements-peer.txt
	@touch $@

bench-compare: $(VENV)/.installed-bench $(PEER_VENV)/.installed
	$(PY) benchmarks/compare.py --peer-python $(PEER_VENV)/bin/python

clean:
	rm -rf $(VENV) $(PEER_VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache

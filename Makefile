# The two commands a newcomer needs: `make demo` and `make test`. Everything else is their parts.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# Downloads and builds (Kafka jars, the collector binary, helm) are cached outside the work tree,
# in $RAGTRACE_CACHE (default ~/.cache/ragtrace; scripts/README.md). It is not exported from here:
# the services under test would report it as an unknown RAGTRACE_* setting.

.PHONY: demo test test-unit test-e2e test-pythons provision phoenix haystack2 openlit agents node venv bench lint clean config-docs

# constraints.txt: the versions the suite was verified with (pip alone backtracks for many
# minutes over the instrumentor packages of the dialects extra).
# Two distributions: ragtrace (the SDK, the evaluation core, the offline commands) at the root and
# ragtrace-consumers (the service) in consumers/.
$(VENV)/.installed: pyproject.toml consumers/pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c constraints.txt -e '.[dev]' -e './consumers[dialects]'
	touch $@

venv: $(VENV)/.installed

## Install (once, cached) every real service the end-to-end tests start: Kafka, Redis,
## Prometheus, the OpenTelemetry Collector, helm.
provision:
	scripts/provision.sh

## Arize Phoenix for the Phoenix sink's test, in its own cached virtualenv (heavy pins).
phoenix:
	scripts/phoenix_venv.sh >/dev/null

## haystack-ai 2.x for the Haystack dialect test, in its own cached virtualenv (.venv has 3.x).
haystack2:
	scripts/haystack2_venv.sh >/dev/null

## OpenLIT for its dialect test, in its own cached virtualenv (it pins anthropic<1).
openlit:
	scripts/openlit_venv.sh >/dev/null

## Pydantic AI, the OpenAI Agents SDK, LangGraph and MLflow Tracing for the agent dialect tests, in
## one cached virtualenv of their own (openai 3.x, langchain-core 1.x).
agents:
	scripts/agents_venv.sh >/dev/null

## The npm packages of the Node dialect tests (LangChain.js, the Vercel AI SDK 5 and 6, the
## standard OTLP exporters), pinned by tests/dialects/node/package-lock.json, cached (npm ci).
node:
	scripts/node_deps.sh >/dev/null

## The README's first command: the embedded evaluator on a bundled RAG app.
demo: venv
	$(VENV)/bin/ragtrace demo

## The whole suite, unit and end-to-end, provisioning what it needs.
test: venv provision phoenix haystack2 openlit agents node
	$(PY) -m pytest tests

test-unit: venv
	$(PY) -m pytest tests/unit

## The unit tests (a documented subset) on the other supported Pythons, 3.10, 3.12 and 3.13, each
## in its own uv virtualenv (scripts/test_pythons.sh).
test-pythons: venv
	scripts/test_pythons.sh

test-e2e: venv provision
	$(PY) -m pytest tests/e2e

bench: venv provision
	$(PY) bench/run_all.py

## The example consumer configuration, the chart schema's consumer.config section and
## docs/configuration.md, generated from the settings models (a unit test checks they are current).
config-docs: venv
	$(PY) scripts/gen_config.py

LINTED := ragtrace consumers tests bench scripts

## ruff's chosen rules, its formatter (check only) and mypy --strict over every package (the
## files and settings are in pyproject.toml).
lint: venv
	$(VENV)/bin/ruff check $(LINTED)
	$(VENV)/bin/ruff format --check $(LINTED)
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) .venv-py3.* build *.egg-info

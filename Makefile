# One venv, one set of targets: the README, CI (.ci/run) and developers use the same ones.
PYTHON ?= python3
VENV ?= .venv
# The broker's port, as infra/kafka/kafka.sh reads it (KAFKA_PORT=9330 make bench-peer: another broker).
KAFKA_PORT ?= 9092
BIN := $(VENV)/bin
# The demo needs the package alone; the tests add the development tools and the framework adapters.
RUN_STAMP := $(VENV)/.installed
STAMP := $(VENV)/.installed-dev
PIP := $(BIN)/pip install --quiet --disable-pip-version-check

.PHONY: demo install test lint typecheck unit integration e2e kafka-up kafka-down kafka-wipe registry-up registry-down bench bench-history bench-ingest bench-kafka bench-peer bench-results docs docs-serve clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(RUN_STAMP): pyproject.toml | $(BIN)/python
	$(PIP) -e .
	touch $(RUN_STAMP)

$(STAMP): pyproject.toml | $(BIN)/python
	$(PIP) -e '.[dev]'
	touch $(RUN_STAMP) $(STAMP)

install: $(STAMP)

## The README's first command: install the package (not the development tools), then run the field notes'
## story on the embedded runtime.
demo: $(RUN_STAMP)
	$(BIN)/agenttwin demo

## The README's second command: install, then lint, type-check and run every test tier.
test: install lint typecheck
	$(BIN)/pytest -q tests

lint: install
	$(BIN)/ruff check .

typecheck: install
	$(BIN)/mypy

unit: install
	$(BIN)/pytest -q tests/unit

integration: install
	$(BIN)/pytest -q tests/integration

e2e: install
	$(BIN)/pytest -q tests/e2e

## Benchmarks (not timed tests): each figure beside a raw baseline measured in the same run, the load
## average beside each, and a JSON copy under benchmarks/results/.
bench: install
	$(BIN)/python benchmarks/bench_pipeline.py

## 50 `evaluate` calls on one data directory: does a call cost its own work or the history before it?
bench-history: install
	$(BIN)/python benchmarks/bench_history.py --calls 50

## Loopback load test of trace ingestion (60 s; load from benchmarks/loadgen.py's client processes) beside
## the raw decode + append and Kafka produce ceilings of this machine.
bench-ingest: install kafka-up
	$(BIN)/python benchmarks/bench_ingest.py --kafka 127.0.0.1:$(KAFKA_PORT)

## OTLP -> durable on Kafka, ours beside the OpenTelemetry Collector (built once from Go modules, cached in
## ~/.cache/agenttwin), same broker, same load: prints ours / collector. PEER_ARGS="--rounds 2 --seconds 60".
bench-peer: install kafka-up
	$(BIN)/python benchmarks/bench_peer.py --kafka 127.0.0.1:$(KAFKA_PORT) $(PEER_ARGS)

## End-to-end events/s on Kafka (produce -> processors -> ClickHouse) beside the raw ceiling of the same run.
bench-kafka: install kafka-up
	$(BIN)/python benchmarks/bench_kafka.py --kafka 127.0.0.1:$(KAFKA_PORT)

## Ingest soak (10 min): spans/s, alert latency p50/p99 and RSS per minute beside the raw decode + append baseline.
## Kafka: make bench-soak SOAK_ARGS="--kafka 127.0.0.1:9092"; shorter: SOAK_ARGS="--minutes 2"; a fixed
## offered rate: SOAK_ARGS="--rate 3000".
.PHONY: bench-soak
bench-soak: install
	$(BIN)/python benchmarks/bench_soak.py $(SOAK_ARGS)

## The documentation site: build it (as the tests do, --strict) or serve it with live reload on 127.0.0.1:8000.
docs: install
	NO_MKDOCS_2_WARNING=1 DISABLE_MKDOCS_2_WARNING=true $(BIN)/mkdocs build --strict

docs-serve: install
	NO_MKDOCS_2_WARNING=1 DISABLE_MKDOCS_2_WARNING=true $(BIN)/mkdocs serve

## docs/performance.md again from benchmarks/results/*.json (each benchmark does this after writing its file).
bench-results:
	$(BIN)/python benchmarks/render_results.py

kafka-up:
	bash infra/kafka/kafka.sh up

kafka-down:
	bash infra/kafka/kafka.sh down

kafka-wipe:
	bash infra/kafka/kafka.sh wipe

## A Confluent-compatible schema registry (Apicurio Registry from Maven Central) for --wire confluent.
registry-up:
	bash infra/registry/registry.sh up

registry-down:
	bash infra/registry/registry.sh down

clean:
	rm -rf $(VENV) build dist *.egg-info .mypy_cache .ruff_cache .pytest_cache

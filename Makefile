# The two commands: `make run` (a local cluster with a demo topic) and `make test` (`make lint` first).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: run lint test chaos fuzz sim hosts bench-peers etcd kcat faketime chromium kafkajs clean

# setuptools explains editable installs in a banner on every install, and pip warns about every index
# location this machine names but lacks (-qq keeps errors only): the one line per step says enough.
QUIET_INSTALL := PYTHONWARNINGS="ignore:Editable installation"

$(BIN)/python:
	@echo "==> creating $(VENV) with $(PYTHON)"
	@$(PYTHON) -m venv $(VENV)
	@$(BIN)/pip install -qq --upgrade pip

# `examples`: the Kafka client and the throwaway CA the README and docs/ use (tests/unit/test_doc_blocks.py
# checks every example imports only this, or an extra its own page tells the reader to add).
$(VENV)/.installed-run: pyproject.toml | $(BIN)/python
	@echo "==> installing highwater and the clients its examples use into $(VENV) (a minute the first time)"
	@$(QUIET_INSTALL) $(BIN)/pip install -qq -e '.[fast,examples]'
	@touch $@

$(VENV)/.installed-bench: pyproject.toml | $(BIN)/python
	@echo "==> installing highwater with its benchmark dependencies into $(VENV)"
	@$(QUIET_INSTALL) $(BIN)/pip install -qq -e '.[fast,bench]'
	@touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	@echo "==> installing highwater with its test dependencies into $(VENV)"
	@$(QUIET_INSTALL) $(BIN)/pip install -qq -e '.[fast,test]'
	@touch $@

etcd:
	@command -v etcd >/dev/null 2>&1 && command -v etcdctl >/dev/null 2>&1 || { \
		echo "installing etcd (Debian's etcd-server and etcd-client) for the metadata store tests"; \
		$(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq etcd-server etcd-client >/dev/null; }
	@etcd --version | head -1

kcat:
	@command -v kcat >/dev/null 2>&1 || { \
		echo "installing kcat (Debian's kcat) for the Kafka-client tests"; \
		$(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq kcat >/dev/null; }
	@kcat -V | head -1

# kafkajs (from npm, under .venv so `make clean` removes it) runs on Debian's Node for the Kafka-client tests.
KAFKAJS := $(VENV)/kafkajs/node_modules/kafkajs/package.json
kafkajs: $(KAFKAJS)
$(KAFKAJS): | $(BIN)/python
	@command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || { \
		echo "installing Node (Debian's nodejs, npm) for the kafkajs tests"; \
		$(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq nodejs npm >/dev/null; }
	@echo "==> installing kafkajs 2.2.4 into $(VENV)/kafkajs"
	@npm install --silent --no-audit --no-fund --prefix $(VENV)/kafkajs kafkajs@2.2.4

# The host tier sets a broker's clock off with libfaketime (Debian's faketime).
faketime:
	@command -v faketime >/dev/null 2>&1 || { \
		echo "installing faketime (Debian's faketime) for the host tier's clock-skew scenario"; \
		$(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq faketime >/dev/null; }

# The web console's browser tests drive Debian's Chromium through Playwright (never a downloaded browser).
chromium:
	@test -x /usr/bin/chromium || { \
		echo "installing chromium (Debian's chromium, chromium-driver) for the web console's browser tests"; \
		$(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq chromium chromium-driver >/dev/null; }
	@/usr/bin/chromium --version 2>/dev/null | head -1

run: $(VENV)/.installed-run
	@echo "==> starting a 3-broker cluster on 127.0.0.1:9092-9094 (Kafka listeners on 19092-19094)"
	@$(BIN)/highwater dev --dir .highwater-dev --brokers 3 --base-port 9092

# Static checks, configured in pyproject.toml: lint rules, formatting, types.
lint: $(VENV)/.installed-test
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# Most tests wait on timers, not on the CPU: several workers overlap those waits.
# The sources are compiled once first: the suite starts hundreds of broker and CLI
# processes, and where PYTHONDONTWRITEBYTECODE is set each would compile them again.
# Likewise pytest's rewritten test modules (its assertion messages): one collection,
# beside lint, caches them, or each of the six workers would rewrite all of them
# (about 7 s of CPU each).
# The Spark tests run after the rest, on two workers that never run two JVMs at once:
# Spark gives its Python workers a fixed 10 s to connect back, which they miss on a
# machine shared with the broker-heavy workers of the first phase (tests/conftest.py).
TEST_WORKERS ?= 4
test: $(VENV)/.installed-test etcd kcat faketime chromium kafkajs
	$(BIN)/python -m compileall -q -j 0 broker producer consumer spark_connector config tests
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest --collect-only -q -p no:cacheprovider > /dev/null & \
		$(MAKE) --no-print-directory lint; lint=$$?; wait $$!; exit $$lint
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadgroup -m "not spark" --durations=15
	$(BIN)/python -m pytest -n 2 --dist loadgroup -m spark --durations=5

# The chaos tier alone, long: make chaos SEED=1234 DURATION=600 (seconds of random faults).
SEED ?=
DURATION ?= 600
chaos: $(VENV)/.installed-test
	$(BIN)/python -m pytest tests/chaos -p no:cacheprovider -s --chaos-seed $(or $(SEED),random) \
		--chaos-duration-s $(DURATION) --timeout $$(( $(DURATION) * 2 + 600 )) -o faulthandler_timeout=0

# The seeded simulation, long: make sim SEEDS=50 STEPS=20000 (random seeds; a failure prints its replay).
SEEDS ?= 20
STEPS ?= 10000
sim: $(VENV)/.installed-test
	$(BIN)/python -m pytest tests/simulation -p no:cacheprovider -s -q -k test_replicas_never_diverge \
		--seeds $(SEEDS) --steps $(STEPS) --timeout $$(( $(STEPS) / 10 + 300 )) -o faulthandler_timeout=0

# The fuzz tier alone, long: make fuzz EXAMPLES=200 (schemathesis examples per API operation).
EXAMPLES ?= 200
fuzz: $(VENV)/.installed-test
	$(BIN)/python -m pytest tests/fuzz -p no:cacheprovider -s --fuzz-examples $(EXAMPLES) \
		--timeout $$(( $(EXAMPLES) * 30 + 600 )) -o faulthandler_timeout=0

# The host tier alone, long: make hosts RUNS=5 (every scenario, RUNS times over; root only, as in CI).
RUNS ?= 3
hosts: $(VENV)/.installed-test etcd faketime
	@for run in $$(seq $(RUNS)); do \
		echo "==> host tier, run $$run of $(RUNS)"; \
		$(BIN)/python -m pytest tests/hosts -p no:cacheprovider -s -q || exit 1; \
	done

# A lone acknowledged write next to NATS JetStream R3 and Redis WAIT (Debian's servers, installed on
# demand), in interleaved rounds; the table goes into docs/performance.md.
bench-peers: $(VENV)/.installed-bench
	@command -v nats-server >/dev/null 2>&1 && command -v redis-server >/dev/null 2>&1 || { \
		echo "installing nats-server and redis-server (Debian's) for highwater bench peers"; \
		$(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq nats-server redis-server >/dev/null; }
	$(BIN)/highwater bench peers --write-doc docs/performance.md

clean:
	rm -rf $(VENV) .highwater-dev .pytest_cache .mypy_cache .ruff_cache

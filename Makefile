# The two entry points of a fresh checkout: `make demo` and `make test`.
# Both create the virtual environment on first use (Python 3.11+ is the only prerequisite).

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

# Every test starts tablectl processes (daemons, simulators) by the hundred: with bytecode caching
# off in the environment each of them compiles the project's modules again (a fifth of its start).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: demo test test-busy lint typecheck pytest package-check mutation bench dist clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/tablectl demo $(DEMO_ARGS)

test: lint typecheck pytest

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

pytest: $(STAMP)
	$(BIN)/pytest $(PYTEST_ARGS)

# The suite with every core kept busy by a CPU hog: a test that passes only on an idle machine
# depends on timing it cannot control. BUSY_RUNS=5 runs it five times in a row, stopping at the
# first failure; PYTEST_ARGS picks the tests (e.g. PYTEST_ARGS="tests/integration").
BUSY_RUNS ?= 1
test-busy: $(STAMP)
	$(BIN)/python tests/busy.py --runs $(BUSY_RUNS) -- $(PYTEST_ARGS)

# Only the packaging checks (part of `pytest` too): build the sdist and wheel, install the wheel
# and the example driver plugin into a fresh venv outside the checkout, run them from there.
package-check: $(STAMP)
	$(BIN)/pytest tests/packaging $(PYTEST_ARGS)

# The offline archive for table PCs and pits (scripts/make_dist.py; docs/operations.md, "Install"):
# the wheel, every dependency's wheel for CPython 3.11 on x86_64 and aarch64, install.sh and
# SHA256SUMS, in dist/. DIST_ARGS: e.g. --platforms x86_64.
dist: $(STAMP)
	$(BIN)/python scripts/make_dist.py $(DIST_ARGS)

# Mutation testing (benchmarks/mutation.py, cosmic-ray; docs/testing.md), outside `make test`:
# every module takes hours. MUTATION_ARGS picks: modules' paths, --changed (only those whose text
# or tests changed since the last run), --jobs N (test runs at once), --shard K/N (one part of each
# module, for several machines), --full (no kill taken over from an earlier run of the same
# module text), --report (rewrite the results from the last runs). A stopped run
# is taken up where it stopped. Results: benchmarks/mutation-results.txt
mutation: $(STAMP)
	$(BIN)/pip install --quiet -e '.[dev,mutation]'
	$(BIN)/python benchmarks/mutation.py $(MUTATION_ARGS)

bench: $(STAMP)
	$(BIN)/python benchmarks/engine.py
	$(BIN)/python benchmarks/link.py
	$(BIN)/python benchmarks/pn532.py
	$(BIN)/python benchmarks/tsp_reader.py
	$(BIN)/python benchmarks/feig.py
	$(BIN)/python benchmarks/feig_soak.py
	$(BIN)/python benchmarks/pipeline.py
	$(BIN)/python benchmarks/pipeline.py --broker-nodelay
	$(BIN)/python benchmarks/rig.py
	$(BIN)/python benchmarks/flood.py
	$(BIN)/python benchmarks/journal_integrity.py
	$(BIN)/python benchmarks/pit_ingest.py
	$(BIN)/python benchmarks/pit_ingest.py --through-broker
	$(BIN)/python benchmarks/pit.py --out benchmarks/pit-results.txt
	$(BIN)/python benchmarks/pit.py --console --out benchmarks/pit-console-results.txt
	$(BIN)/python benchmarks/pit_streams.py

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache .hypothesis build dist

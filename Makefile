# `make demo` and `make test` each create or refresh .venv from a fresh clone, then run.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
# Data sets the tests and the demo read (fetched once into $VFL_DATA_DIR or ~/.cache/vfl/data).
TEST_DATA := mnist fashion-mnist adult

.PHONY: venv test demo lint typecheck unit data bench clean

venv: $(STAMP)

# torch is pinned on the same pip command line as everything that depends on it, so pip never
# resolves an unpinned (multi-GB CUDA) build. The lock holds every package of every extra
# (deploy, plots, ray, fast, dev): `make` always installs them all.
$(STAMP): pyproject.toml requirements/lock.txt
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "vfl needs Python >= 3.11"'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet torch==2.13.0 -r requirements/lock.txt
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $(STAMP)

data: venv
	$(BIN)/vfl data fetch $(firstword $(TEST_DATA))
	@for name in $(wordlist 2,99,$(TEST_DATA)); do $(BIN)/vfl data fetch $$name || exit 1; done

lint: venv
	$(BIN)/ruff check src tests bench examples tools experiments
	$(BIN)/ruff format --check src tests bench examples tools experiments
	$(BIN)/lint-imports --no-cache

typecheck: venv
	$(BIN)/mypy

unit: venv data
	VFL_REQUIRE_DATA=1 $(BIN)/python -m pytest

test: lint typecheck unit

# Prints the run's summary.json on stdout (--json); the epochs and the run folder on stderr.
demo: venv
	$(BIN)/vfl data fetch mnist
	$(BIN)/vfl run examples/mnist_quadrants.toml --json

bench: venv data
	$(BIN)/python bench/bench_vfl_vs_centralized.py

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis

# `make demo` and `make test` each create or refresh .venv from a fresh clone, then run.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
# Data sets the tests and the demo read (fetched once into $VFL_DATA_DIR or ~/.cache/vfl/data).
TEST_DATA := mnist fashion-mnist adult

.PHONY: venv test demo lint typecheck unit data bench gpu-pack gpu-check clean

venv: $(STAMP)

# torch is pinned on the same pip command line as everything that depends on it, so pip never
# resolves an unpinned (multi-GB CUDA) build. The lock holds every package of every extra
# (deploy, plots, ray, fast, tracking, dev): `make` always installs them all.
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

# The GPU check (bench/gpu_check.py: every path on the GPU and on the CPU, VFL against
# centralized at batch 128 and 1024) on a machine with CUDA's torch and no network. Here, with
# network: `make gpu-pack` gathers into .gpu/ what such a machine lacks (wheels for its Python,
# GPU_PYTHON_VERSION, of the packages below, and the Fashion-MNIST files). There, with .gpu/
# copied beside the sources: `make gpu-check` (about 4 minutes on one H100 or H200), results in
# $(GPU_OUT). `make gpu-check GPU_DEVICE=cpu GPU_ARGS="--size tiny"` runs anywhere.
GPU_PACK           := .gpu
GPU_OUT            ?= bench/results/gpu-check
GPU_DEVICE         ?= cuda
GPU_ARGS           ?=
GPU_PYTHON_VERSION ?= 3.12
GPU_WHEELS         := tomli_w==1.2.0 cryptography==50.0.2 cffi==2.1.1 pycparser==3.12 \
                      PyNaCl==1.6.2 protobuf==7.36.2 grpcio==1.85.1
DATA_DIR           ?= $(or $(VFL_DATA_DIR),$(HOME)/.cache/vfl/data)

gpu-pack: venv data
	rm -rf $(GPU_PACK) && mkdir -p $(GPU_PACK)/wheels $(GPU_PACK)/data
	$(BIN)/python -m pip download --quiet --no-deps --only-binary=:all: \
		--python-version $(GPU_PYTHON_VERSION) --implementation cp \
		--platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
		--platform manylinux2014_x86_64 --platform manylinux1_x86_64 \
		-d $(GPU_PACK)/wheels $(GPU_WHEELS)
	cp -r $(DATA_DIR)/fashion-mnist $(GPU_PACK)/data/

gpu-check:
	@if ls $(GPU_PACK)/wheels/*.whl >/dev/null 2>&1; then \
		$(PYTHON) -m pip install --quiet --no-index --no-deps --no-compile --upgrade \
			--target $(GPU_PACK)/site $(GPU_PACK)/wheels/*.whl; fi
	PYTHONPATH=src:$(GPU_PACK)/site VFL_DATA_DIR=$(if $(wildcard $(GPU_PACK)/data),$(GPU_PACK)/data,$(DATA_DIR)) \
		$(PYTHON) bench/gpu_check.py --device $(GPU_DEVICE) --out $(GPU_OUT) $(GPU_ARGS)

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis

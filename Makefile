# margsynth: the verbs. A fresh machine needs only `make reproduce` and `make test`.
#
#   make reproduce [PROFILE=quick|full] [ONLY="01 02"]   execute the notebooks (papermill)
#   make test                                              the whole test suite, notebooks included (quick)
#   make docs                                              the HTML documentation, into docs/_build/html
#   make lint                                              ruff and the import layers (lint-imports)
#   make setup | data | bench | clean
#
# Data come from the pinned URLs, or from a local mirror: MARGSYNTH_DATA_MIRROR=/path/to/mirror.

PYTHON  ?= python3
VENV    ?= .venv
PY      := $(VENV)/bin/python
PROFILE ?= quick
ONLY    ?=
TORCH_CPU_INDEX ?= https://download.pytorch.org/whl/cpu
STAMP   := $(VENV)/.margsynth-installed

.PHONY: setup data reproduce figures docs test test-fast bench lint clean

setup: $(STAMP)

# The CPU build of torch goes in first (a local wheel if pip's find-links has one,
# else PyTorch's CPU index), so that resolving the package never pulls CUDA wheels.
$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip show torch >/dev/null 2>&1 || $(PY) -m pip install --quiet --no-index --no-deps "torch==2.13.0" \
		|| $(PY) -m pip install --quiet "torch==2.13.0" --index-url $(TORCH_CPU_INDEX)
	$(PY) -m pip install --quiet -e ".[dev]"
	@touch $(STAMP)

data: setup
	$(PY) -m margsynth data fetch --keep-going

reproduce: data
	$(PY) -m margsynth reproduce --profile $(PROFILE) $(if $(ONLY),--only $(ONLY),)

figures: setup
	$(PY) -m margsynth reproduce --figures-only $(if $(ONLY),--only $(ONLY),)

# The API reference and reproduction notes (Sphinx + MyST). -E re-reads every page, so
# docstring edits are always seen; -W --keep-going turns every warning into a failure.
docs: setup
	MPLBACKEND=Agg $(PY) -m sphinx -b html -E -W --keep-going -q docs docs/_build/html
	@echo "documentation: docs/_build/html/index.html"

test: data docs
	$(PY) -m pytest -n 2 --dist loadgroup

test-fast: setup
	$(PY) -m pytest -n 2 -m "not notebook and not slow"

bench: setup
	@for b in benchmarks/bench_*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

# ruff over every Python file of the repository (notebooks' jupytext .py included), then
# import-linter's layers contract (pyproject.toml; the order is described in margsynth/__init__.py).
lint: setup
	$(PY) -m ruff check src tests benchmarks tools notebooks
	$(VENV)/bin/lint-imports

clean:
	rm -rf results figures/*.png figures/*.pdf .pytest_cache docs/_build .import_linter_cache .grimp_cache

# Two commands set a fresh machine up (python3, pip, git and make are all it needs):
#   make demo   installs into .venv and runs count-recompiles on a committed example dump
#   make check  the test command README gives and .ci/run calls: installs with the test extra into
#               .venv, runs ruff (lint and format), import-linter (layers), pyright (the package,
#               strict: [tool.pyright] in pyproject.toml), then the test suite
#   (make test runs the test suite alone)
# The suite runs in one pytest-xdist worker per core (PYTEST_WORKERS=auto; tests/conftest.py keeps each
# module whose fixtures are costly to build on one worker, ONE_WORKER).
PYTEST_WORKERS ?= auto
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
DEMO_DUMP := fixtures/dumps/ragged_batch

.PHONY: demo test check bench

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(VENV)/.installed $@

demo: $(VENV)/.installed
	$(BIN)/xlainspect count-recompiles $(DEMO_DUMP)

test: $(VENV)/.installed-test
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS)

check: $(VENV)/.installed-test
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/pyright --project . --pythonpath $(BIN)/python
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS)

bench: $(VENV)/.installed-test
	$(BIN)/python bench/run.py

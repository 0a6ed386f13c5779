# deidstream — two commands: `make demo` and `make test`. Both build .venv from pyproject.toml.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: demo test lint unit integration bench evaluate clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/deidstream demo

test: $(STAMP) lint
	$(BIN)/pytest

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest -m "not integration"

integration: $(STAMP)
	$(BIN)/pytest -m integration

evaluate: $(STAMP)
	$(BIN)/deidstream evaluate --corpus physionet ../shared/data/physionet/dev --known-names

bench: $(STAMP)
	$(BIN)/python bench/detect.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache

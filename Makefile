# deidstream — two commands: `make demo` and `make test`. Both build .venv from pyproject.toml.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: demo test lint unit integration bench evaluate fuzz explore clean chromium image image-test

# the compiled helpers too: an edited .pyx is built again by the same install
$(STAMP): pyproject.toml $(wildcard setup.py pipelines/*.pyx pipelines/*/*.pyx pipelines/*/*/*.pyx)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# promtool (Prometheus' checker: exposition, alert rules, config) from Debian's package,
# unpacked into the venv without installing the Prometheus server. Best effort: without
# apt the promtool tests skip and say so.
$(BIN)/promtool: | $(STAMP)
	@if command -v promtool >/dev/null 2>&1; then ln -sf "$$(command -v promtool)" $@; \
	elif command -v apt-get >/dev/null 2>&1; then \
	  tmp=$$(mktemp -d) && (cd $$tmp && apt-get download -q prometheus >/dev/null 2>&1 \
	    && dpkg-deb -x prometheus_*.deb x && cp x/usr/bin/promtool $(CURDIR)/$@) \
	    || echo "promtool: not available, its tests will skip"; rm -rf $$tmp; \
	else echo "promtool: no apt-get, its tests will skip"; fi

# Debian's chromium for the review page's browser tests (Playwright drives it through
# executable_path; no browser download). Best effort: without apt they skip and say so.
chromium:
	@command -v chromium >/dev/null 2>&1 || { command -v apt-get >/dev/null 2>&1 \
	  && (apt-get install -y -q chromium >/dev/null 2>&1 \
	      || (apt-get update -q >/dev/null 2>&1 && apt-get install -y -q chromium >/dev/null 2>&1)) \
	  || echo "chromium: not available, the browser tests will skip"; }

demo: $(STAMP)
	$(BIN)/deidstream demo

# Line coverage of service/, pipelines/, surrogates/ and keystore/ is measured and must stay
# above the floor set in pyproject.toml ([tool.coverage.report] fail_under).
test: $(STAMP) lint $(BIN)/promtool chromium
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/pytest --cov

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest -m "not integration"

integration: $(STAMP) $(BIN)/promtool
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/pytest -m integration

# The container image (deploy/Dockerfile) with podman: without a registry the base is a
# Debian bookworm made by deploy/base-image.sh (kept in podman's storage and reused).
# BASE_IMAGE=docker.io/library/python:3.11-slim: on the official image (podman pulls it).
# Installs podman/runc/debootstrap with apt-get when missing, or stops saying which is.
IMAGE := localhost/deidstream:$(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)
BASE_IMAGE ?=
image:
	IMAGE='$(IMAGE)' BASE_IMAGE='$(BASE_IMAGE)' bash deploy/build-image.sh >/dev/null

# Runs the image as deploy/compose.yaml does (tests/image/): version, /readyz, /metrics,
# an HL7 and a FHIR document to the research topic, read-only root, no capabilities,
# SIGTERM; reports the image's size. Needs PostgreSQL on 127.0.0.1:5432 (as make test).
image-test: image $(STAMP)
	DEIDSTREAM_IMAGE=$(IMAGE) $(BIN)/pytest -p no:cacheprovider --timeout 900 tests/image

# The parser properties of `make test` (bounded there) with many more examples: every input
# gives documents or a typed InputError (tests/ingest/test_ingest_input_errors.py).
FUZZ_EXAMPLES ?= 5000
fuzz: $(STAMP)
	DEIDSTREAM_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(BIN)/pytest -q \
	  tests/ingest/test_ingest_input_errors.py tests/ingest/test_ingest_fuzz.py

# Hypothesis with fresh random examples, ten times as many (make test runs them derandomized)
explore: $(STAMP)
	HYPOTHESIS_PROFILE=explore $(BIN)/pytest -q -m "not integration" -p no:cacheprovider tests

evaluate: $(STAMP)
	$(BIN)/deidstream evaluate --corpus physionet ../shared/data/physionet/dev --known-names

bench: $(STAMP)
	$(BIN)/python bench/detect.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache

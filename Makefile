# Entry points. On a fresh Debian 12 machine, as root: `make demo` runs the main job and
# `make test` runs the tests; both first run scripts/setup.sh, which is quick when nothing is missing.
SHELL := /bin/bash
VENV := .venv
PYTEST_ARGS ?=

.PHONY: setup image test demo lint docs

setup:
	bash scripts/setup.sh

# Builds the kernel image for the current sources (FORCE=1 rebuilds even if its tag exists).
image:
	@test -x $(VENV)/bin/python || { echo "no $(VENV): run 'make setup' first" >&2; exit 1; }
	$(VENV)/bin/python -m pixelbox.runtime.image build $(if $(FORCE),--force)

test: setup
	$(VENV)/bin/pytest $(PYTEST_ARGS)

# The default suite's demo in runs/demo, then every other registered suite's in runs/demo-SUITE.
demo: setup
	$(VENV)/bin/pixelbox demo
	@for suite in $$($(VENV)/bin/python -c "from pixelbox.harness.suites import SUITES, DEFAULT_SUITE; \
	  print(*(n for n in SUITES.names() if n != DEFAULT_SUITE))"); do \
	  echo "== pixelbox demo --suite $$suite --out runs/demo-$$suite"; \
	  $(VENV)/bin/pixelbox demo --suite $$suite --out runs/demo-$$suite || exit 1; \
	done

# ruff, then mypy over the package as installed (scripts/typecheck.py), then the docs' registry blocks.
lint:
	@test -x $(VENV)/bin/python || { echo "no $(VENV): run 'make setup' first" >&2; exit 1; }
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/python scripts/typecheck.py
	$(VENV)/bin/python -m pixelbox.cli.registries --check

# Rewrites the lists in README.md and docs/ that are generated from the registries.
docs:
	$(VENV)/bin/python -m pixelbox.cli.registries --write

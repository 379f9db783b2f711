# make demo: set up, build the student notebooks, grade the bundled example submissions.
# make test: set up and run every test (solution notebooks under nbval included).
PYTHON ?= python3
VENV := .venv
# The Pythons this kit supports: README.md, pyproject.toml and environment.yml state the same range
# (tests/test_packaging.py checks it). nbgrader 0.9.6 needs 3.11; on 3.10 pip picks nbgrader 0.9.5.
PYTHON_VERSIONS := 3.10 3.11 3.12 3.13
PYTHON_MIN := $(firstword $(PYTHON_VERSIONS))
PYTHON_MAX := $(lastword $(PYTHON_VERSIONS))
PY := $(VENV)/bin/python
OUT ?= out

.PHONY: setup demo notebooks examples lint test mutants test-subset python-versions check-python bench clean serve system-packages

# Before pip runs, one sentence when $(PYTHON) is missing or outside the supported range
# (written to run on any Python, 2.7 included, so that it can say which one it found).
GOAL := $(or $(MAKECMDGOALS),setup)
NEEDS := BPE Labs needs Python $(PYTHON_MIN) to $(PYTHON_MAX)
RETRY := run make again with a supported one, e.g. make $(GOAL) PYTHON=python3.12
CHECK_PYTHON := import sys; found = tuple(sys.version_info[:2]); \
	low, high = [tuple(int(n) for n in v.split(".")) for v in ("$(PYTHON_MIN)", "$(PYTHON_MAX)")]; \
	sys.exit(None if low <= found <= high else "$(NEEDS), but $(PYTHON) is Python %d.%d: $(RETRY)." % found)

define check_python
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "$(NEEDS), but there is no $(PYTHON) on this machine: $(RETRY)." >&2; exit 1; }
	@$(PYTHON) -c '$(CHECK_PYTHON)'
endef

# The project itself is installed too (editable: the checkout is what runs), so that notebooks
# run in plain Jupyter from any folder: their hidden tests import bpe_labs.reference.
$(VENV)/.installed: requirements.txt pyproject.toml
	$(check_python)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m pip install --quiet --no-deps --no-build-isolation --editable .
	touch $@

setup: $(VENV)/.installed

notebooks: setup
	$(PY) -m autograder build

examples: notebooks
	$(PY) -m autograder examples

demo: examples
	rm -rf $(OUT)
	$(PY) -m autograder grade examples/submissions --out $(OUT)

# The engine's lint and type check (configured in pyproject.toml): before every test run, and so in CI.
lint: setup
	$(PY) -m ruff check
	$(PY) -m mypy

test: setup lint
	$(PY) -m pytest

# Mutation analysis of every lab (mutation/, docs/labs/<lab>.md): each part's solution changed in small ways, each
# mutant run through the part's visible check and its hidden tests; fails when a mutant only the hidden tests catch
# (a "✅ then 0") or one both miss is not explained in docs/labs/mutants/<lab>.yaml. Cached by the hash of its inputs.
mutants: setup
	$(PY) -m mutation $(if $(FORCE),--force) --jobs 2

# The grading service (docs/SERVICE.md) on $(HOST):$(PORT) (default 127.0.0.1:8000) with the bundled examples'
# roster: the port is checked first (a busy one: one line naming what holds it, and nothing else); the first time
# it writes $(SERVICE_DIR)/tokens.csv (one token per student) and makes an instructor account (its password is
# printed then, and only then).
SERVICE_DIR ?= service-data
HOST ?= 127.0.0.1
PORT ?= 8000
serve: setup
	@$(PY) -m autograder.service.port $(HOST) $(PORT)
	@mkdir -p $(SERVICE_DIR)
	@test -e $(SERVICE_DIR)/tokens.csv || $(PY) -m autograder tokens --roster examples/roster.csv --db $(SERVICE_DIR)/service.db --out $(SERVICE_DIR)/tokens.csv
	@$(PY) -m autograder accounts add instructor --role instructor --random-password --if-new --db $(SERVICE_DIR)/service.db
	$(PY) -m autograder serve --host $(HOST) --port $(PORT) --roster examples/roster.csv --db $(SERVICE_DIR)/service.db

# Debian packages the service's tests use: chromium (the browser test, never a downloaded browser), its emoji font,
# and postgresql (the PostgreSQL test). Installed as root on Debian (CI); elsewhere those tests say why they skip.
SYSTEM_PACKAGES := chromium fonts-noto-color-emoji postgresql
system-packages:
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		missing=""; for package in $(SYSTEM_PACKAGES); do dpkg -s $$package >/dev/null 2>&1 || missing="$$missing $$package"; done; \
		if [ -n "$$missing" ]; then echo "installing$$missing"; apt-get update -qq && \
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; fi; \
	else echo "not root on Debian: install $(SYSTEM_PACKAGES) yourself for the service's browser and PostgreSQL tests"; fi

# CI on the other supported Pythons (.ci/run): every solution notebook under nbval, every docstring
# example (which imports every module), every student notebook filled with its solutions run alone.
test-subset: setup
	$(PY) -m pytest solutions autograder bpe_labs tests/test_colab_alone.py

python-versions:
	@echo $(PYTHON_VERSIONS)

check-python:
	$(check_python)

bench: setup
	$(PY) benchmarks/bench_trainer.py --sizes 1 5
	$(PY) benchmarks/bench_grading.py --count 50 --workers 1 2 4
	$(PY) benchmarks/bench_notebooks.py
	$(PY) benchmarks/bench_stand_ins.py
	$(PY) benchmarks/bench_train_bpe.py
	$(PY) benchmarks/bench_too_slow.py

clean:
	rm -rf $(OUT) .pytest_cache

# make demo: set up, build the student notebooks, grade the bundled example submissions.
# make test: set up and run every test (solution notebooks under nbval included).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
OUT ?= out
export PYTHONPATH := $(CURDIR)

.PHONY: setup demo notebooks examples test bench clean

$(VENV)/.installed: requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	touch $@

setup: $(VENV)/.installed

notebooks: setup
	$(PY) -m autograder build

examples: notebooks
	$(PY) -m autograder examples

demo: examples
	rm -rf $(OUT)
	$(PY) -m autograder grade examples/submissions --out $(OUT)

test: setup
	$(PY) -m pytest

bench: setup
	$(PY) benchmarks/bench_trainer.py --sizes 1 5
	$(PY) benchmarks/bench_grading.py --count 50 --workers 1 2 4
	$(PY) benchmarks/bench_notebooks.py

clean:
	rm -rf $(OUT) .pytest_cache

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: install test bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

install: $(BIN)/python
	$(BIN)/pip install -q -e '.[test]'

test: install
	$(BIN)/python -m pytest -q

bench: install
	$(BIN)/python scripts/bench_speed.py --root $(or $(ROOT),.)

clean:
	rm -rf $(VENV) .retrieval build *.egg-info

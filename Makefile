PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
CORE_VENV ?= .venv-core
# torch first, from its CPU wheel: otherwise the extras that need it pull a multi-GB CUDA build
# (PyPI's Linux torch). TORCH_INDEX= (empty) takes torch from pip's configured indexes instead,
# for a machine that mirrors the CPU wheel (as CI's does).
TORCH ?= torch==2.13.0
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu

.PHONY: install install-core test test-core bench clean pyz

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# Everything: the core, every extra and the test tools.
install: $(BIN)/python
	$(BIN)/pip install -q $(TORCH) $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	$(BIN)/pip install -q -e '.[all,test]'
	$(BIN)/pip install -q --no-deps pyserini==1.6.0  # Anserini's jar, without pyserini's torch & co.

# The core alone (click) and the test tools: proves the stdlib core and the missing-extra paths.
install-core:
	$(PYTHON) -m venv $(CORE_VENV)
	$(CORE_VENV)/bin/pip install -q --upgrade pip
	$(CORE_VENV)/bin/pip install -q -e '.[test]'

# The whole suite with every extra installed (a missing extra is an error, not a skip), then the
# suite again with none installed.
test: install install-core
	RETRIEVAL_REQUIRE_EXTRAS=1 $(BIN)/python -m pytest -q -rs
	$(CORE_VENV)/bin/python -m pytest -q -rs

# One file for machines with no package index: the core and click, run by any Python >= 3.10.
# The core venv once (again only when pyproject.toml changes), not on every `make pyz`.
$(CORE_VENV)/bin/retrieval: pyproject.toml
	$(MAKE) install-core

pyz: $(CORE_VENV)/bin/retrieval
	$(CORE_VENV)/bin/python scripts/build_pyz.py --output dist/retrieval.pyz

# Timed in a venv of its own holding a regular install of the core (what `pip install .` gives a
# user): an editable install adds an import hook to every cold process, which the timings would include.
BENCH_VENV ?= .venv-bench

bench:
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/pip install -q --upgrade pip
	$(BENCH_VENV)/bin/pip install -q .
	$(BENCH_VENV)/bin/python scripts/bench_speed.py --root $(or $(ROOT),.)

clean:
	rm -rf $(VENV) $(CORE_VENV) $(BENCH_VENV) .retrieval build dist *.egg-info

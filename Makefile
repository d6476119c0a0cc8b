# healthmon: `make run` serves the product, `make test` runs the whole suite, `make test-fast`
# the part of it that needs nothing but Python.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PORT   ?= 8000

.PHONY: run demo worker beat test test-fast lint format migrate superuser clean bench bench-smoke

$(BIN)/python:
	@echo "Creating the virtualenv in $(VENV)..."
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Re-install whenever pyproject.toml changes.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	@echo "Installing dependencies (first run only, or after pyproject.toml changes; ~30 s)..."
	@$(BIN)/python -m pip install --quiet --disable-pip-version-check -e .
	@touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(VENV)/.installed $@

## run: serve on http://127.0.0.1:$(PORT) with SQLite, an embedded Celery worker and beat:
## healthmon/devserver.py starts them, says where to go once the server answers, and stops
## them all on one Ctrl-C. Probes may reach private addresses here (your own services);
## production refuses them. `make run DEMO=1` is `make demo`.
devserver = exec $(BIN)/python -m healthmon.devserver --port $(PORT) \
    $(if $(DEMO_PORT),--demo-port $(DEMO_PORT))

run: $(VENV)/.installed
	@$(devserver) $(if $(DEMO),--demo)

## demo: `make run` plus a demo organization (its login is printed) whose endpoints probe small
## local services started beside it (on DEMO_PORT, default PORT+1), so the charts fill in
## minutes. Running it again reuses the same organization and endpoints.
demo: $(VENV)/.installed
	@$(devserver) --demo

# The production commands live in the Procfile (the README quotes it, tests/deploy runs it):
# `make worker` and `make beat` run its lines with this checkout's virtualenv first on PATH.
procfile = PATH="$(abspath $(BIN)):$$PATH" sh -c "exec $$(sed -n 's/^$(1): //p' Procfile)"

## worker: a Celery worker on CELERY_BROKER_URL (Redis in production); run as many as needed.
## `make worker LOCATION=eu-west`: a worker of that probe location instead, anywhere that
## reaches the broker and the database: PROBE_LOCATION=eu-west, consuming `probes.eu-west` only.
location_worker = PROBE_LOCATION=$(LOCATION) PATH="$(abspath $(BIN)):$$PATH" exec celery \
    -A healthmon worker -Q probes.$(LOCATION) -n $(LOCATION)@%h --loglevel=INFO

worker: $(VENV)/.installed
	$(if $(LOCATION),$(location_worker),$(call procfile,worker))

## beat: the scheduler that runs the dispatcher every second; run exactly one.
beat: $(VENV)/.installed
	$(call procfile,beat)

## test: the whole suite, every tier; what CI runs (PostgreSQL when DATABASE_URL is set, SQLite
## otherwise). The tiers beyond test-fast need local Redis and MariaDB, PostgreSQL, Celery
## processes and Debian's Chromium (.ci/run starts them); outside CI a missing Chromium or
## Playwright skips the browser tests, saying why.
test: $(VENV)/.installed-dev
	$(BIN)/python -m pytest $(PYTEST_ARGS)

## test-fast: the edit loop: SQLite, no external service, no browser, no deployment check
## (the markers are in pyproject.toml, set by tests/conftest.py), in two processes that take
## tests as they free up; under 2 minutes on 2 cores.
test-fast: $(VENV)/.installed-dev
	env -u DATABASE_URL -u CACHE_URL $(BIN)/python -m pytest -n 2 --dist worksteal \
	    -m "not postgres and not services and not browser and not deploy and not timing" $(PYTEST_ARGS)

## lint: ruff (lint and format check), mypy, and lint-imports (the layers contracts in
## pyproject.toml).
lint: $(VENV)/.installed-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	DEBUG=true $(BIN)/mypy .
	$(BIN)/lint-imports --no-logo

format: $(VENV)/.installed-dev
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

## bench: the benchmarks in bench/, one after the other (see bench/README.md for what each
## needs: PostgreSQL, Redis, nginx, wrk). BENCH_ARGS=--quick shortens every run (analytics at
## full scale takes 20-32 min and ~17 GB of disk); BENCH_ARGS=--smoke runs each for a few
## seconds, only to see that it still works (`make bench-smoke`, which CI runs).
bench: $(VENV)/.installed
	bench/tools.sh
	$(BIN)/python bench/api_auth.py $(BENCH_ARGS)
	$(BIN)/python bench/pings.py $(BENCH_ARGS)
	$(BIN)/python bench/status_pages.py $(BENCH_ARGS)
	$(BIN)/python bench/probes.py $(BENCH_ARGS)
	$(BIN)/python bench/hanging.py $(BENCH_ARGS)
	$(BIN)/python bench/scheduler.py $(BENCH_ARGS)
	$(BIN)/python bench/deadlines.py $(BENCH_ARGS)
	$(BIN)/python bench/analytics.py $(BENCH_ARGS)
	$(BIN)/python bench/charts.py $(BENCH_ARGS)
	$(BIN)/python bench/dashboards.py $(BENCH_ARGS)
	$(BIN)/python bench/alerts.py $(BENCH_ARGS)
	$(BIN)/python bench/load.py $(BENCH_ARGS)
	$(BIN)/python bench/isolation.py $(BENCH_ARGS)
	$(BIN)/python bench/tuned_server.py bench/analytics.py $(BENCH_ARGS)
	$(BIN)/python bench/tuned_server.py bench/load.py $(BENCH_ARGS)

bench-smoke:
	$(MAKE) bench BENCH_ARGS=--smoke

migrate: $(VENV)/.installed
	DEBUG=$${DEBUG:-true} $(BIN)/python manage.py migrate --noinput

## superuser: a Django-admin superuser, owner of a new organization of its own (it says which).
superuser: $(VENV)/.installed
	DEBUG=$${DEBUG:-true} $(BIN)/python manage.py createsuperuser

clean:
	rm -rf $(VENV) var db.sqlite3 .pytest_cache .mypy_cache .ruff_cache .import_linter_cache *.egg-info

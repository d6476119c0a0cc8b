# healthmon: `make run` serves the product, `make test` runs the whole suite.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PORT   ?= 8000

.PHONY: run worker beat test lint format migrate superuser clean bench

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Re-install whenever pyproject.toml changes.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(VENV)/.installed $@

## run: serve on http://127.0.0.1:$(PORT) with SQLite, an embedded Celery worker and beat.
## Probes may reach private addresses here (your own services); production refuses them.
run: $(VENV)/.installed
	@export DEBUG=$${DEBUG:-true} WEB_BASE_URL=$${WEB_BASE_URL:-http://127.0.0.1:$(PORT)} \
	    PROBE_ALLOW_PRIVATE_NETWORKS=$${PROBE_ALLOW_PRIVATE_NETWORKS:-true}; \
	$(BIN)/python manage.py migrate --noinput && \
	trap 'kill 0' INT TERM EXIT; \
	$(BIN)/celery -A healthmon worker -B -Q celery,slow,dispatch --pool=threads --concurrency=4 \
	    --loglevel=INFO & \
	$(BIN)/python manage.py runserver 127.0.0.1:$(PORT)

## worker: a Celery worker on CELERY_BROKER_URL (Redis in production); run as many as needed.
worker: $(VENV)/.installed
	$(BIN)/celery -A healthmon worker -Q celery,slow,dispatch --loglevel=INFO

## beat: the scheduler that runs the dispatcher every second; run exactly one.
beat: $(VENV)/.installed
	$(BIN)/celery -A healthmon beat --loglevel=INFO

## test: the whole suite (PostgreSQL when DATABASE_URL is set, SQLite otherwise).
test: $(VENV)/.installed-dev
	$(BIN)/python -m pytest $(PYTEST_ARGS)

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
## needs: PostgreSQL, Redis, nginx, wrk). BENCH_ARGS=--quick shortens the probe, hanging-target,
## scheduler, analytics, chart and dashboard runs (analytics at full scale takes 20-32 min and
## ~17 GB of disk).
bench: $(VENV)/.installed
	$(BIN)/python bench/api_auth.py
	$(BIN)/python bench/probes.py $(BENCH_ARGS)
	$(BIN)/python bench/hanging.py $(BENCH_ARGS)
	$(BIN)/python bench/scheduler.py $(BENCH_ARGS)
	$(BIN)/python bench/analytics.py $(BENCH_ARGS)
	$(BIN)/python bench/charts.py $(BENCH_ARGS)
	$(BIN)/python bench/dashboards.py $(BENCH_ARGS)
	$(BIN)/python bench/alerts.py $(BENCH_ARGS)
	$(BIN)/python bench/load.py $(BENCH_ARGS)

migrate: $(VENV)/.installed
	DEBUG=$${DEBUG:-true} $(BIN)/python manage.py migrate --noinput

superuser: $(VENV)/.installed
	DEBUG=$${DEBUG:-true} $(BIN)/python manage.py createsuperuser

clean:
	rm -rf $(VENV) var db.sqlite3 .pytest_cache .mypy_cache .ruff_cache *.egg-info

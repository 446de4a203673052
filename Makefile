# Two commands for a newcomer: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: demo test test-sqlite test-embedded test-fast bench install clean-demo lint

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet ".[test]"
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

install: $(STAMP)

# Serves http://127.0.0.1:8000 with the lab's clusters registered and their first runs under way.
demo: $(STAMP)
	$(PY) manage.py demo

# The whole suite, as CI runs it (DATABASE_URL selects PostgreSQL; SQLite otherwise), with the
# line coverage of dashboard/, workers/ and lab/ printed at the end (config: pyproject.toml).
test: $(STAMP)
	rm -rf var/coverage && mkdir -p var/coverage
	DJANGO_ALLOW_ASYNC_UNSAFE=true $(PY) -m pytest -q --cov --cov-report=term $(PYTEST_ARGS)

# The embedded mode (`make demo` without Redis): every test that does not need a Redis server,
# on the filesystem broker, database cache and database leases. REDIS_URL names a port where
# nothing listens, so whatever would still reach for Redis fails loudly instead of passing.
test-embedded: $(STAMP)
	DATABASE_URL= CACHE_URL= CELERY_BROKER_URL=filesystem:// REDIS_URL=redis://127.0.0.1:1/0 \
	  DJANGO_ALLOW_ASYNC_UNSAFE=true $(PY) -m pytest -q -m "not redis and not browser and not guest" $(PYTEST_ARGS)

# The database-facing tests again on the embedded SQLite, whatever DATABASE_URL says.
test-sqlite: $(STAMP)
	DATABASE_URL= DJANGO_ALLOW_ASYNC_UNSAFE=true $(PY) -m pytest -q -m "not browser and not guest" tests/foundation tests/battery tests/ops tests/submissions $(PYTEST_ARGS)

bench: $(STAMP)
	$(PY) bench/run.py

clean-demo:
	rm -rf var/dashboard.sqlite3* var/broker

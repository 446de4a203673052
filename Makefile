# Two commands for a newcomer: `make demo` and `make test` (`make lint` before a commit).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: demo test test-sqlite test-fast bench install clean-demo lint

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet ".[test,lint]"
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

install: $(STAMP)

# Serves http://127.0.0.1:8000 with the lab's clusters registered and their first runs under way.
demo: $(STAMP)
	$(PY) manage.py demo

# The whole suite, as CI runs it (DATABASE_URL selects PostgreSQL; SQLite otherwise).
test: $(STAMP)
	DJANGO_ALLOW_ASYNC_UNSAFE=true $(PY) -m pytest -q $(PYTEST_ARGS)

# The database-facing tests again on the embedded SQLite, whatever DATABASE_URL says.
test-sqlite: $(STAMP)
	DATABASE_URL= DJANGO_ALLOW_ASYNC_UNSAFE=true $(PY) -m pytest -q -m "not browser and not guest" tests/foundation tests/battery tests/ops tests/submissions $(PYTEST_ARGS)

# The gate CI runs before the tests: lint, formatting, types (settings in pyproject.toml).
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

bench: $(STAMP)
	$(PY) bench/run.py

clean-demo:
	rm -rf var/dashboard.sqlite3* var/broker

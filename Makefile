# The two commands a newcomer needs: `make run` (the whole system, locally) and `make test`.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: run test deps services lint assets browser

run: deps services assets
	deploy/run-local.sh

test: deps services assets browser
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports
	DJANGO_SETTINGS_MODULE=tests.settings $(PY) manage.py makemigrations --check --dry-run
	$(VENV)/bin/pytest

deps: $(VENV)/.installed node_modules/.installed

$(VENV)/.installed: requirements.txt
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -r requirements.txt
	touch $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $@

services:
	deploy/local-services.sh

browser:
	deploy/ensure-chromium.sh

# The donation page's npm dependencies, copied into web/static/web/vendor/ (served by the web process;
# no CDN). The copies are committed too, so an image built without Node still serves a working page.
assets:
	node web/build-assets.mjs

lint:
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check . && $(VENV)/bin/lint-imports

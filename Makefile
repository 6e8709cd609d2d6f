# zerochess: the two set-up commands are `make demo` and `make test`.
# Both create .venv, install PyTorch ($(TORCH_SPEC)), the project and
# Debian's stockfish when missing (`make test` also the ssh tools and
# chromium its tests use), then run.
#
# GPU users: choose the torch build with TORCH_SPEC, e.g.
#   make demo TORCH_SPEC="torch==2.13.0 --index-url <your CUDA wheel index>"
# On a CPU-only machine of this project's kind the default takes the CPU wheel.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
TORCH_SPEC ?= torch==2.13.0
PYTEST_ARGS ?=
DEMO_ARGS ?=
PY := $(VENV)/bin/python
STAMP := $(VENV)/.zerochess-installed
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

NATIVE_SOURCES := setup.py $(wildcard models/native/*.cpp models/native/*.h)
# The native core is built with -Werror here (setup.py reads
# ZEROCHESS_NATIVE_WERROR): the code compiles clean under -Wall -Wextra.
NATIVE_WERROR ?= 1

.PHONY: demo test install stockfish ssh-tools chromium toolchain native native-test bench docs docs-serve clean

# The native core (models/native/, C++17) needs a C++ compiler and Python's
# headers; Debian's g++ and python3-dev are installed when missing.
toolchain:
	@if command -v g++ >/dev/null && $(PYTHON) -c 'import sysconfig, os, sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))'; then \
	  echo "g++, Python headers: found"; \
	else \
	  echo "toolchain: installing Debian's g++ and python3-dev"; \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq g++ python3-dev >/dev/null; \
	fi

# `pip install -e .` builds the native core (setup.py); it is rebuilt when a
# source under models/native/ changes.
$(STAMP): pyproject.toml Makefile $(NATIVE_SOURCES) | toolchain
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet $(TORCH_SPEC)
	ZEROCHESS_NATIVE_WERROR=$(NATIVE_WERROR) $(PY) -m pip install --quiet -e '.[test]'
	touch $@

native: $(STAMP)

# The native core's C++ tests (tests/native_cxx/): the core's sources without
# the Python bindings, compiled with g++ into build/native_tests and run;
# they print "all passed".  tests/test_native_cxx.py runs this target.
NATIVE_TEST_CXX ?= g++
NATIVE_TEST_FLAGS := -std=c++17 -O2 -Wall -Wextra -Werror -pthread -Imodels/native -Itests/native_cxx
NATIVE_TEST_SOURCES := $(filter-out %bindings.cpp,$(wildcard models/native/*.cpp)) tests/native_cxx/native_tests.cpp
NATIVE_TEST_OBJECTS := $(patsubst %.cpp,build/native_tests.o/%.o,$(NATIVE_TEST_SOURCES))
NATIVE_TEST_HEADERS := $(wildcard models/native/*.h tests/native_cxx/*.h)

native-test: build/native_tests
	./build/native_tests

build/native_tests: $(NATIVE_TEST_OBJECTS)
	$(NATIVE_TEST_CXX) $(NATIVE_TEST_FLAGS) $^ -o $@

build/native_tests.o/%.o: %.cpp $(NATIVE_TEST_HEADERS)
	@command -v $(NATIVE_TEST_CXX) >/dev/null || { echo "native-test: $(NATIVE_TEST_CXX) not found; 'make toolchain' installs Debian's g++" >&2; exit 1; }
	@mkdir -p $(@D)
	$(NATIVE_TEST_CXX) $(NATIVE_TEST_FLAGS) -c $< -o $@

stockfish:
	@if command -v stockfish >/dev/null || test -x /usr/games/stockfish; then \
	  echo "stockfish: found"; \
	else \
	  echo "stockfish: installing Debian's package"; \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq stockfish >/dev/null; \
	fi

# tests/test_cluster_local.py runs `ray up`/`ray submit` against a local sshd;
# the launcher copies files with rsync over ssh.
ssh-tools:
	@if test -x /usr/sbin/sshd && command -v ssh >/dev/null && command -v ssh-keygen >/dev/null \
	    && command -v rsync >/dev/null; then \
	  echo "openssh-server, openssh-client, rsync: found"; \
	else \
	  echo "ssh tools: installing Debian's openssh-server, openssh-client and rsync"; \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssh-server openssh-client rsync >/dev/null; \
	fi

# tests/test_mlflow_ui.py renders MLflow's UI in a headless browser:
# Debian's chromium (started as `chromium --headless`).
chromium:
	@if command -v chromium >/dev/null; then \
	  echo "chromium: found"; \
	else \
	  echo "chromium: installing Debian's package"; \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	fi

install: $(STAMP) stockfish

demo: install
	$(VENV)/bin/zerochess run --preset demo --out runs/demo $(DEMO_ARGS)

test: install ssh-tools chromium
	$(PY) -m pytest $(PYTEST_ARGS)

# The docs site (mkdocs.yml): the generated reference and results pages first, then a strict build into site/.
docs: $(STAMP)
	$(PY) -m pipeline.param_reference docs/reference/parameters.md
	$(PY) -m zerochess.cli_reference docs/reference/cli.md
	$(PY) experiments/results.py pages
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

docs-serve: docs
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve --dev-addr 127.0.0.1:8000

# The results pages under docs/results/: every table drawn from docs/results/data/ by one script
# (the notebook pages' prose from docs/results/src/*.md.in).  tests/test_results_pages.py checks them.
.PHONY: results
results: $(STAMP)
	$(PY) experiments/results.py pages

bench: install
	$(PY) -m pip install --quiet -e '.[bench]'
	$(PY) bench/search.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis site

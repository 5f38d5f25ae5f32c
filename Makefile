# Two commands do everything on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: demo test bench venv clean browser docs

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	rm -f $(VENV)/.installed-* && touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(BIN)/python demos/headline.py --out out

# API reference from the docstrings (pdoc, in the docs/test extras) into out/api/; fails if a public name is missing
docs: $(STAMP)
	$(BIN)/python tools/build_api_docs.py --out out/api

# The HTML-replay test needs a headless browser: on a clean Debian CI machine (root, apt) install Debian's chromium
# once (quiet, idempotent: skipped when present); elsewhere that test is skipped with its reason.
browser:
	@if [ "$$(id -u)" = 0 ] && ! command -v chromium >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing chromium (headless browser for the HTML replay test) ..." >&2; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/dev/null 2>&1 \
	  || echo "warning: could not install chromium; the browser test will be skipped" >&2; fi

# Two workers on CI's two cores; test files stay whole on one worker (their module fixtures are built once)
test: $(STAMP) browser
	$(BIN)/python -m pytest -n auto --dist loadfile

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[test,bench]'
	$(BIN)/python -m pytest tests/benchmarks -q -s -p no:cacheprovider --override-ini addopts=

clean:
	rm -rf $(VENV) out

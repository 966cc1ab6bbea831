#!/usr/bin/env bash
# The quick loop: lint, format check and the unit tests that need no chapter run (every test not marked
# `slow` or `chapter`; see pyproject.toml's markers). Extra arguments go to pytest (e.g. -x, -k isoscore).
# PYTHON picks the interpreter (default .venv/bin/python); the checkout's own replib/ and bookkit/ are
# tested (PYTHONPATH), whatever the environment has installed.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
source scripts/_mirror.sh  # the data mirror (../shared/data) when there is one, as scripts/test.sh does
"$PYTHON" -m ruff check .
"$PYTHON" -m ruff format --check .
exec "$PYTHON" -m pytest -q -m "not slow and not chapter" "$@"

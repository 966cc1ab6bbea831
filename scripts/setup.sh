#!/usr/bin/env bash
# Create .venv and install replib with everything the book, its tests and the offline profile need.
# Idempotent: a second run only checks that everything is installed.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
# torch first, pinned: an unpinned torch (asked for by transformers or sentence-transformers) would pull a
# multi-GB CUDA build. TORCH_SPEC / TORCH_INDEX let a user choose another build (e.g. a CUDA one).
TORCH_SPEC=${TORCH_SPEC:-torch==2.13.0}
# (re)install when torch is missing or is not the pinned version (a CUDA build's "+cu126" suffix is ignored)
want=$(printf '%s' "$TORCH_SPEC" | sed -n 's/^torch==//p')
if ! .venv/bin/python -c "import sys, torch; sys.exit(bool('$want') and torch.__version__.split('+')[0] != '$want')" 2>/dev/null; then
  if [ -n "${TORCH_INDEX:-}" ]; then
    .venv/bin/python -m pip install -q "$TORCH_SPEC" --index-url "$TORCH_INDEX"
  else
    .venv/bin/python -m pip install -q "$TORCH_SPEC"
  fi
fi
.venv/bin/python -m pip install -q -e ".[dev]"
# MathJax for the book (served with it, so formulas render offline): fetched once from the npm registry into
# the cache; a later build needs no network. Without internet the book build says how to provide it.
.venv/bin/python -m bookkit.mathjax >/dev/null || echo "warning: MathJax not fetched (see the message above)" >&2
.venv/bin/python -c "import torch, replib; print('replib', replib.__version__, '| torch', torch.__version__)"

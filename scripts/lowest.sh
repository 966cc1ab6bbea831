#!/usr/bin/env bash
# The declared floors, tested: Python at the floor of requires-python, the LOWEST version pyproject.toml allows
# of every direct dependency (uv's --resolution lowest-direct; transitive dependencies at their newest) with
# torch at its declared floor (CPU build), then the unit tests that need no chapter (the browser test and the
# benchmarks left out) and the smoke profile of every chapter with its claim check and the strict book build
# (jupyter-book at its floor).
#
#   bash scripts/lowest.sh [PYTEST ARGS...]
#
# Environment: LOWEST_VENV (default /tmp/replib-lowest; created anew each time), PYTHON (the interpreter for
# the venv, default the floor of requires-python, which uv finds or downloads), UV (default `uv` on PATH),
# TORCH_SPEC (default torch==<declared floor>+cpu), TORCH_INDEX (default the PyTorch CPU wheel index; set it
# empty where a local wheel is found through UV_FIND_LINKS instead), LOWEST_CHAPTERS=0 (the unit tests only).
# Never touches the project's .venv. Used by the nightly's `lowest` job.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${LOWEST_VENV:-/tmp/replib-lowest}
PY=${PYTHON:-$(sed -n 's/^requires-python = ">=\([0-9.]*\)"/\1/p' pyproject.toml)}
UV=${UV:-uv}
TORCH_SPEC=${TORCH_SPEC:-torch==$(sed -n 's/^ *"torch>=\([0-9.]*\)".*/\1/p' pyproject.toml)+cpu}
TORCH_INDEX=${TORCH_INDEX-https://download.pytorch.org/whl/cpu}
EXTRAS=${LOWEST_EXTRAS:-dev}
echo "== lowest versions: Python $PY, $TORCH_SPEC"

rm -rf "$VENV"
"$UV" venv -q --python "$PY" "$VENV"
constraints=$(mktemp)
trap 'rm -f "$constraints"' EXIT
# a constraint, not a requirement: torch stays what the project asks for (torch>=...), only its build is fixed
echo "$TORCH_SPEC" >"$constraints"
index_args=()
if [ -n "$TORCH_INDEX" ]; then
  # every index is searched for every package (the CPU index also carries numpy, pillow, ...): the lowest
  # allowed version wins wherever it is, and only the CPU index has torch's +cpu build
  index_args=(--extra-index-url "$TORCH_INDEX" --index-strategy unsafe-best-match)
fi
"$UV" pip install -q --python "$VENV/bin/python" --resolution lowest-direct -c "$constraints" "${index_args[@]}" \
  ".[$EXTRAS]"
echo "== lowest-direct versions of the declared dependencies"
"$VENV/bin/python" - <<'EOF'
import re

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: pytest's own dependency
    import tomli as tomllib
from importlib import metadata

project = tomllib.load(open("pyproject.toml", "rb"))["project"]
reqs = list(project["dependencies"]) + [r for extra in project["optional-dependencies"].values() for r in extra]
seen = set()
for req in reqs:
    name = re.split(r"[<>=!~\[; ]", req, maxsplit=1)[0]
    if name in seen or name == "replib":
        continue
    seen.add(name)
    try:
        print(f"{name:28s} {metadata.version(name):12s} (declared {req})")
    except metadata.PackageNotFoundError:
        print(f"{name:28s} {'-':12s} (declared {req}; not installed)")
EOF
# the unit tests: no smoke book here (REPLIB_SKIP_SMOKE; the chapters run below), no browser, no benchmarks,
# nothing marked slow; and not the round trip of the chapters' Markdown, which compares the `jupytext_version`
# their header records (the exact jupytext that last wrote them): it cannot pass with any other version (the
# rest of the form is checked by the floor: the md:myst text of jupytext >= 1.19.4 is the same, apart from that
# header line); and not the ProteinBERT port's comparison, whose fixture asserts float64 np.sum of each random
# weight array equal to the stored sums with atol=0: numpy 1.24 sums 2 of the 145 arrays 1 ulp differently
# (summation order; math.fsum of every array equals the stored value exactly, so the weights are the same)
status=0
REPLIB_SKIP_SMOKE=1 MPLBACKEND=Agg "$VENV/bin/python" -m pytest -q -m "not slow and not benchmark" \
  --ignore=tests/test_smoke_book.py --ignore=tests/test_browser.py --ignore=tests/test_bench.py \
  --deselect tests/test_notebooks.py::test_source_is_a_myst_notebook_that_round_trips \
  --deselect tests/test_models_proteinbert.py::test_port_matches_keras_every_block \
  -p no:cacheprovider "$@" || status=$?
if [ "${LOWEST_CHAPTERS:-1}" != 0 ]; then
  echo "== the smoke profile of every chapter, the claim check and the strict book build at the floors"
  "$VENV/bin/python" -m bookkit.book.mathjax >/dev/null
  MPLBACKEND=module://matplotlib_inline.backend_inline "$VENV/bin/python" -m replib all --profile smoke || status=$?
fi
exit $status

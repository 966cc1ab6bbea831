#!/usr/bin/env bash
# The tests: unit tests, the smoke run of every chapter with its claim check, the strict book build and
# the browser test of the built book (skipped with a reason when Chromium is not installed).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source scripts/_mirror.sh
exec .venv/bin/python -m pytest "$@"

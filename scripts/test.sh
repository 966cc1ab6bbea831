#!/usr/bin/env bash
# The tests: unit tests, the smoke run of every chapter with its claim check, the strict book build and
# the browser test of the built book. As root on Debian/Ubuntu it first installs Chromium and its driver with
# apt (112 MB of chromium packages); elsewhere the browser test is skipped with a reason when Chromium is not installed.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null && { ! command -v chromium || ! command -v chromedriver; } >/dev/null 2>&1; then
  echo "test: installing Debian's chromium and chromium-driver for the browser test (112 MB, more with the libraries the system lacks)"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null; } ||
    echo "warning: chromium not installed; the browser test will be skipped" >&2
fi
bash scripts/setup.sh
source scripts/_mirror.sh
exec .venv/bin/python -m pytest "$@"

#!/usr/bin/env bash
# The main job: every chapter in the default offline profile, the claim check, the strict book build.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source scripts/_mirror.sh
exec .venv/bin/python -m replib all --profile "${PROFILE:-offline}" "$@"

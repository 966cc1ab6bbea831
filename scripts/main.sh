#!/usr/bin/env bash
# The main job: every chapter in the default offline profile for seeds 0 and 1 (SEEDS="0 1"; a claim whose
# verdict depends on the seed is inconclusive), the claim check, the strict book build.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source scripts/_mirror.sh
# shellcheck disable=SC2086
exec .venv/bin/python -m replib all --profile "${PROFILE:-offline}" --seeds ${SEEDS:-0 1} "$@"

# Sourced by main.sh and test.sh: use ../shared/data as the data mirror when it is there and nothing else is set.
if [ -z "${REPLIB_DATA_MIRROR:-}" ] && [ -d "$(pwd)/../shared/data" ]; then
  REPLIB_DATA_MIRROR="$(cd ../shared/data && pwd)"
  export REPLIB_DATA_MIRROR
fi
export MPLBACKEND=${MPLBACKEND:-Agg}

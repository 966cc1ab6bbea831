#!/usr/bin/env bash
# The paper profile of every chapter rehearsed on one GPU machine: each chapter's own notebook at two fractions
# of its paper sizes on full-size random-weight stand-ins (python -m replib rehearsal, bookkit.rehearsal), one
# row per chapter in $OUT/rehearsal.csv (the columns of book/rehearsal.csv), the runs' logs under $OUT/logs.
#
# Runs on a bare Linux box with Python 3.12 and torch (CUDA), transformers 5.x, numpy, pandas, scipy,
# scikit-learn, matplotlib, seaborn, pyyaml, tqdm, joblib, safetensors, sentencepiece, protobuf, filelock
# installed; no internet. What else the chapters import is installed from a folder of wheels; the data come
# from a mirror laid out like shared/data, holding the files the rehearsal reads (the data the mirror lacks are
# replaced by each chapter's declaration, its ``rehearsal["set"]``); a cache folder holds what the stand-ins
# and the classifiers chapter read besides (the stand-ins' tokenizers, WordNet's Debian package).
#
#   bash tools/gpu_rehearsal.sh [F1 F2]
#
# WHEELS (default .gpu/wheels), MIRROR (.gpu/mirror), CACHE (.gpu/cache), OUT (default /tmp/out; $OUT when set,
# as on the device machine). The chapters run cheapest first; each run (one fraction) under its own time limit
# (LIMITS below, seconds: the run is killed with its kernel and its row says "timeout"), the chapter as a whole
# under twice that and a minute for its stand-ins, so that a limit reached loses the least.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
WHEELS=$(realpath "${WHEELS:-.gpu/wheels}")
MIRROR=$(realpath "${MIRROR:-.gpu/mirror}")
CACHE=$(realpath "${CACHE:-.gpu/cache}")
OUT=${OUT:-/tmp/out}
F1=${1:-0.005}  # isoscore needs one 512-token window of its lines: 0.005 of them at least
F2=${2:-0.01}
PY=${PYTHON:-python3}
# chapter and the time limit of one of its runs in seconds, cheapest first (estimates: the report of the commit
# that set them); a chapter whose two runs no longer fit before DEADLINE (seconds from the start) is left out
LIMITS=${LIMITS:-"isoscore:75 training_dynamics:80 cluster_isotropy:70 protein_isotropy:70 manifolds:90 classifiers:120"}
DEADLINE=${DEADLINE:-510}
mkdir -p "$OUT/logs"
t0=$(date +%s)
stamp() { echo "[$(($(date +%s) - t0)) s] $*" | tee -a "$OUT/logs/gpu_rehearsal.log"; }

stamp "installing $(ls "$WHEELS"/*.whl | wc -l) wheels into /tmp/site"
"$PY" -m pip install -q --no-index --no-deps --target /tmp/site "$WHEELS"/*.whl || exit 1
export PYTHONPATH="$ROOT:/tmp/site${PYTHONPATH:+:$PYTHONPATH}" PATH="/tmp/site/bin:$PATH"
export REPLIB_DATA_MIRROR="$MIRROR" REPLIB_CACHE_DIR=/tmp/cache HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
rm -rf /tmp/cache /tmp/work && cp -r "$CACHE" /tmp/cache
"$PY" -c "import papermill, jupytext, nbformat, ipykernel, Bio, parasail, replib, bookkit, torch
print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else '')" \
    2>&1 | tee -a "$OUT/logs/gpu_rehearsal.log" || exit 1
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader >> "$OUT/logs/gpu_rehearsal.log" 2>&1

for item in $LIMITS; do
    chapter=${item%%:*}
    limit=${item##*:}
    if [ $(($(date +%s) - t0 + 2 * limit + 30)) -gt "$DEADLINE" ]; then
        stamp "$chapter: left out, its two runs of up to $limit s no longer fit before $DEADLINE s"
        continue
    fi
    stamp "$chapter: rehearsing at $F1 and $F2 of its paper sizes (limit $limit s a run)"
    timeout -k 10 $((2 * limit + 60)) "$PY" -m replib rehearsal "$chapter" --fraction "$F1" "$F2" \
        --csv "$OUT/rehearsal.csv" --workdir /tmp/work --force --timeout "$limit" > "$OUT/logs/$chapter.log" 2>&1
    stamp "$chapter: exit $? ($(grep "^\[$chapter\]" "$OUT/logs/$chapter.log" | tail -n 1 | cut -c1-200))"
    for p in /proc/[0-9]*; do  # a kernel left by the chapter's outer limit (in a session of its own)
        grep -qz "^IPYTHONDIR=/tmp/work/$chapter/" "$p/environ" 2>/dev/null && kill -9 "${p#/proc/}" 2>/dev/null
    done
    for run in /tmp/work/"$chapter"/f*; do
        [ -d "$run" ] && mkdir -p "$OUT/logs/$chapter/${run##*/}" && cp "$run"/run.log "$run"/forwards.jsonl \
            "$OUT/logs/$chapter/${run##*/}/" 2>/dev/null
    done
done
stamp "done: $OUT/rehearsal.csv"
cat "$OUT/rehearsal.csv" 2>/dev/null

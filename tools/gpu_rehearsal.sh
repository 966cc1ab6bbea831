#!/usr/bin/env bash
# The paper profile of every chapter rehearsed on one GPU machine: each chapter's own notebook at shares
# of its paper sizes on full-size random-weight stand-ins (python -m replib rehearsal, bookkit.rehearsal), one
# row per chapter in $OUT/rehearsal.csv (the columns of book/rehearsal.csv), the runs' logs in $OUT/logs.tar.gz.
#
# Runs on a bare Linux box with Python 3.12 and torch (CUDA), transformers 5.x, numpy, pandas, scipy,
# scikit-learn, matplotlib, seaborn, pyyaml, tqdm, joblib, safetensors, sentencepiece, protobuf, filelock
# installed; no internet. What else the chapters import is installed from a folder of wheels; the data come
# from a mirror laid out like shared/data, holding the files the rehearsal reads (the data the mirror lacks are
# replaced by each chapter's declaration, its ``rehearsal["set"]``); a cache folder holds what the stand-ins
# and the classifiers chapter read besides (the stand-ins' tokenizers, WordNet's Debian package).
#
#   bash tools/gpu_rehearsal.sh
#
# WHEELS (default .gpu/wheels), MIRROR (.gpu/mirror), CACHE (.gpu/cache), OUT (default /tmp/out; $OUT when set,
# as on the device machine). The six chapters run at once, each in its own copy of the tree (a runner locks its
# output folder), with THREADS CPU threads and DEADLINE seconds: its shares run smallest first, and a larger one
# only where the line through the smaller ones' times says it ends in time (--deadline), so a share that does
# not fit loses nothing measured. $OUT gets rehearsal.csv (one row per chapter), logs.tar.gz and the GPU's
# memory in use, a line a second (gpu_memory.csv).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
WHEELS=$(realpath "${WHEELS:-.gpu/wheels}")
MIRROR=$(realpath "${MIRROR:-.gpu/mirror}")
CACHE=$(realpath "${CACHE:-.gpu/cache}")
OUT=${OUT:-/tmp/out}
FRACTIONS=${FRACTIONS:-"0.01 0.03 0.1"}  # isoscore needs one 512-token window of its lines: 0.005 of them at least
CHAPTERS=${CHAPTERS:-"isoscore training_dynamics cluster_isotropy protein_isotropy manifolds classifiers"}
DEADLINE=${DEADLINE:-450}
THREADS=${THREADS:-2}
PY=${PYTHON:-python3}
mkdir -p "$OUT/logs"
t0=$(date +%s)
stamp() { echo "[$(($(date +%s) - t0)) s] $*" | tee -a "$OUT/logs/gpu_rehearsal.log"; }

stamp "installing $(ls "$WHEELS"/*.whl | wc -l) wheels into /tmp/site"
"$PY" -m pip install -q --no-index --no-deps --no-compile --target /tmp/site "$WHEELS"/*.whl || exit 1
export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}" PATH="/tmp/site/bin:$PATH"
export REPLIB_DATA_MIRROR="$MIRROR" REPLIB_CACHE_DIR=/tmp/cache HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
export OMP_NUM_THREADS=$THREADS MKL_NUM_THREADS=$THREADS OPENBLAS_NUM_THREADS=$THREADS
rm -rf /tmp/cache /tmp/work /tmp/roots && cp -r "$CACHE" /tmp/cache
PYTHONPATH="$ROOT:$PYTHONPATH" "$PY" -c "import papermill, jupytext, nbformat, ipykernel, Bio, parasail, replib, bookkit, torch
print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else '')" \
    2>&1 | tee -a "$OUT/logs/gpu_rehearsal.log" || exit 1
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader >> "$OUT/logs/gpu_rehearsal.log" 2>&1
nvidia-smi --query-gpu=timestamp,memory.used --format=csv -l 1 > "$OUT/gpu_memory.csv" 2>/dev/null &
smi=$!

for chapter in $CHAPTERS; do
    tree=/tmp/roots/$chapter
    mkdir -p "$tree" && tar -C "$ROOT" --exclude=./.gpu --exclude=./build --exclude=./.git --exclude=./.venv -cf - . | tar -C "$tree" -xf -
    stamp "$chapter: rehearsing at $FRACTIONS of its paper sizes, $DEADLINE s in all"
    (
        cd "$tree" && PYTHONPATH="$tree:$PYTHONPATH" timeout -k 10 $((DEADLINE + 30)) "$PY" -m replib rehearsal \
            "$chapter" --fraction $FRACTIONS --csv "$OUT/logs/$chapter.csv" --workdir "/tmp/work/$chapter" --force \
            --deadline "$DEADLINE" > "$OUT/logs/$chapter.log" 2>&1
        stamp "$chapter: exit $? ($(grep "^\[$chapter\]" "$OUT/logs/$chapter.log" | tail -n 1 | cut -c1-300))"
    ) &
done
wait $(jobs -p | grep -vx "$smi")
kill "$smi" 2>/dev/null
for chapter in $CHAPTERS; do
    for run in /tmp/work/"$chapter"/"$chapter"/f*; do
        [ -d "$run" ] && mkdir -p "$OUT/logs/$chapter/${run##*/}" && cp "$run"/run.log "$run"/forwards.jsonl \
            "$OUT/logs/$chapter/${run##*/}/" 2>/dev/null
    done
    cp /tmp/roots/"$chapter"/build/runs/rehearsal/notebooks/"$chapter".log "$OUT/logs/$chapter/notebook.log" 2>/dev/null
done
PYTHONPATH="$ROOT:$PYTHONPATH" "$PY" - "$OUT" $CHAPTERS <<'PYEOF'
import sys
from pathlib import Path

from bookkit.bench.rehearsal import read_rows, write_rows

out = Path(sys.argv[1])
rows = [r for ch in sys.argv[2:] for r in read_rows(out / "logs" / f"{ch}.csv")]
write_rows(out / "rehearsal.csv", rows)
PYEOF
tar -C "$OUT" -czf "$OUT/logs.tar.gz" logs && rm -rf "$OUT/logs"
echo "[$(($(date +%s) - t0)) s] done: $OUT/rehearsal.csv"
cat "$OUT/rehearsal.csv"

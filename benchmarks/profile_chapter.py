"""Profile chapters as plain scripts, cold or warm, and compare their records key by key (run by hand).

    PYTHONPATH=. python benchmarks/profile_chapter.py classifiers manifolds --out /tmp/prof [--cache-dir DIR]
    PYTHONPATH=. python benchmarks/profile_chapter.py --compare /tmp/before /tmp/after

Each chapter's code cells (``notebooks/<chapter>.md``) become one script, with the parameters cell's
``profile`` and ``seed`` set as the runner would set them, run in a subprocess under ``cProfile`` with the
kernel's environment (``bookkit.run.execute.kernel_environment``: the runner's malloc settings, no progress
bars). Without ``--cache-dir`` every chapter starts from a new, empty ``REPLIB_CACHE_DIR`` (cold: every
embedding, training run and shard is computed), except the data downloads that are not in the mirror
(WordNet), copied from ``--data-from``. Writes per chapter ``<chapter>.prof`` (pstats),
``<chapter>.records.json`` (every ``record()`` of the run), ``<chapter>.txt`` (the 40 largest costs by
cumulative and by own time) and the wall seconds. ``--compare`` prints every recorded key whose value
differs between two output folders (and the keys only one has); nothing is asserted here.
"""

from __future__ import annotations

import argparse
import json
import math
import pstats
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import jupytext

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bookkit.run.execute import kernel_environment  # noqa: E402

PRELUDE = "from IPython.display import display\n"
EPILOGUE = (
    "\nimport json as _json\nfrom replib.record import RECORDED as _R\n"
    "with open({path!r}, 'w') as _f:\n    _json.dump(_R, _f, indent=0, sort_keys=True, default=str)\n"
)


def chapter_script(chapter: str, profile: str, seed: int, records: Path) -> str:
    """The chapter's code cells as one script, parameters injected after the parameters cell."""
    nb = jupytext.read(str(ROOT / "notebooks" / f"{chapter}.md"), fmt="md:myst")
    parts = [PRELUDE]
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        lines = [l for l in cell.source.splitlines() if not l.lstrip().startswith(("%", "!"))]
        parts.append("\n".join(lines) + "\n")
        if "parameters" in cell.metadata.get("tags", []):
            parts.append(f"profile = {profile!r}\nseed = {seed!r}\n")
    parts.append(EPILOGUE.format(path=str(records)))
    return "\n".join(parts)


def profile_chapter(chapter: str, out: Path, profile: str, seed: int, cache_dir: Path | None, data_from: Path):
    out.mkdir(parents=True, exist_ok=True)
    script = out / f"{chapter}.py"
    records = out / f"{chapter}.records.json"
    script.write_text(chapter_script(chapter, profile, seed, records))
    env = kernel_environment(profile, ROOT, None)
    env["MPLBACKEND"] = "Agg"
    cold = cache_dir is None
    cache = Path(tempfile.mkdtemp(prefix=f"replib-cold-{chapter}-")) if cold else cache_dir
    if cold and (data_from / "wordnet").exists():  # not in the mirror: a download, not a computation
        shutil.copytree(data_from / "wordnet", cache / "data" / "wordnet")
    env["REPLIB_CACHE_DIR"] = str(cache)
    work = Path(tempfile.mkdtemp(prefix="replib-prof-cwd-"))
    cmd = [sys.executable, "-m", "cProfile", "-o", str(out / f"{chapter}.prof"), str(script)]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, env=env, cwd=work, stdout=open(out / f"{chapter}.log", "w"), stderr=subprocess.STDOUT)
    seconds = time.monotonic() - t0
    if cold:
        shutil.rmtree(cache, ignore_errors=True)
    shutil.rmtree(work, ignore_errors=True)
    if proc.returncode != 0:
        print(f"{chapter}: exited {proc.returncode} after {seconds:.0f} s (log {out / f'{chapter}.log'})")
        return
    with open(out / f"{chapter}.txt", "w") as f:
        f.write(f"{chapter}: {seconds:.1f} s wall ({'cold' if cold else 'warm'} cache)\n")
        stats = pstats.Stats(str(out / f"{chapter}.prof"), stream=f)
        stats.sort_stats("cumulative").print_stats(40)
        stats.sort_stats("tottime").print_stats(40)
    print(f"{chapter}: {seconds:.1f} s wall; profile {out / f'{chapter}.txt'}")


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def compare(before: Path, after: Path) -> int:
    """Print every record that differs between two output folders; the number of differences."""
    n = 0
    for fa in sorted(before.glob("*.records.json")):
        fb = after / fa.name
        if not fb.exists():
            continue
        a, b = json.loads(fa.read_text()), json.loads(fb.read_text())
        diff = [k for k in sorted(set(a) | set(b)) if k not in a or k not in b or not _same(a[k], b[k])]
        print(f"{fa.name.split('.')[0]}: {len(a)} and {len(b)} records, {len(diff)} differ")
        for k in diff:
            print(f"  {k}: {a.get(k, '<absent>')!r} -> {b.get(k, '<absent>')!r}"[:300])
        n += len(diff)
    return n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("chapters", nargs="*")
    ap.add_argument("--out", type=Path, default=Path("build/profile"))
    ap.add_argument("--profile", default="offline")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cache-dir", type=Path, help="a cache to use (warm); default: a new empty one per chapter")
    ap.add_argument("--data-from", type=Path, default=Path.home() / ".cache" / "replib" / "data")
    ap.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    args = ap.parse_args()
    if args.compare:
        return 1 if compare(*args.compare) else 0
    for chapter in args.chapters:
        profile_chapter(chapter, args.out, args.profile, args.seed, args.cache_dir, args.data_from)
    return 0


if __name__ == "__main__":
    sys.exit(main())

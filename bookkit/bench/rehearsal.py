"""The rehearsal's driver: a chapter's own notebook run in the ``paper`` profile at a fraction of its sample
sizes, each paper model replaced by its full-size random-weight architecture, timed, and one row per chapter
(part ``all``) in ``book/rehearsal.csv``, shown on the book's rehearsal page (issue 39, item 4).

``python -m replib rehearsal [CHAPTER ...] --fraction F`` runs, for each chapter whose row is not ``ok`` yet
(``--force``: every one), the book's own runner (``python -m replib run CHAPTER --profile paper --rehearsal
--model FOLDER ...``) in a child process, with

* the stand-ins: each paper model with a full-size architecture (:data:`replib.models.fullsize.FULLSIZE`) written
  once as a model folder (:func:`replib.models.fullsize.save_fullsize`, random weights), the others as they are;
* an IPython start-up file in the kernel (``IPYTHONDIR``) that calls :func:`replib.rehearsal.install`: the
  profile's sample sizes scaled to the fraction and every forward pass logged;
* the data of ``REPLIB_DATA_MIRROR`` (the caller's environment), and a cache of its own for each run (the inputs
  of ``$REPLIB_CACHE_DIR`` linked in, :data:`_INPUTS`): nothing is read from an earlier run's computations.

The row's cost is :func:`replib.rehearsal.chapter_cost` of the logged batches and of the CPU seconds of the
whole process tree (``os.wait4``); its peak memory the tree's largest resident set (the kernel's), at the
fraction; its cache the weights the paper profile downloads (float32, parameters counted from the
configurations) and what a run writes in its cache, at the full size on the line through the shares.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path

from replib._io import cache_root, read_csv, write_csv_atomic
from replib.config import profile_params, takes_models
from replib.models.fullsize import FULLSIZE, parameter_count, save_fullsize
from replib.rehearsal import SIZES, at_full, chapter_cost, scaled_params

from ..project import find_root, toc_chapters
from ..run.execute import completed

__all__ = [
    "COLUMNS", "dir_bytes", "predicted_wall", "rehearse", "rehearse_chapter", "stand_ins",
    "write_rows",
]  # fmt: skip

#: the columns of book/rehearsal.csv, in order
COLUMNS = (
    "chapter",
    "part",
    "model",
    "data",
    "fraction_of_paper",
    "extrapolation",
    "cpu_seconds",
    "peak_rss_gb",
    "cache_gb",
    "status",
    "t4_hours_estimate",
    "l4_hours_estimate",
    "note",
)
#: the cache's inputs a rehearsal reads (data sets fetched, tokenizers, word vectors, built tiny models, the training
#: chapter's trained runs that the protein chapter reads); the rest of its cache starts empty
_INPUTS = ("data", "fullsize", "static", "tiny", "proteinbert", "training")
#: a chapter's row: the ``paper`` profile as a whole
ALL = "all"
_GB = 1e9
#: the start-up file of the chapter's kernel: at its first cell (so that the kernel answers papermill at once),
#: the rehearsal's sizes and logging (:func:`replib.rehearsal.install`) and its priority (a kernel starts a new
#: session, whose scheduling group would otherwise have the default weight)
_STARTUP = """import os


def _rehearse(*args):
    get_ipython().events.unregister("pre_run_cell", _rehearse)
    from replib.rehearsal import install

    install({chapter!r}, {fraction!r}, {log!r})
    if os.nice(0) > 0 and os.path.exists("/proc/self/autogroup"):
        try:
            with open("/proc/self/autogroup", "w") as fh:
                fh.write(str(os.nice(0)))
        except OSError:
            pass


get_ipython().events.register("pre_run_cell", _rehearse)
"""


def dir_bytes(folder: Path) -> int:
    """Bytes of the files under ``folder`` (a missing folder counts 0; files that vanish meanwhile too)."""
    total = 0
    for root, _, files in os.walk(folder):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, name)).st_size
    return total


def write_rows(path: Path, rows: Iterable[dict]) -> None:
    """Write the rows atomically, in :data:`COLUMNS` order."""
    write_csv_atomic(path, ({k: row.get(k, "") for k in COLUMNS} for row in rows), COLUMNS)


def stand_ins(chapter: str, folder: Path) -> list[str]:
    """The models the rehearsal gives the chapter (``--model``), in the order of its ``paper`` profile's: a
    folder with the full-size random-weight architecture of each model that has one (written under ``folder``
    when missing), the others' specs as they are (a packaged model)."""
    out = []
    for spec in profile_params(chapter, "paper")["models"]:
        if spec in FULLSIZE and FULLSIZE[spec].config != "ProteinBERT":
            target = Path(folder) / spec
            if not target.exists():
                save_fullsize(spec, target)
            spec = str(target)
        out.append(spec)
    return out


def rehearse_chapter(
    chapter: str, fractions, workdir: Path, root: Path, *, profile: str = "paper", models=None,
    timeout: float = 7200.0, deadline: float | None = None,
) -> dict:  # fmt: skip
    """Run the chapter's own notebook through the book's runner at each share of its sample sizes in
    ``fractions`` (see the module docstring; two shares give the start-up apart from the work that grows, and
    the growth of peak memory) and return its row; ``profile`` and ``models`` (specs as they are, no stand-ins
    built) are for tests on tiny models.

    ``deadline``: seconds for the chapter as a whole (stand-ins included). The shares run smallest first; a
    larger one runs only when :func:`predicted_wall` of it ends before the deadline, and each run is stopped at
    the deadline. The row rests on the shares that ran to the end (its note names the others), so one share
    that did not fit loses nothing measured."""
    fractions = sorted(fractions)
    try:
        scaled_params(chapter, profile_params(chapter, profile), fractions[-1])
    except ValueError as exc:  # a size the fraction cannot scale: not run, the row says why
        return {"chapter": chapter, "part": ALL, "status": "missing", "fraction_of_paper": f"{fractions[-1]:.3g}",
                "note": f"not rehearsed: {exc}"}  # fmt: skip
    t0 = time.monotonic()
    if models is None:
        models = [] if not takes_models(chapter) else stand_ins(chapter, Path(workdir) / "models")
    work = Path(workdir) / chapter
    runs, left_out = [], []
    for f in fractions:
        limit = timeout if deadline is None else min(timeout, deadline - (time.monotonic() - t0))
        ok = [r for r in runs if r["status"] == "ok"]
        if runs and (not ok or predicted_wall([(r["fraction"], r["wall"]) for r in ok], f) > limit):
            left_out.append(f"{f:g} (predicted past the deadline)" if ok else f"{f:g} (a smaller share failed)")
            continue
        runs.append(_run(chapter, f, work / f"f{f:g}", root, profile, models, max(limit, 1.0)))
    done = [r for r in runs if r["status"] == "ok"]
    left_out += [f"{r['fraction']:g} ({r['status']})" for r in runs if r["status"] != "ok"]
    status = "ok" if done else runs[0]["status"]
    runs = done or runs
    shares, rss = [r["fraction"] for r in runs], [r["peak_rss_gb"] for r in runs]
    peak = max(max(rss), at_full(shares, rss)) if len(set(shares)) > 1 else rss[-1]
    row = {
        "chapter": chapter, "part": ALL, "model": "; ".join(Path(m).name for m in models) or "(its own)",
        "data": _data_note(chapter), "fraction_of_paper": f"{shares[-1]:.3g}",
        "extrapolation": f"{1 / shares[-1]:.3g}", "cpu_seconds": round(sum(r["cpu"] for r in runs), 1),
        "peak_rss_gb": round(peak, 2), "status": status,
        "cache_gb": round(max(at_full(shares, [r["cache_gb"] for r in runs]), 0.0) + _weights_gb(models), 2),
        "note": f"shares {', '.join(f'{f:g}' for f in shares)}; peak memory "
        + ("at full size by the line through the measured (" + ", ".join(f"{m:.2f}" for m in rss) + " GB)"
           if len(set(shares)) > 1 else "at the share measured") + f"; wall {time.monotonic() - t0:.0f} s here"
        + "".join(f"; share {x} left out" for x in left_out)
        + "".join(f"; share {r['fraction']:g} {r['wall']:.0f} s" for r in runs),
    }  # fmt: skip
    if status == "ok":
        cost = chapter_cost([(r["fraction"], r["cpu"], r["log"]) for r in runs])
        row.update({k: f"{cost[k]:.3g}" for k in ("t4_hours_estimate", "l4_hours_estimate")})
    return row


def predicted_wall(measured, fraction: float) -> float:
    """Seconds a run at ``fraction`` should take, from ``measured`` ``(share, seconds)`` pairs of earlier runs:
    the line through them (:func:`replib.rehearsal.at_full` at that share), or from one run the line through the
    origin (its start-up counted as growing with the items, an upper bound)."""
    shares, seconds = zip(*measured)
    return at_full([s / fraction for s in shares], seconds)


def _run(chapter: str, fraction: float, work: Path, root: Path, profile: str, models: list, timeout: float) -> dict:
    """One run of the chapter's notebook at ``fraction``: its status, CPU seconds and peak memory (the process
    tree's, ``os.wait4``) and its forward log."""
    startup = work / "ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True, exist_ok=True)
    log = work / "forwards.jsonl"
    log.unlink(missing_ok=True)
    (startup / "00-rehearsal.py").write_text(_STARTUP.format(chapter=chapter, fraction=fraction, log=str(log)))
    cmd = [sys.executable, "-m", "replib", "--root", str(root), "run", chapter, "--profile", profile, "--force"]
    cmd += ["--timeout-scale", "100"]  # the rehearsal's own ``timeout`` bounds it (CPU, not the profile's GPU)
    cmd += [a for m in models for a in ("--model", m)] + (["--rehearsal"] if profile == "paper" and models else [])
    env = dict(os.environ, IPYTHONDIR=str(work / "ipython"), REPLIB_CACHE_DIR=str(_cold_cache(work / "cache")))
    t0 = time.monotonic()
    with open(work / "run.log", "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=str(root))
        status, rusage = _wait(proc.pid, timeout)
    runs = "rehearsal" if "--rehearsal" in cmd else profile
    if status == "ok" and not completed(Path(root) / "build" / "runs" / runs / "notebooks" / f"{chapter}.ipynb"):
        status = "failed"
    out = dict(cache_gb=dir_bytes(work / "cache") / _GB, wall=time.monotonic() - t0, fraction=fraction, status=status)
    return out | dict(cpu=rusage.ru_utime + rusage.ru_stime, peak_rss_gb=rusage.ru_maxrss * 1024 / _GB, log=log)


def _cold_cache(folder: Path) -> Path:
    """An empty cache folder for one run (embeddings and the chapters' computations are made, never read from
    an earlier run), with the inputs of the current cache linked in (:data:`_INPUTS`)."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for name in _INPUTS:
        if (cache_root() / name).exists():
            (folder / name).symlink_to(cache_root() / name)
    return folder


def _data_note(chapter: str) -> str:
    """The data replaced because the mirror lacks the profile's (``SIZES[chapter]["set"]``), or ``mirror``."""
    replaced = SIZES.get(chapter, {}).get("set", {})
    return "mirror" + "".join(f"; {k}={_shown(v)}" for k, v in replaced.items())


def _shown(value) -> str:
    """A replaced parameter as the table shows it: lists space-separated, a mapping's items comma-separated,
    a size of None (the whole split) left out."""
    if isinstance(value, dict):
        return ", ".join(f"{k}: {_shown(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return " ".join(_shown(v) for v in value if v is not None)
    return str(value)


def _weights_gb(models: Iterable[str]) -> float:
    return sum(4 * parameter_count(Path(m).name) for m in models if Path(m).name in FULLSIZE) / _GB


def _wait(pid: int, timeout: float):
    """Wait for the child (it and every process below it killed after ``timeout`` seconds: the chapter's kernel
    runs in a session of its own, and would go on holding the GPU): its status and the resource usage of it and
    the descendants it waited for."""
    deadline = time.monotonic() + timeout
    while True:
        done, code, rusage = os.wait4(pid, os.WNOHANG)
        if done:
            return ("ok" if os.waitstatus_to_exitcode(code) in (0, 1) else "failed"), rusage
        if time.monotonic() > deadline:
            for p in [pid, *_descendants(pid)]:  # listed before any is killed (then they would be re-parented)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(p, 9)
            _, _, rusage = os.wait4(pid, 0)
            return "timeout", rusage
        time.sleep(0.5)


def _descendants(pid: int) -> list[int]:
    """The processes below ``pid``, from ``/proc`` (none where there is none)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(stat.parent.name))
    out, todo = [], [pid]
    while todo:
        kids = children.get(todo.pop(), [])
        out += kids
        todo += kids
    return out


def unmeasured_row(chapter: str, fractions) -> dict:
    """The row of a chapter not rehearsed: status ``missing``, no number, and the command that measures it."""
    shares = " ".join(f"{f:g}" for f in sorted(fractions))
    return {"chapter": chapter, "part": ALL, "status": "missing",
            "note": f"not yet measured on a GPU: tools/gpu_rehearsal.sh on a GPU machine measures it "
            f"(python -m replib rehearsal {chapter} --fraction {shares})"}  # fmt: skip


def rehearse(
    chapters: Iterable[str], csv_path: Path, workdir: Path, root: Path, *, fractions=(0.01, 0.1), force: bool = False,
    unmeasured: bool = False, **kw,
) -> list[dict]:  # fmt: skip
    """Rehearse each of ``chapters`` whose row in ``csv_path`` is not ``ok`` (all of them with ``force``),
    writing the CSV after each; other chapters' rows are kept. With ``unmeasured`` nothing runs: such a
    chapter gets :func:`unmeasured_row`. ``kw`` goes to :func:`rehearse_chapter`."""
    rows = {r["chapter"]: r for r in read_csv(csv_path, COLUMNS) if r["part"] == ALL}
    for chapter in chapters:
        if not force and rows.get(chapter, {}).get("status") == "ok":
            print(f"[{chapter}] ok in {csv_path}: kept", flush=True)
            continue
        if unmeasured:
            rows[chapter] = unmeasured_row(chapter, fractions)
            write_rows(csv_path, _book_order(rows))
            continue
        print(f"[{chapter}] rehearsing at {', '.join(map(str, fractions))} of its paper sizes ...", flush=True)
        rows[chapter] = rehearse_chapter(chapter, fractions, workdir, root, **kw)
        r = rows[chapter]
        print(f"[{chapter}] {r['status']}: {r.get('cpu_seconds', '-')} CPU s, peak {r.get('peak_rss_gb', '-')} GB, "
              f"{r.get('t4_hours_estimate', '-')} T4-h {r.get('note', '')}", flush=True)  # fmt: skip
        write_rows(csv_path, _book_order(rows))
    return _book_order(rows)


def _book_order(rows: dict) -> list[dict]:
    """The rows in the book's chapter order (``_toc.yml``), others last."""
    order = toc_chapters(find_root())
    return sorted(rows.values(), key=lambda r: order.index(r["chapter"]) if r["chapter"] in order else len(order))

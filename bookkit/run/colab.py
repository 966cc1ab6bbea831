"""A chapter's "Run all" on Colab, from the first cell to a report the book can merge.

The runnable notebook (:func:`bookkit.notebooks.runnable_notebook`) starts with the Colab bootstrap, which
installs the book and calls :func:`start`, and ends with a cell that calls :func:`finish`; both do nothing
outside Colab (the runner executes the same notebook and checks its claims itself).

- :func:`start` mounts Google Drive and keeps the caches there (data downloads, model weights, embedding
  shards, training checkpoints: a chapter started again after a disconnect reads what it stored and computes
  the rest), logs the models and data the chapter reads, and after every cell prints how far the chapter is
  and about how long it has left (from the rehearsal's estimate for a T4).
- :func:`finish` checks the chapter's claims on what this kernel recorded (:data:`replib.record.RECORDED`),
  exactly as the runner checks an executed notebook, and writes a runner report with the execution's
  fingerprint (:func:`bookkit.run.reuse.fingerprint`) to Drive: ``python -m replib report merge`` takes it like any
  other report, and the book built from the merged report shows it.
"""

from __future__ import annotations

import os
import time
from datetime import datetime, timezone
from pathlib import Path

from replib._io import write_json_atomic
from replib.profiles import on_colab, resolve_profile
from replib.provenance import MODELS_LOG_ENV, read_data_log, read_models_log
from replib.record import RECORDED

from ..claims.claims import CLAIMS_SUFFIX, load_claims
from ..claims.seeds import check_chapter_seeds
from ..claims.status import summarize
from . import reuse
from .run_report import bind_to_paper_models, chapter_entry, format_table, new_report

__all__ = ["DRIVE", "finish", "progress_line", "start"]

#: where Colab mounts Google Drive
DRIVE = "/content/drive"
#: this kernel's session: chapter, start time, the Drive folder, the book's folder, the progress hook
SESSION: dict = {}


def _duration(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds < 5400 else f"{seconds / 3600:.1f} h"


def progress_line(done: int, total: int, elapsed: float, t4_hours: float | None) -> str:
    """One line after a cell: cells done, time so far, and what is left of the rehearsal's T4 estimate (none
    without one; "over the estimate" once the chapter has taken longer)."""
    line = f"[replib] {done}/{total} cells, {_duration(elapsed)} so far"
    if t4_hours:
        left = t4_hours * 3600 - elapsed
        est = f"{t4_hours:.2g} T4-hours rehearsed"
        line += f"; about {_duration(left)} left ({est})" if left > 0 else f"; over the estimate ({est})"
    return line


def start(chapter: str, *, book_dir: str, cells: int, t4_hours: float | None = None, drive: str = DRIVE) -> None:
    """On Colab: mount Drive at ``drive``, keep the caches on it (unless ``REPLIB_CACHE_DIR``/``HF_HOME`` are
    set already), log the models and data this run reads, and print progress after every cell. Elsewhere
    nothing."""
    if not on_colab():
        return
    from google.colab import drive as gdrive

    gdrive.mount(drive)
    home = Path(drive) / "MyDrive" / "replib"  # the book's folder on Drive: cache/ and runs/<profile>/ (the reports)
    os.environ.setdefault("REPLIB_CACHE_DIR", str(home / "cache"))
    os.environ.setdefault("HF_HOME", str(home / "cache" / "huggingface"))
    log = home / "runs" / "logs" / f"{chapter}.jsonl"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.unlink(missing_ok=True)  # this run's models and data only
    os.environ[MODELS_LOG_ENV] = str(log)
    RECORDED.clear()  # a "Run all" again in the same kernel starts from nothing
    _stop_progress()
    SESSION.update(chapter=chapter, t0=time.time(), home=home, root=Path(book_dir), log=log, done=0)
    print(f"[replib] caches on Drive: {os.environ['REPLIB_CACHE_DIR']} (a run started again resumes from them)")
    from IPython import get_ipython  # Colab always has IPython

    ip = get_ipython()
    if ip is None:
        return

    def after_cell(result=None):
        SESSION["done"] += 1
        print(progress_line(SESSION["done"], cells, time.time() - SESSION["t0"], t4_hours))

    ip.events.register("post_run_cell", after_cell)
    SESSION["hook"] = (ip, after_cell)


def _stop_progress() -> None:
    hook = SESSION.pop("hook", None)
    if hook:
        ip, cb = hook
        try:
            ip.events.unregister("post_run_cell", cb)
        except ValueError:
            pass


def finish(chapter: str, profile: str | None, **parameters) -> Path | None:
    """On Colab: check the chapter's claims on this kernel's records and write its report, with the execution's
    fingerprint, to ``<Drive>/replib/runs/<profile>/<chapter>.report.json`` (atomically); print the claims and
    how to merge the report. Returns its path (None elsewhere). ``parameters``: the notebook's ``seed``,
    ``models`` and ``part``, as the runner would inject them (None: not set)."""
    if not on_colab():
        return None
    _stop_progress()
    if SESSION.get("chapter") != chapter:
        raise RuntimeError(f"{chapter}: the first cell (the Colab bootstrap) did not run in this kernel: run all")
    profile = resolve_profile(profile)
    root = SESSION["root"]
    params = {k: v for k, v in parameters.items() if v is not None}
    if "part" in params:  # a part's claims need the other parts' records: the runner merges those
        print(
            f"[replib] part {params['part']!r} done; its caches are on Drive. A part's report comes from the runner: "
            f"python -m replib run {chapter} --profile {profile} --part {params['part']} (run all parts, then merge)"
        )
        return None
    models = params.get("models")
    if isinstance(models, str):
        models = params["models"] = [models]
    claims = load_claims(root / "notebooks" / f"{chapter}{CLAIMS_SUFFIX}")
    results = check_chapter_seeds(claims, profile, {None: dict(RECORDED)}, {None: None})
    if models:
        results = bind_to_paper_models(results, models, False)
    fp = reuse.fingerprint(root, chapter, {"profile": profile, **params})
    seconds = round(time.time() - SESSION["t0"], 1)
    report = new_report(profile, root, {chapter: models} if models else None, False, None)
    log = SESSION["log"]
    entry = chapter_entry(claims, "ok", None, seconds, None, models=read_models_log(log), data=read_data_log(log))
    entry.update(fingerprint=fp, where="colab")
    if models:
        entry["models_override"] = models
    report["chapters"].append(entry)
    report["claims"] = results
    report["summary"] = summarize(results, report["chapters"])
    report["finished"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    out = SESSION["home"] / "runs" / profile / f"{chapter}.report.json"
    write_json_atomic(out, report)
    print(format_table(report))
    print(
        f"\n[replib] report written to {out} ({_duration(seconds)}). Into the book: "
        f"python -m replib report merge build/runs/{profile}/report.json {out.name} -o build/runs/{profile}/report.json"
    )
    return out

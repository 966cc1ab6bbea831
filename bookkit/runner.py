"""Headless runner: execute every chapter with papermill, then check every claim.

Each notebook runs in its own ``papermill`` subprocess with the profile injected as a parameter,
a per-cell and a per-notebook wall-clock limit; a failing or timed-out chapter does not stop the
others. Claims are checked from the executed notebooks; the report is written as JSON.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

import nbformat

from replib._io import write_json_atomic
from replib.provenance import MODELS_LOG_ENV, read_models_log
from replib.record import read_records

from . import reuse
from .claims import ChapterClaims, ClaimsFileError, closing_line, load_claims, summarize
from .notebooks import write_runnable
from .project import CHAPTER_SUFFIX, find_root, git_commit, toc_chapters
from .seeds import check_chapter_seeds


def discover_chapters(root: Path | None = None, only: list[str] | None = None) -> list[ChapterClaims]:
    """Chapters = MyST notebooks ``notebooks/<name>.md`` with a ``<name>.claims.yml`` beside them, in
    ``_toc.yml`` order."""
    root = Path(root or find_root())
    notebooks_dir = root / "notebooks"
    paths = {}
    for claims_path in sorted(notebooks_dir.glob("*.claims.yml")):
        name = claims_path.name[: -len(".claims.yml")]
        if not (notebooks_dir / f"{name}{CHAPTER_SUFFIX}").exists():
            raise FileNotFoundError(f"{claims_path} has no chapter {name}{CHAPTER_SUFFIX} beside it")
        paths[name] = claims_path
    order = toc_chapters(root)
    names = sorted(paths, key=lambda n: (order.index(n) if n in order else len(order), n))
    if only is not None:
        if not only:
            raise ValueError("--chapters needs at least one chapter name")
        unknown = set(only) - set(paths)
        if unknown:
            raise ValueError(f"unknown chapter(s) {sorted(unknown)}; known: {names}")
        names = [n for n in names if n in only]
    out = []
    for n in names:  # a malformed claims file fails its own chapter only
        try:
            out.append(load_claims(paths[n]))
        except ClaimsFileError as exc:
            out.append(ChapterClaims(chapter=n, title=n, path=paths[n], claims=[], error=f"claims file: {exc}"))
    return out


class RunLockedError(RuntimeError):
    """Another runner is writing into the same output folder."""


@contextmanager
def run_lock(out_dir: Path):
    """One runner at a time per output folder: ``out_dir/.lock`` holds the owner's pid; a lock left by a
    process that no longer exists is taken over. The report, the executed notebooks and the logs of two
    concurrent runs can therefore never interleave."""
    out_dir.mkdir(parents=True, exist_ok=True)
    lock = out_dir / ".lock"
    for _ in range(2):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            break
        except FileExistsError:
            try:
                pid = int(lock.read_text().strip() or 0)
                os.kill(pid, 0)
            except (ValueError, ProcessLookupError, FileNotFoundError):
                lock.unlink(missing_ok=True)  # stale: its runner is gone
                continue
            except PermissionError:
                pass
            raise RunLockedError(
                f"another runner (pid {pid}) is writing into {out_dir}; wait for it or use another output folder"
            ) from None
    else:  # pragma: no cover - a third runner won the race
        raise RunLockedError(f"another runner took {out_dir} at the same moment")
    try:
        os.write(fd, str(os.getpid()).encode())
        os.close(fd)
        yield
    finally:
        lock.unlink(missing_ok=True)


def execution_failure(nb) -> str | None:
    """Why an executed notebook did not complete (papermill's exception flag or an error output), or None."""
    pm = nb.metadata.get("papermill") or {}
    for cell in nb.cells:
        for out in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
            if out.get("output_type") == "error":
                return f"{out.get('ename', 'Error')}: {out.get('evalue', '')}"[:500]
    if pm.get("exception"):
        return "papermill recorded an exception"
    return None


def environment_info(root: Path | None = None) -> dict:
    """Package versions, device and git commit for the report."""
    info = {"python": platform.python_version(), "platform": platform.platform(), "packages": {}}
    from importlib import metadata

    for pkg in (
        "numpy",
        "scipy",
        "scikit-learn",
        "torch",
        "transformers",
        "pandas",
        "papermill",
        "jupyter-book",
        "IsoScore",
        "biopython",
        "parasail",
        "scikit-dimension",
        "sentence-transformers",
    ):
        try:
            info["packages"][pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    try:
        import torch

        info["device"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
    except Exception:
        info["device"] = "cpu"
    info["git_commit"] = git_commit(root) if root is not None else None
    return info


#: glibc malloc settings for the chapter kernels. By default every array above 32 MiB (a token pool,
#: a product, a temporary of an elementwise step) is a fresh ``mmap`` returned to the system when freed, so
#: each one is page-faulted and zeroed again: on the 2-core build machine that cost as much as the
#: arithmetic (an elementwise pass over 75,000 x 384 float64: 0.030 s, of which 0.016 s page faults).
#: With these, freed memory stays in the process heap and is reused: the cluster chapter's warm
#: computation went from 208 s to 172 s with identical records and about 10 % more peak memory
#: (book/running.md). Only glibc reads them; elsewhere they are inert.
KERNEL_MALLOC_ENV = {"MALLOC_MMAP_THRESHOLD_": str(2**31 - 1), "MALLOC_TRIM_THRESHOLD_": str(2**36)}


def execute_notebook(
    src: Path,
    dst: Path,
    profile: str,
    timeout: int,
    cell_timeout: int | None = None,
    extra_parameters: dict | None = None,
    log=None,
    models_log: Path | None = None,
    root: Path | None = None,
    cwd: Path | None = None,
) -> tuple[str, str | None, float]:
    """Run one notebook (``.ipynb``) with papermill in a subprocess, with ``root`` on ``PYTHONPATH`` and
    ``cwd`` (default: the notebook's folder) as working directory.

    Returns
    -------
    (status, error, seconds)
        status is ``"ok"``, ``"error"`` or ``"timeout"``.
    """
    dst.parent.mkdir(parents=True, exist_ok=True)
    params = {"profile": profile, **(extra_parameters or {})}
    cwd = Path(cwd or src.parent)
    cmd = [
        sys.executable,
        "-m",
        "papermill",
        str(src),
        str(dst),
        "--cwd",
        str(cwd),
        "--kernel",
        "python3",
        "--log-output",
        "--no-progress-bar",
        "--execution-timeout",
        str(cell_timeout or timeout),
    ]
    for k, v in params.items():
        if isinstance(v, (list, tuple, dict)):  # papermill -p passes strings; YAML (JSON) keeps the list
            cmd += ["-y", json.dumps({k: list(v) if isinstance(v, tuple) else v})]
        else:
            cmd += ["-p", k, str(v)] if not isinstance(v, (int, float)) else ["-p", k, repr(v)]
    env = dict(os.environ)
    if root is not None:  # the chapter imports this project's replib
        env["PYTHONPATH"] = os.pathsep.join([str(root), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    # the inline backend: with Agg (or an inherited MPLBACKEND=Agg) figures never reach the notebook/book
    env["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    env["REPLIB_PROFILE"] = profile
    # no progress bars in the executed notebooks (the book shows their outputs): tqdm reads TQDM_DISABLE,
    # the Hub and transformers' bars ("Loading weights") HF_HUB_DISABLE_PROGRESS_BARS
    env.setdefault("TQDM_DISABLE", "1")
    env.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    for k, v in KERNEL_MALLOC_ENV.items():  # a value the user set wins
        env.setdefault(k, v)
    if models_log is not None:  # replib.models notes every model the chapter loads here
        Path(models_log).unlink(missing_ok=True)
        env[MODELS_LOG_ENV] = str(models_log)
    t0 = time.monotonic()
    log_path = dst.with_suffix(".log")
    with open(log_path, "w") as logf:
        try:
            proc = subprocess.run(cmd, stdout=logf, stderr=subprocess.STDOUT, env=env, timeout=timeout, cwd=str(cwd))
        except subprocess.TimeoutExpired:
            return "timeout", f"exceeded the chapter limit of {timeout} s (log: {log_path})", time.monotonic() - t0
    seconds = time.monotonic() - t0
    if proc.returncode != 0:
        tail = log_path.read_text().strip().splitlines()[-15:]
        return "error", f"papermill exited {proc.returncode}: " + " | ".join(tail)[-1500:], seconds
    return "ok", None, seconds


def parse_model_options(values, chapters) -> dict[str, list[str]]:
    """``--model`` values to ``{chapter or "*": [specs]}``: ``chapter=SPEC`` for one chapter (``chapter`` one of
    ``chapters``), anything else for every chapter. Order is kept; a chapter's own models replace the global
    ones for it."""
    out: dict[str, list[str]] = {}
    for v in values or []:
        head, sep, tail = str(v).partition("=")
        key, spec = (head, tail) if sep and head in chapters else ("*", str(v))
        if not spec:
            raise ValueError(f"--model {v!r}: empty model spec")
        out.setdefault(key, []).append(spec)
    return out


def _models_for(models: dict | None, chapter: str) -> list[str] | None:
    if not models:
        return None
    return models.get(chapter) or models.get("*") or None


def bind_to_paper_models(results: list[dict], models: list[str], rehearsal: bool) -> list[dict]:
    """Claims of a run on substituted models: a value compared with a paper's number (a tolerance check)
    belongs to the paper's models, so it becomes ``unverified`` (never "reproduced"); a per-model key that
    the substituted run did not record is ``unverified`` too. Property claims keep their status."""
    what = "paper-scale rehearsal" if rehearsal else "run"
    out = []
    for r in results:
        r = dict(r)
        if r["check"].startswith("tolerance") and r["status"] != "unverified":
            r["detail"] = (
                f"{what} on {', '.join(models)}: value bound to the paper's models, not compared "
                f"(would be: {r['status']}: {r['detail']})"
            )
            r["status"] = "unverified"
        elif r["status"] == "failed" and r["detail"].startswith("value not recorded"):
            r["detail"] = f"{what} on {', '.join(models)}: {r['detail']} (a key of a model that did not run)"
            r["status"] = "unverified"
        r["models"] = list(models)
        if rehearsal:
            r["rehearsal"] = True
        out.append(r)
    return out


_VOLATILE = ("started", "finished", "merged_from")


def _same_outcome(new: dict, old: dict) -> bool:
    """True when every chapter of ``new`` was reused and it says exactly what ``old`` says (apart from when
    it ran): then rewriting the report would only change its timestamps (and rebuild the book for nothing)."""
    if not old or not new["chapters"] or not all(c.get("reused") for c in new["chapters"]):
        return False

    def strip(r):
        return {k: v for k, v in r.items() if k not in _VOLATILE}

    return json.loads(json.dumps(strip(new))) == strip(old)


def _merge_previous(report: dict, path: Path) -> None:
    """Keep the chapters (and their claims) of an earlier report of the same profile that this run did not
    touch; each chapter entry says which run it came from (``run_started``)."""
    if not path.exists():
        return
    try:
        old = json.loads(path.read_text())
    except (OSError, ValueError):
        return
    if old.get("profile") != report["profile"] or bool(old.get("rehearsal")) != bool(report.get("rehearsal")):
        return
    ran = {c["chapter"] for c in report["chapters"]}
    kept = [c for c in old.get("chapters", []) if c["chapter"] not in ran]
    for c in kept:
        c.setdefault("run_started", old.get("started"))
    report["chapters"] = kept + report["chapters"]
    report["claims"] = [c for c in old.get("claims", []) if c["chapter"] not in ran] + report["claims"]
    report["merged_from"] = [old.get("started"), report["started"]]


def notebook_name(chapter: str, seed: int | None, first: bool) -> str:
    """The executed notebook of one chapter and seed: ``<chapter>.ipynb`` for the first (or only) seed, the one
    the book shows; ``<chapter>.seed-<n>.ipynb`` for the others."""
    return f"{chapter}.ipynb" if first or seed is None else f"{chapter}.seed-{seed}.ipynb"


def _previous_report(out_dir: Path) -> dict:
    try:
        return json.loads((out_dir / "report.json").read_text())
    except (OSError, ValueError):
        return {}


def _completed(notebook: Path) -> bool:
    try:
        return execution_failure(nbformat.read(str(notebook), as_version=4)) is None
    except Exception:
        return False


def _execute_seed(
    ch, seed, first, profile, out_dir, root, check_only, timeout_scale, chosen, previous, progress, ref, force=False
):
    """Execute (or, ``check_only``, find) one chapter for one seed: ``(status, error, seconds, records, dst,
    reused)``; an execution whose inputs are unchanged is reused (:mod:`bookkit.reuse`) unless ``force``."""
    dst = out_dir / "notebooks" / notebook_name(ch.chapter, seed, first)
    tag = ch.chapter if seed is None else f"{ch.chapter} seed={seed}"
    reused = None
    if check_only:
        status, error, seconds = (
            ("ok", None, float(previous.get((ch.chapter, seed)) or 0.0))
            if dst.exists()
            else ("error", "not executed", 0.0)
        )
    else:
        limit = int(ch.timeout_for(profile) * timeout_scale)
        progress(f"[{tag}] running profile={profile} (limit {limit} s) ...")
        src = out_dir / "sources" / f"{ch.chapter}.ipynb"  # the runnable notebook built from the .md
        write_runnable(root, ch.chapter, src, ref=ref)
        params = {}
        if chosen:
            params["models"] = chosen
        if seed is not None:
            params["seed"] = seed
        fp = reuse.fingerprint(root, ch.chapter, {"profile": profile, **params})
        kept = None if force else reuse.reusable(dst, fp, _completed)
        if kept is not None:
            status, error, seconds = "ok", None, float(kept.get("seconds") or 0.0)
            reused = kept.get("executed")
            progress(f"[{tag}] unchanged, reused (executed {reused}, {seconds:.0f} s)")
        else:
            reuse.forget(dst)  # a failed or interrupted execution is never reused
            status, error, seconds = execute_notebook(
                src,
                dst,
                profile,
                timeout=limit,
                models_log=out_dir / "models" / f"{ch.chapter}.jsonl",
                root=root,
                cwd=root / "notebooks",
                extra_parameters=params or None,
            )
            progress(f"[{tag}] {status} in {seconds:.0f} s" + (f": {error[:300]}" if error else ""))
            if status == "ok" and dst.exists() and _completed(dst):
                reuse.write_manifest(dst, fp, seconds)
    records = {}
    if dst.exists():
        try:
            executed = nbformat.read(str(dst), as_version=4)
            records = read_records(executed)
            failure = execution_failure(executed)
            if failure and status == "ok":  # e.g. check-only of a notebook that raised after recording
                status, error = "error", f"the executed notebook did not complete: {failure}"
        except Exception as exc:
            status, error = "error", f"cannot read executed notebook: {exc}"
    return status, error, seconds, records, dst, reused


def _run_chapters(
    report,
    found,
    profile,
    out_dir,
    root,
    check_only,
    timeout_scale,
    models,
    rehearsal,
    progress,
    seeds=None,
    force=False,
):
    """Execute (or, ``check_only``, re-check) each chapter, for each seed, and append its entry and claim
    results (combined over the seeds by :func:`~bookkit.seeds.check_chapter_seeds`)."""
    previous = {}  # check-only keeps the run times of the run that executed the notebooks
    if check_only:
        for c in _previous_report(out_dir).get("chapters", []):
            per = c.get("seeds") or {}
            for s, info in per.items():
                previous[(c["chapter"], int(s))] = info.get("seconds", 0.0)
            previous[(c["chapter"], None)] = c.get("seconds", 0.0)
    run_seeds = list(seeds) if seeds else [None]
    ref = report["environment"].get("git_commit")
    for ch in found:
        if ch.error:  # a malformed claims file: this chapter fails, the others run
            progress(f"[{ch.chapter}] not run: {ch.error}")
            report["chapters"].append(
                {
                    "chapter": ch.chapter,
                    "title": ch.title,
                    "status": "error",
                    "error": ch.error,
                    "seconds": 0.0,
                    "notebook": None,
                    "models": [],
                }
            )
            continue
        chosen = _models_for(models, ch.chapter)
        per_seed, records_by_seed, errors_by_seed = {}, {}, {}
        for i, seed in enumerate(run_seeds):
            status, error, seconds, records, dst, reused = _execute_seed(
                ch,
                seed,
                i == 0,
                profile,
                out_dir,
                root,
                check_only,
                timeout_scale,
                chosen,
                previous,
                progress,
                ref,
                force,
            )
            per_seed[seed] = {
                "status": status,
                "error": error,
                "seconds": round(seconds, 1),
                "notebook": str(dst.relative_to(out_dir)),
            }
            if reused:
                per_seed[seed]["reused"] = reused
            records_by_seed[seed] = records
            errors_by_seed[seed] = error if status != "ok" else None
        results = check_chapter_seeds(ch, profile, records_by_seed, errors_by_seed)
        if chosen:
            results = bind_to_paper_models(results, chosen, rehearsal)
        bad = [s for s in run_seeds if per_seed[s]["status"] != "ok"]
        first = per_seed[run_seeds[0]]
        worst = per_seed[bad[0]] if bad else first
        entry = {
            "chapter": ch.chapter,
            "title": ch.title,
            "status": worst["status"],
            "error": (f"seed {bad[0]}: " if bad and bad[0] is not None else "") + worst["error"] if bad else None,
            "seconds": round(sum(p["seconds"] for p in per_seed.values()), 1),
            "notebook": first["notebook"],
            "models": read_models_log(out_dir / "models" / f"{ch.chapter}.jsonl"),
        }
        if all(p.get("reused") for p in per_seed.values()):
            entry["reused"] = True  # every execution kept from an earlier run (same inputs)
        if seeds:
            entry["seeds"] = {str(s): per_seed[s] for s in run_seeds}
        if chosen:
            entry["models_override"] = chosen
        report["chapters"].append(entry)
        report["claims"].extend(results)


def run(
    profile: str = "offline",
    chapters: list[str] | None = None,
    out_dir: Path | None = None,
    timeout_scale: float = 1.0,
    check_only: bool = False,
    progress=print,
    root: Path | None = None,
    models: dict | None = None,
    rehearsal: bool = False,
    seeds: list[int] | None = None,
    force: bool = False,
) -> dict:
    """Execute chapters and check their claims; return (and write) the report.

    Parameters
    ----------
    profile : {"smoke", "offline", "paper"}
    chapters : list of chapter names, optional (default: all)
    out_dir : folder for executed notebooks and ``report.json`` (default ``build/runs/<profile>``)
    timeout_scale : multiply every chapter's time limit (slow machines)
    check_only : do not execute; check the notebooks already in ``out_dir``
    root : project root (``_toc.yml``, ``notebooks/``); default :func:`~bookkit.project.find_root`
    models : ``{chapter or "*": [model specs]}`` (:func:`parse_model_options`), passed as each chapter's
        ``models`` parameter; claims bound to the paper's models are then reported unverified
        (:func:`bind_to_paper_models`)
    rehearsal : label the run a paper-scale rehearsal (``profile="paper"`` with substituted models; needs
        ``models``): the report says so, and it goes to ``build/runs/rehearsal``
    seeds : run each chapter once per seed (its ``seed`` parameter) and combine each claim's verdicts over
        them (:mod:`bookkit.seeds`: a verdict that depends on the seed is ``inconclusive``); default:
        one run with the chapter's own seed. ``check_only`` without seeds re-checks the seeds of the report
        already in ``out_dir``.
    force : execute every chapter even when its inputs are unchanged (by default an execution with the same
        fingerprint as the kept notebook's is reused: :mod:`bookkit.reuse`); the claims are always
        re-checked
    """
    if rehearsal and not models:
        raise ValueError("a rehearsal substitutes models for the paper's: give at least one --model")
    if seeds is not None:
        seeds = [int(s) for s in seeds]
        if not seeds or len(set(seeds)) != len(seeds):
            raise ValueError(f"--seeds needs distinct seeds, got {seeds}")
    root = Path(root or find_root())
    out_dir = Path(out_dir or root / "build" / "runs" / ("rehearsal" if rehearsal else profile))
    if check_only and seeds is None:
        seeds = _previous_report(out_dir).get("seeds")
    started = datetime.now(timezone.utc)
    report = {
        "profile": profile,
        "started": started.isoformat(timespec="seconds"),
        "environment": environment_info(root),
        "chapters": [],
        "claims": [],
    }
    if models:
        report["models_override"] = models
    if rehearsal:
        report["rehearsal"] = True
    if seeds:
        report["seeds"] = seeds
    found = discover_chapters(root, only=chapters)
    if not found:
        raise FileNotFoundError(f"no chapters (notebooks with a .claims.yml) in {root / 'notebooks'}")
    with run_lock(out_dir):
        _run_chapters(
            report, found, profile, out_dir, root, check_only, timeout_scale, models, rehearsal, progress, seeds, force
        )
        # a chapter that failed with no failed claim (e.g. all claims unverified) still counts once
        report["summary"] = summarize(report["claims"], report["chapters"])
        report["finished"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
        on_disk = report
        if chapters is not None:  # a partial run merges into the report of the others, never replaces it
            on_disk = json.loads(json.dumps(report))
            _merge_previous(on_disk, out_dir / "report.json")
            on_disk["summary"] = summarize(on_disk["claims"], on_disk["chapters"])
        if _same_outcome(on_disk, _previous_report(out_dir)):
            report["unchanged"] = True  # every chapter reused and every verdict the same: the report stays as is
            progress("nothing changed since the last run: report.json kept")
        else:
            write_json_atomic(out_dir / "report.json", on_disk)
    return report  # this run's chapters (the file on disk also keeps the chapters of earlier runs)


def format_table(report: dict) -> str:
    """A plain-text table of every claim, then the closing line with every status counted separately
    (:func:`~bookkit.claims.closing_line`)."""
    rows = [("chapter", "key", "status", "value", "paper", "check")]
    for c in report["claims"]:
        v = c["value"]
        v = f"{v:.4g}" if isinstance(v, float) else ("—" if v is None else str(v))
        p = c["paper_value"]
        p = f"{p:.4g}" if isinstance(p, float) else ("—" if p is None else str(p))
        rows.append((c["chapter"], c["key"], c["status"], v[:24], p[:24], c["check"][:40]))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)) for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    for ch in report["chapters"]:
        if ch["status"] != "ok":
            lines.append(f"chapter {ch['chapter']}: {ch['status']}: {ch['error']}")
        for c in report["claims"]:
            if c["chapter"] == ch["chapter"] and c["status"] == "failed":
                lines.append(f"  FAILED {c['key']}: {c['detail']}")
    lines.append(closing_line(report["summary"]))
    return "\n".join(lines)

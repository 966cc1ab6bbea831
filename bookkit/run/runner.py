"""Headless runner: execute every chapter with papermill, then check every claim.

Each notebook runs in its own ``papermill`` subprocess (:mod:`bookkit.run.execute`) with the profile injected as a
parameter, a per-cell and a per-notebook wall-clock limit; a failing or timed-out chapter does not stop the
others, and a malformed claims file fails its own chapter only. Claims are checked from the executed
notebooks (over several seeds by :mod:`bookkit.claims.seeds`); the report is written as JSON
(:mod:`bookkit.run.run_report`). One runner at a time writes into an output folder (:func:`run_lock`).

In parts: run one part of a chapter (``--part``), list the parts (``--list-parts``), and the chapter's report entry
built from every part kept in the output folder (:mod:`bookkit.run.parts`). The parts of a chapter come from the
science (:func:`replib.config.chapter_parts`); a chapter without a configuration there (a test fixture) has none
unless given (:func:`parts_of`).
"""

from __future__ import annotations

import functools
import json
import os
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import filelock
import nbformat

from replib.config import (
    chapter_config,
    chapter_parts,
    chapters,
    execution_order,
    prepare_chapter,
    profile_params,
    require_chapter_models,
    takes_models,
)
from replib.models import ModelUnavailableError, WrongModelKindError, forward_flops_per_token
from replib.profiles import chapter_precision
from replib.provenance import read_data_log, read_models_log
from replib.record import read_records

from ..claims.claims import CLAIMS_SUFFIX, ChapterClaims, ClaimsFileError, load_claims
from ..claims.seeds import check_chapter_seeds
from ..claims.status import summarize
from ..errors import RunLockedError
from ..notebooks import write_runnable
from ..project import CHAPTER_SUFFIX, find_root, toc_chapters
from . import reuse
from .budget import BUDGET_LANES, BUDGET_PROFILE, against, allowed, load_budget
from .execute import completed, execute_notebook, execution_failure
from .lanes import lane_threads, run_lanes
from .part_records import await_parts, merge_records, part_limit, part_row
from .parts import part_notebook, part_states, read_part_records, states_line
from .run_report import (
    bind_to_paper_models,
    chapter_entry,
    format_table,
    new_report,
    previous_report,
    previous_seconds,
    write_report,
)
from .run_times import cold_seconds

__all__ = [
    "RunLockedError",
    "bind_to_paper_models",
    "chapter_names",
    "check_part_option",
    "discover_chapters",
    "format_parts",
    "format_table",
    "model_limit_scale",
    "parts_of",
    "part_list",
    "run",
    "run_lock",
]

#: the largest seed a chapter can take: numpy's ``RandomState`` and scikit-learn's ``random_state`` accept 0 .. 2**32 - 1
MAX_SEED = 2**32 - 1


@contextmanager
def run_lock(out_dir: Path):
    """One runner at a time per output folder: an exclusive lock (``filelock``) on ``out_dir/.lock``, which
    the system releases when its process ends in any way, so a lock left by a killed runner never blocks the
    next one. ``out_dir/.lock.pid`` names the owner for the message. The report, the executed notebooks and
    the logs of two concurrent runs can therefore never interleave."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    owner = out_dir / ".lock.pid"
    lock = filelock.FileLock(out_dir / ".lock", timeout=0)
    try:
        lock.acquire()
    except filelock.Timeout:
        try:
            pid = f" (pid {int(owner.read_text().strip())})"
        except (OSError, ValueError):
            pid = ""
        raise RunLockedError(
            f"another runner{pid} is writing into {out_dir}; wait for it or use another output folder"
        ) from None
    try:
        owner.write_text(str(os.getpid()))
        yield
    finally:
        owner.unlink(missing_ok=True)
        lock.release()


def _claims_or_error(name: str, path: Path) -> ChapterClaims:
    """The chapter's claims; a malformed claims file gives an entry with the error, so that this chapter fails
    and the others run."""
    try:
        return load_claims(path)
    except ClaimsFileError as exc:
        return ChapterClaims(chapter=name, title=name, path=path, claims=[], error=f"claims file: {exc}")


def chapter_names(root: Path) -> list[str]:
    """The names of the chapters that have a claims file (``notebooks/<name>.claims.yml``), sorted; nothing is
    read (a malformed claims file still names its chapter)."""
    return sorted(p.name[: -len(CLAIMS_SUFFIX)] for p in (Path(root) / "notebooks").glob("*" + CLAIMS_SUFFIX))


def discover_chapters(root: Path | None = None, only: list[str] | None = None) -> list[ChapterClaims]:
    """Chapters = MyST notebooks ``notebooks/<name>.md`` with a ``<name>.claims.yml`` beside them, in
    ``_toc.yml`` order."""
    root = Path(root or find_root())
    paths = {name: root / "notebooks" / f"{name}{CLAIMS_SUFFIX}" for name in chapter_names(root)}
    for name, claims_path in paths.items():
        if not claims_path.with_name(f"{name}{CHAPTER_SUFFIX}").exists():
            raise FileNotFoundError(
                f"{claims_path} has no chapter {name}{CHAPTER_SUFFIX} beside it: add the chapter or remove the file"
            )
    order = toc_chapters(root)
    names = sorted(paths, key=lambda n: (order.index(n) if n in order else len(order), n))
    if only is not None:
        if not only:
            raise ValueError("--chapters needs at least one chapter name")
        unknown = set(only) - set(paths)
        if unknown:
            raise ValueError(f"unknown chapter(s) {sorted(unknown)}; known: {names}")
        names = [n for n in names if n in only]
    return [_claims_or_error(n, paths[n]) for n in names]


@dataclass
class _Plan:
    """What one run does, shared by every chapter and seed."""

    profile: str
    root: Path
    out_dir: Path
    check_only: bool
    timeout_scale: float
    models: dict | None
    rehearsal: bool
    progress: Callable[[str], object]
    seeds: list[int | None]
    force: bool
    ref: str | None = None  # the commit the runnable notebooks' Colab bootstrap checks out
    previous: dict = field(default_factory=dict)  # (chapter, seed) -> seconds of the run that executed it
    part: str | None = None  # run this part of the chapter (_run_part)
    scheduler: str | None = None  # the Dask scheduler the chapters' parallel steps go to ("local": a LocalCluster)
    code: str | None = None  # the replib code's hash, computed once (bookkit.run.reuse.code_hash)
    threads: int | None = None  # each kernel's BLAS/OpenMP threads when chapters run side by side (--jobs)
    jobs: int = 1  # executions at once (--jobs; the progress line's estimate)
    executed: dict = field(default_factory=dict)  # (chapter, seed) -> _SeedRun, executed on lanes beforehand
    wrong_kind: dict = field(default_factory=dict)  # chapter -> _wrong_model_kind's answer, computed once
    prepared: dict = field(default_factory=dict)  # chapter -> seconds of its preparation, done in the first pass
    started: float = field(default_factory=time.perf_counter)  # when the run began (the progress line)
    done: set = field(default_factory=set)  # (chapter, seed) executed or reused so far (the progress line)
    chapters: list = field(default_factory=list)  # the chapters of this run (the progress line)

    def models_for(self, chapter: str) -> tuple | None:
        """The reader's models (:class:`replib.models.ModelRef`) for ``chapter``, None for its own."""
        if not self.models or not takes_models(chapter):
            return None
        return self.models.get(chapter) or self.models.get("*") or None


@dataclass
class _SeedRun:
    status: str
    error: str | None
    seconds: float
    notebook: Path
    records: dict = field(default_factory=dict)
    reused: str | None = None


def _parameters(plan: _Plan, chapter: str, seed: int | None, part: str | None = None) -> dict:
    """The parameters injected into one execution (besides the profile): models, seed, part."""
    chosen = plan.models_for(chapter)  # papermill takes the models' one string form; the chapter parses it
    params = {"models": [str(m) for m in chosen] if chosen else None, "seed": seed, "part": part}
    return {k: v for k, v in {**params, "scheduler": plan.scheduler}.items() if v is not None}


def _fingerprint(plan: _Plan, chapter: str, params: dict) -> dict:
    """The fingerprint of one execution (:mod:`bookkit.run.reuse`); the code is hashed once per run. Where the
    work runs (``scheduler``) does not change what it computes; the precision of its forward passes does (a
    new measurement, another CPU or ``$REPLIB_PRECISION`` may change it)."""
    if plan.code is None:
        plan.code = reuse.code_hash(plan.root)
    what = {k: v for k, v in params.items() if k != "scheduler"}
    what["precision"] = chapter_precision(chapter, plan.profile)
    return reuse.fingerprint(plan.root, chapter, {"profile": plan.profile, **what}, code=plan.code)


def _part_fingerprint(plan: _Plan, chapter: str, seed: int | None, part) -> dict:
    """The fingerprint one part's execution has now (its state in the output folder: done or stale)."""
    return _fingerprint(plan, chapter, _parameters(plan, chapter, seed, part.name))


def model_limit_scale(chapter: str, profile: str, chosen) -> float:
    """How much longer ``chapter`` may run in ``profile`` with the models ``chosen`` instead of its own (a claims
    file's ``timeout`` is set for the profile's own models: a reader's model of width 768 does about eight times
    the forward work per token of the offline profile's MiniLM of width 384): the forward work per token of the
    chosen models over that of the profile's own models (each summed over the models;
    :func:`replib.models.forward_flops_per_token`), never below 1. 1 without chosen models, when the profile's own
    models do no forward pass, or when a config cannot be read (the chapter then reports the model's error
    itself)."""
    if not chosen:
        return 1.0
    try:
        own = sum(forward_flops_per_token(s) for s in chapter_config(chapter, profile).model_specs)
        new = sum(forward_flops_per_token(s) for s in chosen)
    except (ModelUnavailableError, OSError, ValueError):
        return 1.0
    return max(1.0, new / own) if own > 0 else 1.0


def _execute(
    plan: _Plan,
    ch: ChapterClaims,
    seed: int | None,
    dst: Path,
    tag: str,
    part: str | None = None,
    limit=None,
    nice: int = 0,
) -> _SeedRun:
    """Execute one chapter (or one part of it) for one seed, or reuse the kept execution when its inputs are
    unchanged (:mod:`bookkit.run.reuse`; never with ``force``); ``nice``: the execution's lower priority."""
    models = model_limit_scale(ch.chapter, plan.profile, plan.models_for(ch.chapter))  # a reader's bigger model
    limit = int((limit or ch.timeout_for(plan.profile)) * plan.timeout_scale * models)
    why = f", x{models:.1f} for the models' forward work" if models > 1 else ""
    plan.progress(f"[{tag}] running profile={plan.profile} (limit {limit} s{why}) ...")
    src = plan.out_dir / "sources" / f"{ch.chapter}.ipynb"  # the runnable notebook built from the .md
    write_runnable(plan.root, ch.chapter, src, ref=plan.ref)
    params = _parameters(plan, ch.chapter, seed, part)
    fp = _fingerprint(plan, ch.chapter, params)
    kept = None if plan.force else reuse.reusable(dst, fp, completed)
    if kept is not None:
        seconds = float(kept.get("seconds") or 0.0)
        plan.progress(f"[{tag}] unchanged, reused (executed {kept.get('executed')}, {seconds:.0f} s)")
        return _SeedRun("ok", None, seconds, dst, reused=kept.get("executed"))
    reuse.forget(dst)  # a failed or interrupted execution is never reused
    status, error, seconds = execute_notebook(
        src,
        dst,
        plan.profile,
        timeout=limit,
        models_log=plan.out_dir / "models" / f"{dst.stem if part else ch.chapter}.jsonl",
        root=plan.root,
        cwd=plan.root / "notebooks",
        extra_parameters=params,
        threads=plan.threads,
        nice=nice,
    )
    plan.progress(f"[{tag}] {status} in {seconds:.0f} s" + (f": {error[:300]}" if error else ""))
    if status == "ok" and completed(dst):
        reuse.write_manifest(dst, fp, seconds)
    return _SeedRun(status, error, seconds, dst)


def _read_executed(run: _SeedRun) -> _SeedRun:
    """The records of the executed notebook; a notebook that did not complete is an error even when papermill
    said ok (e.g. a re-check of a notebook that raised after recording)."""
    if not run.notebook.exists():
        return run
    try:
        executed = nbformat.read(str(run.notebook), as_version=4)
        run.records = read_records(executed)
        failure = execution_failure(executed)
        if failure and run.status == "ok":
            run.status, run.error = "error", f"the executed notebook did not complete: {failure}"
    except Exception as exc:  # a torn or foreign file: this seed failed, the run goes on
        run.status, run.error = "error", f"cannot read executed notebook: {exc}"
    return run


def _seed_notebook(plan: _Plan, chapter: str, seed: int | None, first: bool) -> Path:
    """Where one seed's executed notebook is written: ``<chapter>.ipynb`` for the first (or only) seed, the one
    the book shows; ``<chapter>.seed-<n>.ipynb`` for the others."""
    name = f"{chapter}.ipynb" if first or seed is None else f"{chapter}.seed-{seed}.ipynb"
    return plan.out_dir / "notebooks" / name


def _run_seed(plan: _Plan, ch: ChapterClaims, seed: int | None, first: bool) -> _SeedRun:
    """Execute (or, ``check_only``, find) one chapter for one seed and read what it recorded."""
    dst = _seed_notebook(plan, ch.chapter, seed, first)
    tag = ch.chapter if seed is None else f"{ch.chapter} seed={seed}"
    if not plan.check_only:
        _progress_line(plan, ch.chapter, seed)
        # side by side, a later seed yields the cores to the first seeds still running (and to the book built
        # from them): their processes beyond a lane's own (alignment workers, layer processes) get the idle core
        nice = LATER_SEED_NICE if plan.jobs > 1 and not first else 0
        run = _read_executed(_execute(plan, ch, seed, dst, tag, nice=nice))
        plan.done.add((ch.chapter, seed))
        return run
    if dst.exists():
        return _read_executed(_SeedRun("ok", None, float(plan.previous.get((ch.chapter, seed)) or 0.0), dst))
    return _SeedRun("error", "not executed", 0.0, dst)


#: how much lower a later seed's kernel runs than the first seeds' on lanes (:func:`_run_seed`)
LATER_SEED_NICE = 10


def minutes_text(seconds: float) -> str:
    """``seconds`` as the progress lines show a duration: ``"3 min 07 s"``."""
    return f"{int(seconds // 60)} min {int(seconds % 60):02d} s"


def _expected(plan: _Plan) -> dict[str, tuple[float, float]]:
    """``chapter -> (first seed's seconds, a further seed's)`` a cold execution is expected to take: the newest
    cold measurement of the run-time table (:func:`~bookkit.run.run_times.cold_seconds`), else the budget
    (:mod:`bookkit.run.budget`); the budget's profile only (nothing is known of the others)."""
    if plan.profile != BUDGET_PROFILE:
        return {}
    budget, measured = load_budget(plan.root), cold_seconds(plan.root, plan.profile)
    out = {}
    for name in budget.keys() | measured.keys():
        b, m = budget.get(name, (None, None)), measured.get(name, (None, None))
        first, each = (m[0] if m[0] is not None else b[0]), (m[1] if m[1] is not None else b[1])
        if first is not None:
            out[name] = (first, each or 0.0)
    return out


def _progress_line(plan: _Plan, chapter: str, seed: int | None) -> None:
    """One line before an execution: the chapter, the seed, the time since the run began and the time left:
    the expected seconds of the executions not done yet, this one included (:func:`_expected`), over the
    lanes."""
    names = plan.chapters or [chapter]
    expected = _expected(plan)
    left = [(name, i > 0) for i, s in enumerate(plan.seeds) for name in names if (name, s) not in plan.done]
    todo = len(names) * len(plan.seeds) - len(plan.done)
    if expected and all(name in expected for name, _ in left):
        eta = f", about {minutes_text(sum(expected[name][later] for name, later in left) / plan.jobs)} left"
    else:
        eta = ""
    seed_text = "" if seed is None else f" seed {seed}"
    plan.progress(
        f"[progress] {chapter}{seed_text}: {minutes_text(time.perf_counter() - plan.started)} elapsed, "
        f"{todo} execution{'s' if todo != 1 else ''} to go{eta}"
    )


def _wrong_model_kind(plan: _Plan, chapter: str) -> str | None:
    """Why the reader's models cannot run ``chapter`` (a text model given to the protein chapter:
    :func:`replib.config.require_chapter_models`), or None. Checked before a kernel starts; a model whose kind
    cannot be read here is left to the chapter, which says why."""
    if chapter in plan.wrong_kind:  # asked once by the lanes and again by the chapter's own run
        return plan.wrong_kind[chapter]
    chosen, why = plan.models_for(chapter), None
    if not plan.check_only and chosen:
        try:
            require_chapter_models(chapter, chosen)
        except WrongModelKindError as exc:
            why = f"{type(exc).__name__}: {exc}"
        except (ModelUnavailableError, OSError):
            pass  # a kind that cannot be read here: left to the chapter
    plan.wrong_kind[chapter] = why
    return why


def _chapter_entry(plan: _Plan, ch: ChapterClaims, runs: dict) -> dict:
    """The report entry of one chapter over its seeds: the status of the first seed that failed (else ok)."""
    per_seed = {}
    for seed, r in runs.items():
        per_seed[seed] = {
            "status": r.status,
            "error": r.error,
            "seconds": round(r.seconds, 1),
            "notebook": str(r.notebook.relative_to(plan.out_dir)),
        }
        if r.reused:
            per_seed[seed]["reused"] = r.reused
    bad = [s for s in plan.seeds if per_seed[s]["status"] != "ok"]
    worst = per_seed[bad[0]] if bad else per_seed[plan.seeds[0]]
    log = plan.out_dir / "models" / f"{ch.chapter}.jsonl"  # the models it loaded and the data files it read
    entry = chapter_entry(
        ch,
        worst["status"],
        (f"seed {bad[0]}: " if bad and bad[0] is not None else "") + worst["error"] if bad else None,
        round(sum(p["seconds"] for p in per_seed.values()), 1),
        per_seed[plan.seeds[0]]["notebook"],
        precision=chapter_precision(ch.chapter, plan.profile),  # of its forward passes (replib.profiles)
        models=read_models_log(log),
        data=read_data_log(log),
    )
    if all(p.get("reused") for p in per_seed.values()):
        entry["reused"] = True  # every execution kept from an earlier run (same inputs)
    if plan.seeds != [None]:
        entry["seeds"] = {str(s): per_seed[s] for s in plan.seeds}
    chosen = plan.models_for(ch.chapter)
    if chosen:
        entry["models_override"] = [str(m) for m in chosen]
    return entry


def _will_execute(plan: _Plan, ch: ChapterClaims, seed: int | None, first: bool) -> bool:
    """Whether :func:`_execute` would execute this seed now (not done on lanes already, not reused)."""
    if plan.check_only or (ch.chapter, seed) in plan.executed:
        return False
    fp = _fingerprint(plan, ch.chapter, _parameters(plan, ch.chapter, seed))
    return plan.force or reuse.reusable(_seed_notebook(plan, ch.chapter, seed, first), fp, completed) is None


def _prepare(plan: _Plan, ch: ChapterClaims) -> float | None:
    """The chapter's preparation (its declaration's ``prepare``: :func:`replib.config.prepare_chapter`) for the
    seeds about to execute, when there are two or more of them (one seed's notebook does the same work itself); its
    seconds (None when it did nothing)."""
    if getattr(chapters().get(ch.chapter), "prepare", None) is None or plan.part is not None:
        return None
    seeds = [s for i, s in enumerate(plan.seeds) if s is not None and _will_execute(plan, ch, s, i == 0)]
    if len(seeds) < 2:
        return None
    _progress_line(plan, ch.chapter, seeds[0])  # the preparation is part of the first seed's budget
    plan.progress(f"[{ch.chapter}] preparing seeds {' '.join(map(str, seeds))} ...")
    t0 = time.perf_counter()
    try:
        done = prepare_chapter(ch.chapter, plan.profile, seeds)
    except Exception as exc:  # the seeds' notebooks do the work themselves and report what fails
        plan.progress(f"[{ch.chapter}] preparation failed, each seed does its own: {type(exc).__name__}: {exc}")
        return None
    seconds = time.perf_counter() - t0
    if done:
        what = ", ".join(" seed ".join(map(str, d)) if isinstance(d, tuple) else str(d) for d in done)
        plan.progress(f"[{ch.chapter}] prepared for seeds {' '.join(map(str, seeds))} in {seconds:.0f} s ({what})")
    return seconds if done else None


def _run_chapter(plan: _Plan, ch: ChapterClaims) -> tuple[dict, list[dict]]:
    """Execute (or re-check) one chapter for each seed: its report entry and its claim results (combined over
    the seeds by :func:`~bookkit.claims.seeds.check_chapter_seeds`)."""
    if ch.error:
        plan.progress(f"[{ch.chapter}] not run: {ch.error}")
        return chapter_entry(ch, "error", ch.error, 0.0, None, models=[]), []  # it fails, the others run
    if plan.models and not takes_models(ch.chapter):
        plan.progress(f"[{ch.chapter}] --model does not apply: the chapter trains its own models (run on them)")
    wrong, chosen = _wrong_model_kind(plan, ch.chapter), plan.models_for(ch.chapter)
    if wrong:
        plan.progress(f"[{ch.chapter}] not run: {wrong}")
        return chapter_entry(ch, "error", wrong, 0.0, None, models=[], models_override=[str(m) for m in chosen]), []
    if plan.part is not None:  # one part, then the chapter from every part kept in the output folder
        entry, results = _run_part(plan, ch, chosen)
    else:
        prepared = _prepare(plan, ch)
        if prepared is None:  # prepared in the first seed's pass (run, one lane)
            prepared = plan.prepared.get(ch.chapter)
        runs = {
            s: plan.executed.get((ch.chapter, s)) or _run_seed(plan, ch, s, i == 0) for i, s in enumerate(plan.seeds)
        }
        errors = {s: r.error if r.status != "ok" else None for s, r in runs.items()}
        results = check_chapter_seeds(ch, plan.profile, {s: r.records for s, r in runs.items()}, errors)
        entry = _chapter_entry(plan, ch, runs)
        if prepared is not None:  # its time belongs to the chapter (the lanes' ordering reads the chapter's seconds)
            entry["prepare_seconds"] = round(prepared, 1)
            entry["seconds"] = round(entry["seconds"] + prepared, 1)
    return entry, (bind_to_paper_models(results, chosen, plan.rehearsal) if chosen else results)


def _print_budget(plan: _Plan, entries: list[dict], total: bool = False) -> None:
    """Print the seconds of ``entries`` (one chapter, or with ``total`` all of them) against their budget
    (:mod:`bookkit.run.budget`: cold, 2 cores, the offline profile); nothing for another profile or a re-check."""
    if plan.profile != BUDGET_PROFILE or plan.check_only or plan.part is not None:
        return
    budget = load_budget(plan.root)
    n = len([s for s in plan.seeds if s is not None]) or 1
    limits = [allowed(budget, e["chapter"], n) for e in entries]
    seconds = sum(float(e.get("seconds") or 0.0) for e in entries)
    limit = None if any(x is None for x in limits) else sum(limits)
    what = "chapters" if total else entries[0]["chapter"]
    note = " (reused)" if all(e.get("reused") for e in entries) else ""
    if total and limit is not None:  # side by side on the lanes: the wall-clock time they come to
        note += (
            f" ({BUDGET_LANES} lanes: {minutes_text(seconds / BUDGET_LANES)} of {minutes_text(limit / BUDGET_LANES)})"
        )
    plan.progress(f"[budget] {what}, {n} seed{'s' if n > 1 else ''}: {against(seconds, limit)}{note}")


def _provisional(
    plan: _Plan, found: list[ChapterClaims], report: dict, runs: dict, after_first_seed: Callable, partial: bool
) -> None:
    """Hand a report of the first seed's verdicts (``runs``: ``(chapter, first seed) -> _SeedRun``), marked
    ``provisional`` and written to the output folder, to ``after_first_seed`` (the main job builds the book from
    it), unless every first-seed execution was reused (an unchanged re-run: the book of the last run stands)."""
    first = plan.seeds[0]
    runs = {key: run for key, run in runs.items() if key[1] == first}
    if all(r.reused for r in runs.values()):
        return
    one = _Plan(**{**plan.__dict__, "seeds": [first], "executed": runs, "progress": lambda *_: None})
    provisional = json.loads(json.dumps(report))
    provisional["seeds"] = [first]
    provisional["provisional"] = {"seeds_done": [first], "seeds": list(plan.seeds)}
    _write(plan, provisional, [_run_chapter(one, ch) for ch in found], partial)
    plan.progress(
        f"[progress] seed {first} done in {minutes_text(time.perf_counter() - plan.started)}: provisional report"
    )
    after_first_seed(provisional)


def _write(plan: _Plan, report: dict, done: list[tuple[dict, list[dict]]], partial: bool) -> None:
    """Add the chapters' ``(entry, results)`` (in the book's order) to ``report``, count and date it, and write it
    (:func:`~bookkit.run.run_report.write_report`: a ``partial`` run merges into the report of the others)."""
    for entry, results in done:
        report["chapters"].append(entry)
        report["claims"].extend(results)
    # a chapter that failed with no failed claim (e.g. all claims unverified) still counts once
    report["summary"] = summarize(report["claims"], report["chapters"])
    report["finished"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    write_report(report, plan.out_dir, partial=partial, progress=plan.progress)


def _lane_cost(plan: _Plan, chapters: dict) -> Callable[[str], float]:
    """A chapter's first-seed seconds for the lanes' longest-first order: its time in the previous report, else
    the seconds expected cold (:func:`_expected`: measured, else budgeted), else its time limit."""
    before = previous_seconds(plan.out_dir)
    expected = _expected(plan)

    def cost(name: str) -> float:
        known = before.get((name, plan.seeds[0])) or (expected[name][0] if name in expected else None)
        return float(known or chapters[name].timeout_for(plan.profile))

    return cost


def parts_of(chapter: str, profile: str) -> tuple:
    """The chapter's parts in ``profile`` (none for a chapter the science does not configure)."""
    return chapter_parts(chapter, profile) if chapter in chapters() else ()


def check_part_option(found: list[ChapterClaims], part: str, profile: str, seeds) -> None:
    """``--part`` runs one part of one chapter for one seed; the part must be one of the chapter's."""
    if len(found) != 1:
        raise ValueError(f"--part runs one part of one chapter: name the chapter (got {[c.chapter for c in found]})")
    if seeds is not None and len(seeds) > 1:
        raise ValueError("--part runs one seed: give at most one --seed")
    names = [p.name for p in parts_of(found[0].chapter, profile)]
    if part not in names:
        have = ", ".join(names) or "none (the chapter is not split)"
        raise ValueError(f"{found[0].chapter} has no part {part!r} in profile {profile!r}; parts: {have}")


def _models(chapter: str, profile: str, part) -> list[str]:
    """The profile's models a part loads (every model of the chapter for ``rest``)."""
    if part.models is not None:
        return list(part.models)
    return list(profile_params(chapter, profile)["models"]) if chapter in chapters() else []


def format_parts(rows: list[dict]) -> str:
    """The part list as a plain-text table."""
    head = ("chapter", "part", "minutes", "status", "models")
    table = [head] + [
        (r["chapter"], r["part"], str(r["timeout_minutes"]), r.get("status", "—"), " ".join(r["models"]) or "—")
        for r in rows
    ]
    widths = [max(len(t[i]) for t in table) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(t, widths)).rstrip() for t in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _run_part(plan: _Plan, ch: ChapterClaims, chosen) -> tuple[dict, list[dict]]:
    """Execute ``plan.part`` of ``ch`` (:func:`_execute`: with reuse), then gather every part kept in the output
    folder: the chapter's entry (this part's status, every part's state) and its claims checked on the merged
    records, waiting parts ``missing``."""
    parts = parts_of(ch.chapter, plan.profile)
    part = next(p for p in parts if p.name == plan.part)
    seed = plan.seeds[0]
    dst = part_notebook(plan.out_dir, ch.chapter, part.name)
    tag = f"{ch.chapter}/{part.name}" + ("" if seed is None else f" seed={seed}")
    fresh = functools.partial(_part_fingerprint, plan, ch.chapter, seed)  # a part's state now
    if plan.check_only:
        run = None
    else:
        needed = [p for p in parts if p.name in part.needs]
        behind = [n for n, s in part_states(plan.out_dir, ch.chapter, needed, fresh).items() if s["status"] != "done"]
        if behind:
            plan.progress(
                f"[{tag}] reads the caches of parts not done here ({', '.join(behind)}): what they would have "
                "cached is computed now (slower, unless they ran elsewhere into the same cache folder)"
            )
        limit = part_limit(part, plan.profile, ch.timeout_for(plan.profile))
        run = _execute(plan, ch, seed, dst, tag, part.name, limit)
    states = part_states(plan.out_dir, ch.chapter, parts, fresh)
    read_part_records(plan.out_dir, states)
    plan.progress(f"[{ch.chapter}] parts: {states_line(states)}")
    records, _, conflicts = merge_records(states)
    for c in conflicts:
        plan.progress(f"[{ch.chapter}] parts {c['parts']} recorded {c['key']} differently: {c['values']}")
    results = check_chapter_seeds(ch, plan.profile, {seed: records}, {seed: None})
    results = await_parts(results, states, records)
    this = states[part.name]
    status = run.status if run is not None else ("ok" if this["status"] == "done" else "error")
    error = run.error if run is not None else (None if status == "ok" else f"part {part.name}: {this['status']}")
    seconds = round(run.seconds if run is not None else (this["seconds"] or 0.0), 1)
    models = read_models_log(plan.out_dir / "models" / f"{dst.stem}.jsonl")
    entry = chapter_entry(ch, status, error, seconds, this["notebook"], models=models, part=part.name, parts=states)
    if run is not None and run.reused:
        entry["reused"] = True
    if conflicts:
        entry["conflicts"] = conflicts
    if chosen:
        entry["models_override"] = [str(m) for m in chosen]
    return entry, results


def part_list(
    profile: str,
    chapters: list[str] | None = None,
    root: Path | None = None,
    out_dir: Path | None = None,
    models: dict | None = None,
    seed: int | None = None,
    states: bool = True,
) -> list[dict]:
    """Every part of the chapters (default: all) in ``profile``: ``{"chapter", "part", "timeout_minutes",
    "models"}`` (:func:`bookkit.run.parts.part_row`), with ``states`` also each part's ``status`` in the output
    folder (default ``build/runs/<profile>``): done, stale, failed or missing (:mod:`bookkit.run.parts`)."""
    root = Path(root or find_root())
    out_dir = Path(out_dir or root / "build" / "runs" / profile)
    plan = _Plan(profile, root, out_dir, True, 1.0, models, False, print, [seed], False)
    rows = []
    for ch in discover_chapters(root, only=chapters):
        parts = parts_of(ch.chapter, profile)
        fresh = functools.partial(_part_fingerprint, plan, ch.chapter, seed)
        found = part_states(out_dir, ch.chapter, parts, fresh) if states and parts else {}
        for p in parts:
            rows.append(part_row(ch.chapter, p, profile, ch.timeout_for(profile), _models(ch.chapter, profile, p)))
            if found:
                rows[-1]["status"] = found[p.name]["status"]
    return rows


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
    part: str | None = None,
    scheduler: str | None = None,
    jobs: int = 1,
    after_first_seed: Callable[[dict], object] | None = None,
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
    models : ``{chapter or "*": [ModelRef]}`` (parsed once at the edge, ``bookkit.cli``; spec strings work
        too), passed as each chapter's ``models`` parameter in their string form; claims bound to the paper's models are then reported unverified
        (:func:`bind_to_paper_models`)
    rehearsal : label the run a paper-scale rehearsal (``profile="paper"`` with substituted models; needs
        ``models``): the report says so, and it goes to ``build/runs/rehearsal``
    seeds : run each chapter once per seed (its ``seed`` parameter) and combine each claim's verdicts over
        them (:mod:`bookkit.claims.seeds`: a verdict that depends on the seed is ``inconclusive``); default:
        one run with the chapter's own seed. ``check_only`` without seeds re-checks the seeds of the report
        already in ``out_dir``.
    force : execute every chapter even when its inputs are unchanged (by default an execution with the same
        fingerprint as the kept notebook's is reused: :mod:`bookkit.run.reuse`); the claims are always
        re-checked
    part : run only this part of the one chapter in ``chapters`` (:mod:`replib.parts`); its entry in the
        report then gathers every part kept in ``out_dir`` (:func:`_run_part`)
    scheduler : a Dask scheduler address for the chapters' parallel steps (``"local"``: a LocalCluster),
        passed as their ``scheduler`` parameter; it changes where the work runs, not what it computes
    jobs : execute this many chapters (and seeds) at once, each kernel with ``cores // jobs`` threads
        (:mod:`bookkit.run.lanes`); not with ``part`` or ``check_only``
    after_first_seed : with two or more seeds (whole chapters, executing), called once every chapter's first
        seed has ended, with a report of the first seed's verdicts (``report["provisional"]``, also written to
        ``out_dir/report.json`` until the run ends): the main job builds the book from it. On one lane every
        chapter runs for the first seed before any runs for the others; on lanes the first seeds go first
        (longest first) and the later seeds go on while it is called
    """
    if rehearsal and not models:
        raise ValueError("a rehearsal substitutes models for the paper's: give at least one --model")
    if seeds is not None:
        seeds = [int(s) for s in seeds]
        if not seeds or len(set(seeds)) != len(seeds):
            raise ValueError(f"--seeds needs distinct seeds, got {seeds}")
        bad = [s for s in seeds if not 0 <= s <= MAX_SEED]
        if bad:  # refused here, before a chapter runs into numpy's or scikit-learn's error on each claim
            raise ValueError(
                f"--seeds takes integers from 0 to 2**32 - 1 (numpy's and scikit-learn's range), got {bad}"
            )
    if jobs > 1 and part is not None:
        raise ValueError("--jobs runs whole chapters side by side; --part runs one part of one chapter")
    root = Path(root or find_root()).resolve()  # the chapters run in root/notebooks: never a relative path
    out_dir = Path(out_dir or root / "build" / "runs" / ("rehearsal" if rehearsal else profile))
    if check_only and seeds is None:
        seeds = previous_report(out_dir).get("seeds")
    report = new_report(profile, root, models, rehearsal, seeds, part)
    found = discover_chapters(root, only=chapters)
    if not found:
        raise FileNotFoundError(f"no chapters (notebooks with a .claims.yml) in {root / 'notebooks'}")
    if part is not None:
        check_part_option(found, part, profile, seeds)
    plan = _Plan(
        profile=profile,
        root=root,
        out_dir=out_dir,
        check_only=check_only,
        timeout_scale=timeout_scale,
        models=models,
        rehearsal=rehearsal,
        progress=progress,
        seeds=list(seeds or [None]),
        force=force,
        ref=report["environment"].get("git_commit"),
        part=part,
        scheduler=scheduler,
        threads=lane_threads(jobs) if jobs > 1 else None,
        jobs=jobs,
        chapters=[ch.chapter for ch in found],
    )
    partial, by_name = chapters is not None, {ch.chapter: ch for ch in found}
    provisional = None
    if after_first_seed is not None and len(plan.seeds) > 1 and part is None and not check_only:
        provisional = lambda runs: _provisional(plan, found, report, runs, after_first_seed, partial)
    with run_lock(out_dir):
        if jobs > 1 and part is None and not check_only:  # every runnable chapter and seed on the lanes
            runnable = {n: ch for n, ch in by_name.items() if not ch.error and not _wrong_model_kind(plan, n)}
            cost = _lane_cost(plan, runnable)
            plan.progress(
                f"[lanes] {len(runnable)} chapters x {len(plan.seeds)} seeds on {jobs} lanes, {plan.threads} "
                f"thread(s) each, longest first: {' '.join(sorted(runnable, key=cost, reverse=True))}"
            )
            plan.executed = run_lanes(
                jobs,
                [(name, plan.seeds) for name in runnable],
                lambda name, seed, first: _run_seed(plan, runnable[name], seed, first),
                cost,
                after_first=provisional,
            )
        elif provisional is not None:
            # every chapter for the first seed (each one's preparation for all its seeds first), then the provisional
            for name in execution_order(list(by_name)):
                if not by_name[name].error and not _wrong_model_kind(plan, name):
                    seconds = _prepare(plan, by_name[name])
                    if seconds is not None:
                        plan.prepared[name] = seconds
                    plan.executed[(name, plan.seeds[0])] = _run_seed(plan, by_name[name], plan.seeds[0], True)
            provisional(plan.executed)  # the seeds after it then execute as usual (plan.executed keeps the first's)
        plan.previous = previous_seconds(out_dir) if check_only else {}
        done = {}
        for name in execution_order(list(by_name)):
            done[name] = _run_chapter(plan, by_name[name])
            _print_budget(plan, [done[name][0]])
        _print_budget(plan, [e for e, _ in done.values()], total=True)
        _write(plan, report, [done[ch.chapter] for ch in found], partial)
    return report  # this run's chapters (the file on disk also keeps the chapters of earlier runs)

"""The paper-scale rehearsal's driver: each chapter's ``paper`` profile rehearsed as a whole (part ``all``:
every part in turn, in one forked child process, the science imported once in the parent), its peak memory
and cache measured, one row each in ``book/rehearsal.csv``, shown on the book's rehearsal page (issue 39, item 4).

``python -m replib rehearsal [CHAPTER ...] [--part NAME]`` runs the chapters (or the one part ``NAME``) whose
row is not ``ok`` yet (a killed rehearsal resumes: finished rows are kept, the CSV is rewritten atomically
after each chapter, and the streams resume from their checkpoints); ``--force`` runs them again; ``--render``
only computes the rows' estimates again from the parts' stored results. A row gives the T4-hours and
L4-hours estimated from the counted FLOPs (:class:`replib.rehearsal.core.Cost`) and the largest extrapolation factor of its steps.

Peak memory is the child's maximum resident set (``os.wait4``'s ``ru_maxrss``: the part's own process with
what it inherited from the parent, about the 0.5 GB of the imported libraries, its threads, and the children
it waited for). Cache is what the part added on disk under the rehearsal's work
folder and ``$REPLIB_CACHE_DIR`` while it ran, plus the weights the paper profile downloads for its models
(float32, parameters counted from the configurations: the stand-ins' weights are built in memory).
"""

from __future__ import annotations

import csv
import fcntl
import io
import json
import os
import sys
import time
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path

from replib._io import atomic_write, cache_root, write_json_atomic
from replib.config import chapter_parts
from replib.models.fullsize import FULLSIZE, parameter_count
from replib.rehearsal import ALL, Context, rehearse_part, selection, summarize

from .project import find_root, toc_chapters

__all__ = [
    "COLUMNS",
    "dir_bytes",
    "read_rows",
    "refresh",
    "rehearse",
    "result_values",
    "run_part",
    "write_rows",
]

#: the columns of book/rehearsal.csv, in order
COLUMNS = (
    "chapter",
    "part",
    "model",
    "data",
    "fraction_of_paper",
    "extrapolation",
    "seconds",
    "peak_rss_gb",
    "cache_gb",
    "status",
    "t4_hours_estimate",
    "l4_hours_estimate",
)
_GB = 1e9


def dir_bytes(*folders: Path) -> int:
    """Bytes of the files under ``folders`` (missing folders count 0; files that vanish meanwhile too)."""
    total = 0
    for folder in folders:
        for root, _, files in os.walk(folder):
            for name in files:
                try:
                    total += os.lstat(os.path.join(root, name)).st_size
                except OSError:
                    pass
    return total


def read_rows(path: Path) -> list[dict]:
    """The rows of a rehearsal CSV (none when it does not exist); a file with other columns is an error."""
    path = Path(path)
    if not path.exists():
        return []
    with open(path, newline="") as fh:
        reader = csv.DictReader(fh)
        if tuple(reader.fieldnames or ()) != COLUMNS:
            raise ValueError(f"{path}: columns {reader.fieldnames}, expected {list(COLUMNS)}")
        return list(reader)


def write_rows(path: Path, rows: Iterable[dict]) -> None:
    """Write the rows atomically, in :data:`COLUMNS` order."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: row.get(k, "") for k in COLUMNS})
    atomic_write(path, lambda fh: fh.write(buf.getvalue()), mode="w")


def _weights_gb(models: Iterable[str]) -> float:
    return sum(4 * parameter_count(m) for m in models if m in FULLSIZE) / _GB


def run_part(
    chapter: str, part: str, workdir: Path, *, scale: float = 1.0, max_items: int | None = None,
    stats_flops: float = 3e11, timeout: float = 1800.0,
) -> dict:  # fmt: skip
    """Rehearse one part in a forked child process (the parent imported the science once; the child inherits
    it) and return its CSV row (``status``: ``ok``, ``failed`` or ``timeout``; the child's output in
    ``workdir/<chapter>/logs/<part>.log``, its result in ``workdir/<chapter>/results/<part>.json``)."""
    workdir = Path(workdir) / chapter
    out_json = workdir / "results" / f"{part}.json"
    log = workdir / "logs" / f"{part}.log"
    for folder in (out_json.parent, log.parent):
        folder.mkdir(parents=True, exist_ok=True)
    out_json.unlink(missing_ok=True)
    ctx = Context(workdir, 0, scale, max_items, False, stats_flops)
    watched = (workdir, cache_root())
    before, t0 = dir_bytes(*watched), time.monotonic()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child (coverage does not follow it)
        os._exit(_child(chapter, part, ctx, out_json, log))
    status, rusage = _wait(pid, timeout)
    seconds = time.monotonic() - t0
    grown = max(dir_bytes(*watched) - before, 0)
    row = {"chapter": chapter, "part": part, "seconds": round(seconds, 1), "status": status,
           "peak_rss_gb": round(rusage.ru_maxrss * 1024 / _GB, 2) if rusage else ""}  # fmt: skip
    if status == "ok" and out_json.exists():
        res = json.loads(out_json.read_text())
        row.update(result_values(res), cache_gb=round(grown / _GB + _weights_gb(res.get("models", [])), 2))
    elif status == "ok":
        row["status"] = "failed"
    return row


def result_values(res: dict) -> dict:
    """A row's model, data, fraction and T4 estimate from a part's stored result, the totals computed again
    from its measured costs (:func:`replib.rehearsal.summarize`: the estimate's constants are the code's)."""
    totals = summarize(res)
    return {
        "model": res["model"],
        "data": res["data"],
        "fraction_of_paper": f"{totals['fraction_of_paper']:.3g}",
        "extrapolation": f"{totals['extrapolation']:.3g}",
        "t4_hours_estimate": f"{totals['t4_hours_estimate']:.3g}",
        "l4_hours_estimate": f"{totals['l4_hours_estimate']:.3g}",
    }


def refresh(csv_path: Path, workdir: Path, chapters: Iterable[str] = ()) -> list[dict]:
    """The ``ok`` rows' values computed again from the parts' stored results in ``workdir`` (the measured
    seconds, memory and cache stay), and a row with status ``missing`` for each part of ``chapters`` that has
    none (never rehearsed), the rows of parts that ``chapters`` no longer have dropped; written back to
    ``csv_path``."""
    order = _order(chapters)
    rows = _current({(r["chapter"], r["part"]): r for r in read_rows(csv_path)}, order)
    for key in order:
        rows.setdefault(key, {"chapter": key[0], "part": key[1], "status": "missing"})
    for r in rows.values():
        path = Path(workdir) / r["chapter"] / "results" / f"{r['part']}.json"
        if r["status"] == "ok" and path.exists():
            r.update(result_values(json.loads(path.read_text())))
    out = _ordered(rows, order)
    write_rows(csv_path, out)
    return out


def _child(chapter: str, part: str, ctx, out_json: Path, log: Path) -> int:  # pragma: no cover - forked
    """The forked child: output to ``log``, the part's result to ``out_json``; its exit status."""
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    sys.stdout = sys.stderr = open(fd, "w", buffering=1)
    try:
        out = rehearse_part(chapter, part, ctx)
        write_json_atomic(out_json, json.loads(json.dumps(out, default=_plain)))
        print(json.dumps({k: out[k] for k in ("t4_hours_estimate", "fraction_of_paper")}), flush=True)
        return 0
    except BaseException:
        traceback.print_exc()
        sys.stderr.flush()
        return 1


def _plain(value):
    return value.tolist() if hasattr(value, "tolist") else str(value)


def _wait(pid: int, timeout: float):
    """Wait for the child (killed after ``timeout`` seconds): its status and resource usage."""
    deadline = time.monotonic() + timeout
    while True:
        done, code, rusage = os.wait4(pid, os.WNOHANG)
        if done:
            return ("ok" if os.waitstatus_to_exitcode(code) == 0 else "failed"), rusage
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            _, _, rusage = os.wait4(pid, 0)
            return "timeout", rusage
        time.sleep(0.5)


def _order(chapters: Iterable[str]) -> list[tuple[str, str]]:
    """The rows of ``chapters``: each chapter's ``all``."""
    return [(c, ALL) for c in chapters]


def _selected(chapters: Iterable[str], part: str | None) -> list[tuple[str, str]]:
    """What to rehearse: each chapter whole, or the part named ``part`` (its row beside the chapter's)."""
    if part is None or part == ALL:
        return _order(chapters)
    out = [(c, p.name) for c in chapters for p in chapter_parts(c, "paper") if p.name == part]
    if not out:
        raise ValueError(f"no part {part!r} in {', '.join(chapters)}")
    return out


def rehearse(
    chapters: Iterable[str], csv_path: Path, workdir: Path, *, part: str | None = None, force: bool = False,
    runner: Callable[..., dict] = run_part, **kw,
) -> list[dict]:  # fmt: skip
    """Rehearse the parts of ``chapters`` (or the one named ``part``) whose row in ``csv_path`` is not ``ok``
    (all of them with ``force``), writing the CSV after each part; rows are kept in the chapters' part order,
    rows of other chapters are kept as they are, and rows of parts ``chapters`` no longer have are dropped.
    ``kw`` goes to ``runner`` (:func:`run_part`)."""
    chapters = list(chapters)
    selected = _selected(chapters, part)
    order = [*_order(chapters), *(k for k in selected if k[1] != ALL)]
    rows = _current({(r["chapter"], r["part"]): r for r in read_rows(csv_path)}, order)
    for chapter, name in selected:
        if not force and rows.get((chapter, name), {}).get("status") == "ok":
            if not _recut(workdir, chapter, name):
                print(f"[{chapter} {name}] ok in {csv_path}: kept", flush=True)
                continue
            print(f"[{chapter} {name}] its row measured another shard range of the same name", flush=True)
        print(f"[{chapter} {name}] rehearsing ...", flush=True)
        r = runner(chapter, name, workdir, **kw)
        print(f"[{chapter} {name}] {r['status']} in {r['seconds']} s, peak {r.get('peak_rss_gb')} GB, "
              f"{r.get('t4_hours_estimate', '?')} T4-h", flush=True)  # fmt: skip
        rows = _store(csv_path, r, order)
    return _ordered(rows, order)


def _recut(workdir: Path, chapter: str, name: str) -> bool:
    """Whether the part's stored result measured other shard ranges, or another selection (layers, a step
    range), than the part now has (a model cut into three ranges keeps the names ``-1`` and ``-2`` of its
    former halves); what a result does not say is taken as unchanged."""
    path = Path(workdir) / chapter / "results" / f"{name}.json"
    if not path.exists() or name == ALL:
        return False
    stored = json.loads(path.read_text())
    part = next(p for p in chapter_parts(chapter, "paper") if p.name == name)
    now = {"shards": list(part.shards) if part.shards else None, "select": selection(part)}
    return any(key in stored and stored[key] != value for key, value in now.items())


def _store(csv_path: Path, row: dict, order: list) -> dict:
    """Put one row into the CSV under a lock, re-reading it first (two rehearsals of different chapters may
    write the same table)."""
    csv_path = Path(csv_path)
    csv_path.parent.mkdir(parents=True, exist_ok=True)
    with open(csv_path.with_name(csv_path.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        rows = _current({(r["chapter"], r["part"]): r for r in read_rows(csv_path)}, order)
        rows[(row["chapter"], row["part"])] = row
        write_rows(csv_path, _ordered(rows, order))
    return rows


def _current(rows: dict, order: list) -> dict:
    """``rows`` without those of a chapter in ``order`` whose part is not in ``order`` (a part the chapter no
    longer has, e.g. after a model was cut into more shard ranges: its row would be a stale measurement);
    other chapters' rows are kept."""
    chapters = {c for c, _ in order}
    keys = {*order, *((c, p.name) for c in chapters for p in chapter_parts(c, "paper"))}
    return {k: r for k, r in rows.items() if k[0] not in chapters or k in keys}


def _ordered(rows: dict, order: list) -> list[dict]:
    """The rows in the book's order (chapters as ``_toc.yml`` lists them, each chapter's parts in its order),
    whichever chapters were rehearsed; rows of parts no chapter has last."""
    chapters = toc_chapters(find_root())
    book = [(c, name) for c in chapters for name in (ALL, *(p.name for p in chapter_parts(c, "paper")))]
    known = set(book)
    rank = {key: i for i, key in enumerate([*book, *(k for k in order if k not in known)])}
    return sorted(
        rows.values(), key=lambda r: (rank.get((r["chapter"], r["part"]), len(rank)), r["chapter"], r["part"])
    )

"""Command line: ``python -m replib run|check|book|all|notebooks|bench|report|card|rehearsal`` (``python -m bookkit`` is
the same).

Every command works on a project root (``--root``, default: the folder holding ``_toc.yml`` at or above the
working directory, or ``$REPLIB_BOOK_ROOT``).

User errors (a bad argument, an unknown chapter, a malformed claims file, a model folder that does not exist,
a folder that cannot be written, a missing data mirror, a model not cached offline, another runner on the same
output folder, ...) print one line, ``error: <what>, <where>: <what to do>``, and exit 2; ``--debug`` shows the
traceback instead. Ctrl-C exits 130. A failed claim or chapter exits 1.

Each command imports its own modules when it runs (the imports at the top of :func:`_run`, :func:`_book`, ...):
``--help``, an argument error or ``report`` never pay for torch, sentence-transformers or jupyter-book. These
are the kit's only imports inside functions.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path

from replib._io import write_json_atomic
from replib.profiles import DEFAULT_PROFILE, PROFILES

from .book import report
from .errors import USER_ERRORS, BookBuildError, one_line
from .project import find_root, git_commit, toc_chapters

__all__ = ["USER_ERRORS", "main", "one_line"]


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error: ``error: <what>; see <prog> --help``, exit 2."""

    def error(self, message: str):
        self.exit(2, f"error: {message}; see {self.prog} --help\n")


def _number(kind: type, least: int | None = None, zero: bool = False) -> Callable[[str], int | float]:
    """An argparse type: ``kind(text)`` when it is greater than 0 (a count, a size, a scale, a time) and at least
    ``least`` when given, or with ``zero`` a finite number >= 0 (a tolerance); else a one-line argument error
    before anything runs."""

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid {kind.__name__} value: {text!r}") from None
        if zero and not 0 <= value < float("inf"):  # also NaN
            raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text!r}")
        if not zero and not value > 0:  # also NaN
            raise argparse.ArgumentTypeError(f"must be greater than 0, got {text!r}")
        if least is not None and value < least:
            raise argparse.ArgumentTypeError(f"must be at least {least}, got {text!r}")
        return value

    return parse


def _device(text: str) -> str:
    """An argparse type: a torch device this machine has (:func:`replib.models.base.check_device`)."""
    from replib.models.base import check_device

    try:
        return check_device(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _add_run_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("chapter", nargs="*", metavar="CHAPTER", help="chapter names, as --chapters (default: all)")
    p.add_argument("--profile", choices=PROFILES, default=DEFAULT_PROFILE)
    p.add_argument("--chapters", nargs="*", help="chapter names (default: all)")
    p.add_argument(
        "--part",
        metavar="NAME",
        help="run one part of one chapter (replib.parts: a model, a data set, a shard range, or rest); the "
        "chapter's claims are checked on the records of every part kept in the output folder, a claim of a "
        "part that has not run is 'missing'",
    )
    p.add_argument(
        "--list-parts",
        action="store_true",
        help="list the parts of the chapters (default: all) with their time limits, models and state in the "
        "output folder (done, stale, failed, missing); nothing runs",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="with --list-parts: a JSON list of {chapter, part, timeout_minutes, models} (the nightly's matrix)",
    )
    p.add_argument(
        "--scheduler",
        nargs="?",
        const="local",
        metavar="ADDRESS",
        help="run the chapters' parallel steps (alignment pairs, embedding shards) on Dask: a scheduler's "
        "address (tcp://host:8786), or without one a LocalCluster on this machine",
    )
    p.add_argument(
        "--model",
        action="append",
        metavar="NAME_OR_PATH",
        help="run the chapters on this model (registry key, folder, Hugging Face id[@revision]) instead "
        "of the profile's; repeatable; CHAPTER=NAME_OR_PATH for one chapter; a relative folder is taken from "
        "the working directory",
    )
    p.add_argument(
        "--rehearsal",
        action="store_true",
        help="paper-scale rehearsal: the paper profile's code paths with --model substituted, labelled "
        "a rehearsal (claims bound to the paper's models unverified); report in build/runs/rehearsal",
    )
    p.add_argument(
        "--seeds",
        "--seed",
        nargs="+",
        type=int,
        metavar="SEED",
        help="run each chapter once per seed (its seed parameter); a claim whose verdict differs between "
        "seeds is inconclusive (see the claims' seeds rule); default: the chapter's own seed, one run",
    )


def _add_execute_options(p: argparse.ArgumentParser, force_help: str, jobs: int = 1, jobs_help: str = "") -> None:
    """The options of the commands that execute chapters (``run``, ``all``)."""
    p.add_argument("--timeout-scale", type=_number(float), default=1.0, help="multiply every chapter's time limit")
    p.add_argument("--force", action="store_true", help=force_help)
    p.add_argument(
        "--jobs",
        type=_number(int),
        default=jobs,
        help="execute this many chapters (and seeds) at once, each kernel with cores/N BLAS and OpenMP threads "
        + (jobs_help or "(default 1: one at a time, with every core); not with --part"),
    )


def build_parser() -> argparse.ArgumentParser:
    """The command line's parser (every command and option)."""
    ap = _Parser(prog="python -m replib", description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, help="project root (default: found from the working directory)")
    ap.add_argument("--debug", action="store_true", help="show the traceback of an error")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p_run = sub.add_parser("run", help="execute the chapters with papermill and check every claim")
    _add_run_options(p_run)
    _add_execute_options(p_run, "execute every chapter even when its inputs are unchanged")
    _add_run_options(sub.add_parser("check", help="check claims of already executed notebooks (no execution)"))
    p_book = sub.add_parser("book", help="build the HTML book from executed notebooks (jupyter-book, strict)")
    p_book.add_argument("--profile", choices=PROFILES, default=DEFAULT_PROFILE)
    p_book.add_argument("--no-strict", action="store_true")
    p_book.add_argument(
        "--history",
        type=Path,
        metavar="DIR",
        help="a folder of nightly reports (<date>-<profile>.json, the reports branch) for the history page "
        "(default: this build's own reports)",
    )
    p_all = sub.add_parser("all", help="run + check + book: the main job")
    _add_run_options(p_all)
    _add_execute_options(
        p_all,
        "execute every chapter and rebuild the book even when nothing changed",
        jobs=min(2, os.cpu_count() or 1),
        jobs_help="(default 2 where there are two cores or more: most of a chapter runs on one core, so two side by "
        "side shorten the main job)",
    )
    p_nb = sub.add_parser(
        "notebooks", help="write the runnable .ipynb of every chapter (Colab, Jupyter without jupytext)"
    )
    p_nb.add_argument("-o", "--output", type=Path, default=Path("build/ipynb"), help="folder (default build/ipynb)")
    p_nb.add_argument("--ref", help="git commit the Colab bootstrap checks out (default: the checked-out commit)")
    p = sub.add_parser("bench", help="time each hot step against its reference tool (bookkit.bench.bench)")
    p.add_argument("--quick", action="store_true", help="small sizes (seconds)")
    p.add_argument("--repeat", type=_number(int), default=3, help="best of this many runs per timing")
    p.add_argument(
        "--steps", nargs="*", help="isoscore cosine silhouette lid alignment kmeans kmeans2 embedding (default all)"
    )
    p.add_argument("--json", type=Path, help="also write the rows as JSON here")
    p.add_argument(
        "--floor",
        action="store_true",
        help="also time each step's floor (the one BLAS/SIMD call doing its essential work, same size and dtype) "
        "and the forward passes: replib's extraction against the bare forward, GFLOP/s against this CPU's GEMM "
        "peak (MiniLM and a full-size BERT-large geometry), padding on Swiss-Prot's lengths (bookkit.bench.bench_forward)",
    )
    p.add_argument(
        "--precision",
        action="store_true",
        help="also compare the bf16 forward (autocast; fp16 too on CUDA) with float32: tokens per second and the "
        "difference in IsoScore and effective dimensions",
    )
    p.add_argument(
        "--scaling",
        type=Path,
        metavar="DIR",
        help="instead: measure each chapter's dominant step over two orders of magnitude of work, fit the "
        "exponent, write DIR/scaling.png and DIR/scaling_results.txt (with paper-profile H100 estimates)",
    )
    p.add_argument(
        "--markdown",
        type=Path,
        help="also write the table with the machine and date here (the benchmarks page"
        " includes book/bench_results.txt)",
    )
    p = sub.add_parser("report", help="runner reports: merge, drift between two runs, dashboard page")
    rsub = p.add_subparsers(dest="report_cmd", required=True)
    merge = rsub.add_parser("merge", help="merge reports (one per profile; the latest run of a chapter wins)")
    merge.add_argument("reports", nargs="+")
    merge.add_argument("-o", "--output", help="write the merged JSON here (default: stdout)")
    drift = rsub.add_parser("drift", help="claims whose status or value changed between two reports")
    drift.add_argument("old")
    drift.add_argument("new")
    drift.add_argument(
        "--rtol", type=_number(float, zero=True), default=1e-9, help="relative change below which values are equal"
    )
    drift.add_argument("--json", help="also write the drift rows as JSON here")
    drift.add_argument(
        "--fail-on-status-change",
        action="store_true",
        help="exit 1 when a claim changed status (or appeared/disappeared)",
    )
    dash = rsub.add_parser("dashboard", help="the validation page (Markdown) from one or more reports")
    dash.add_argument("reports", nargs="+")
    dash.add_argument("-o", "--output", help="write the Markdown here (default: stdout)")
    p = sub.add_parser("card", help="isotropy card of any model: per-layer metrics, JSON + HTML (replib.card)")
    p.add_argument("model", help="registry key, folder path, or Hugging Face id[@revision]")
    p.add_argument(
        "--data",
        type=Path,
        help="text file, one line per row (protein models: one sequence per "
        "line, or FASTA); default WikiText-2 test / Swiss-Prot 5k",
    )
    p.add_argument("-o", "--output", type=Path, help="folder (default build/cards/<model slug>)")
    p.add_argument(
        "--max-rows", type=_number(int, least=4), default=5000, help="rows per layer kept for the metrics (>= 4)"
    )
    p.add_argument("--n-lines", type=_number(int), default=400, help="WikiText-2 lines (text models)")
    p.add_argument("--n-proteins", type=_number(int), default=100, help="Swiss-Prot sequences (protein models)")
    p.add_argument("--device", type=_device, help="torch device (default: cuda when available)")
    p = sub.add_parser(
        "rehearsal",
        help="each chapter's own notebook in the paper profile at a fraction of its sizes on full-size stand-ins; "
        "one row per chapter (part 'all') in book/rehearsal.csv (bookkit.bench.rehearsal)",
    )
    p.add_argument("chapter", nargs="*", metavar="CHAPTER", help="chapters (default: all)")
    p.add_argument(
        "--fraction",
        type=_number(float),
        nargs="+",
        default=[0.01, 0.1],
        help="shares of the paper profile's sizes (two: the start-up and memory growth apart; the largest >= 0.1)",
    )
    p.add_argument("--csv", type=Path, help="the table (default book/rehearsal.csv)")
    p.add_argument("--workdir", type=Path, help="stand-ins, logs (default build/rehearsal/work)")
    p.add_argument("--force", action="store_true", help="rehearse chapters whose row is ok again")
    p.add_argument("--timeout", type=_number(float), default=7200.0, help="seconds before a run is killed")
    p.add_argument(
        "--deadline",
        type=_number(float),
        help="seconds for each chapter as a whole: a larger share runs only if the line through the smaller "
        "shares' times says it ends in time",
    )
    p.add_argument(
        "--unmeasured",
        action="store_true",
        help="run nothing: a chapter whose row is not ok gets a row 'not yet measured on a GPU' with the command",
    )
    for p in sub.choices.values():  # --root and --debug after the command too (the top level's defaults stay)
        p.add_argument("--root", type=Path, default=argparse.SUPPRESS, help=argparse.SUPPRESS)
        p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    return ap


def _model_specs(values: list[str] | None, chapters: list[str], base_dir: Path) -> dict[str, tuple]:
    """``--model`` values parsed at the edge, once: ``{chapter or "*": (ModelRef, ...)}``, what every layer of
    the run passes on. ``chapter=SPEC`` is for one chapter (``chapter`` one of ``chapters``), anything else for
    every chapter; order is kept, and a chapter's own models replace the global ones for it. A relative folder
    is taken from ``base_dir`` (the caller's working directory), never from where a chapter runs; a Hub id not
    cached while offline is one error line before any chapter starts."""
    from replib.models import ModelRef
    from replib.models.hub import check_hub_available

    out: dict[str, tuple] = {}
    for v in values or []:
        head, sep, tail = str(v).partition("=")
        key, spec = (head, tail) if sep and head in chapters else ("*", str(v))
        if not spec:
            raise ValueError(f"--model {v!r}: empty model spec")
        ref = ModelRef.parse(spec, base_dir=base_dir)
        if ref.kind == "hub":
            check_hub_available(ref.name, ref.revision)
        out[key] = out.get(key, ()) + (ref,)
    return out


def _run(args) -> int:
    """``run``, ``check`` and ``all`` (which then computes the atlas and builds the book, also after a failed
    claim)."""
    from .book.atlas import for_book
    from .book.book import build
    from .run.lanes import lane_threads
    from .run.run_report import format_table
    from .run.runner import chapter_names, format_parts, minutes_text, part_list, run

    if args.rehearsal and args.profile != "paper":
        raise ValueError("--rehearsal runs the paper profile: add --profile paper")
    if args.json and not args.list_parts:
        raise ValueError("--json goes with --list-parts")
    root = find_root(args.root)
    models = _model_specs(args.model, chapter_names(root), Path.cwd())
    named = args.chapters is not None or args.chapter  # positional and --chapters (None: all)
    chapters = [*args.chapter, *(args.chapters or [])] if named else None
    if args.list_parts:  # a table with each part's state, or (--json) the nightly's list
        out_dir = root / "build" / "runs" / ("rehearsal" if args.rehearsal else args.profile)
        rows = part_list(args.profile, chapters, root, out_dir, models=models or None, states=not args.json)
        keys = ("chapter", "part", "timeout_minutes", "models")
        print(json.dumps([{k: r[k] for k in keys} for r in rows]) if args.json else format_parts(rows))
        return 0

    def book_after_first_seed(provisional: dict) -> None:  # the main job: a page as soon as the first seed is done
        try:
            html = build(args.profile, root=root, force=args.force)
        except BookBuildError as exc:  # the book is built again at the end, where a failure counts
            print(f"book after the first seed not built: {exc}")
            return
        seeds = " ".join(map(str, provisional["provisional"]["seeds"]))
        after = minutes_text(time.perf_counter() - started)
        print(
            f"book built after seed {provisional['seeds'][0]} of {seeds}, {after} after the chapters started: "
            f"{html / 'index.html'} (rebuilt at the end)"
        )
        # the atlas reads the trained models, which the first seeds left in the cache: computed now, on this lane
        # while the other lanes run the later seeds (with --jobs, on this lane's share of the cores, not on every
        # core beside their kernels), so the final build finds its cards done
        jobs = getattr(args, "jobs", 1)
        for_book(args.profile, root, threads=lane_threads(jobs) if jobs > 1 else None)

    started = time.perf_counter()
    rep = run(
        profile=args.profile,
        chapters=chapters,
        check_only=args.cmd == "check",
        timeout_scale=getattr(args, "timeout_scale", 1.0),
        root=root,
        models=models or None,
        rehearsal=args.rehearsal,
        seeds=args.seeds,
        force=getattr(args, "force", False),
        part=args.part,
        scheduler=args.scheduler,
        jobs=getattr(args, "jobs", 1),
        after_first_seed=book_after_first_seed if args.cmd == "all" else None,
    )
    print(format_table(rep))
    failed = rep["summary"]["failed"] > 0 or rep["summary"]["chapter_failures"] > 0
    if args.cmd == "all":  # the main job builds the book even when a claim failed: the validation page shows it
        failed = bool(for_book(args.profile, root)) or failed  # the atlas page reads the trained models too
        html = build(args.profile, root=root, force=args.force)
        print(f"book built: {html / 'index.html'}")
    return 1 if failed else 0


def _book(args) -> int:
    from .book.book import build

    html = build(args.profile, strict=not args.no_strict, root=find_root(args.root), history_dir=args.history)
    print(f"book built: {html / 'index.html'}")
    return 0


def _notebooks(args) -> int:
    from .notebooks import write_runnable

    root = find_root(args.root)
    ref = args.ref or git_commit(root)
    for chapter in toc_chapters(root):
        print(write_runnable(root, chapter, args.output / f"{chapter}.ipynb", ref=ref))
    return 0


def _bench(args) -> int:
    from .bench import bench, scaling

    if args.scaling:
        rows = scaling.run()
        args.scaling.mkdir(parents=True, exist_ok=True)
        scaling.plot(rows, args.scaling / "scaling.png")
        machine = f"{bench.cpu_model()}, {os.cpu_count()} CPU cores"
        (args.scaling / "scaling_results.txt").write_text(scaling.markdown(rows, machine) + "\n")
        print(scaling.markdown(rows, machine))
        return 0
    rows = bench.run(quick=args.quick, repeat=args.repeat, steps=args.steps, floor=args.floor)
    extra, extra_rows = "", {}
    if args.floor or args.precision:
        from .bench import bench_forward

        extra, extra_rows = bench_forward.sections(args.quick, args.repeat, args.precision, floor=args.floor)
        extra = "\n\n" + extra
    print(bench.markdown(rows) + extra)
    if args.json:
        write_json_atomic(
            args.json, {"steps": bench.as_dicts(rows), **extra_rows} if extra_rows else bench.as_dicts(rows)
        )
    if args.markdown:
        args.markdown.write_text(bench.markdown(rows, repeat=args.repeat) + extra + "\n")
    return 0 if all(r.equal for r in rows) else 1


def _report(args) -> int:
    if args.report_cmd == "merge":
        try:  # the project: the claims files of chapters run in parts (checked again on their merged records)
            root = find_root(args.root)
        except FileNotFoundError:
            root = None
        merged = report.merge([r for path in args.reports for r in report.load(path)], root=root)
        doc = merged[0] if len(merged) == 1 else report.bundle(merged)
        if args.output:
            write_json_atomic(args.output, doc)
        else:
            print(json.dumps(doc, indent=1))
        return 0
    if args.report_cmd == "drift":
        rows = report.drift(report.load(args.old), report.load(args.new), rtol=args.rtol)
        print(report.format_drift(rows))
        if args.json:
            write_json_atomic(args.json, rows)
        status_changed = any(r["change"] in ("status", "added", "removed") for r in rows)
        return 1 if args.fail_on_status_change and status_changed else 0
    md = report.dashboard_markdown([r for path in args.reports for r in report.load(path)])
    if args.output:
        Path(args.output).write_text(md)
    else:
        print(md)
    return 0


def _read_rows(path: Path) -> list[str]:
    """Lines of a text file; FASTA records (``>`` headers) are joined into one sequence each."""
    from Bio.SeqIO.FastaIO import SimpleFastaParser

    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: byte {exc.start} is not UTF-8 text; --data takes a text or FASTA file") from None
    if not any(ln.startswith(">") for ln in text.splitlines()):
        return [ln for ln in text.splitlines() if ln.strip()]
    return [seq for _, seq in SimpleFastaParser(io.StringIO(text)) if seq]


def _card(args) -> int:
    from replib.card import CardConfig, compute_card
    from replib.models import ModelRef

    ref = ModelRef.parse(args.model, base_dir=Path.cwd())
    cfg = CardConfig(max_rows=args.max_rows, n_lines=args.n_lines, n_proteins=args.n_proteins)
    out = args.output or Path("build") / "cards" / ref.slug
    data = _read_rows(args.data) if args.data else None
    card = compute_card(ref, out, data=data, cfg=cfg, device=args.device)
    print(f"card of {card['model']['name']}: {len(card['layers'])} layers -> {out / 'card.json'}, {out / 'card.html'}")
    return 0


def _rehearsal(args) -> int:
    from .bench import rehearsal

    root = find_root(args.root)
    rows = rehearsal.rehearse(
        args.chapter or toc_chapters(root), args.csv or root / "book" / "rehearsal.csv",
        args.workdir or root / "build" / "rehearsal" / "work", root, fractions=args.fraction, force=args.force,
        timeout=args.timeout, deadline=args.deadline, unmeasured=args.unmeasured,
    )  # fmt: skip
    return 0 if args.unmeasured or (rows and all(r["status"] == "ok" for r in rows)) else 1


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "run": _run,
    "check": _run,
    "all": _run,
    "book": _book,
    "notebooks": _notebooks,
    "bench": _bench,
    "report": _report,
    "card": _card,
    "rehearsal": _rehearsal,
}


def main(argv: list[str] | None = None) -> int:
    """Run one command; returns its exit status (0 ok, 1 a claim or chapter failed, 2 a user error, 130
    interrupted)."""
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.cmd](args)
    except KeyboardInterrupt:
        if args.debug:
            raise
        print("interrupted", file=sys.stderr)
        return 130
    except USER_ERRORS as exc:
        if args.debug:
            traceback.print_exc()
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

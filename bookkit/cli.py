"""Command line: ``python -m replib run|check|book|all|notebooks|report|card``.

Every command works on a project root (``--root``, default: the folder holding ``_toc.yml`` at or above
the working directory, or ``$REPLIB_BOOK_ROOT``)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from replib._io import write_json_atomic
from replib.profiles import DEFAULT_PROFILE, PROFILES

from . import book, report, runner
from .notebooks import write_runnable
from .project import find_root, git_commit, toc_chapters


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m replib", description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)

    ap.add_argument("--root", type=Path, help="project root (default: found from the working directory)")

    def common(p):
        p.add_argument("--profile", choices=PROFILES, default=DEFAULT_PROFILE)
        p.add_argument("--chapters", nargs="*", help="chapter names (default: all)")
        p.add_argument(
            "--model",
            action="append",
            metavar="NAME_OR_PATH",
            help="run the chapters on this model (registry key, folder, Hugging Face id[@revision]) instead "
            "of the profile's; repeatable; CHAPTER=NAME_OR_PATH for one chapter",
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

    p_run = sub.add_parser("run", help="execute the chapters with papermill and check every claim")
    common(p_run)
    p_run.add_argument("--timeout-scale", type=float, default=1.0, help="multiply every chapter's time limit")
    p_run.add_argument("--force", action="store_true", help="execute every chapter even when its inputs are unchanged")
    p_chk = sub.add_parser("check", help="check claims of already executed notebooks (no execution)")
    common(p_chk)
    p_book = sub.add_parser("book", help="build the HTML book from executed notebooks (jupyter-book, strict)")
    p_book.add_argument("--profile", choices=PROFILES, default=DEFAULT_PROFILE)
    p_book.add_argument("--no-strict", action="store_true")
    p_all = sub.add_parser("all", help="run + check + book: the main job")
    common(p_all)
    p_all.add_argument("--timeout-scale", type=float, default=1.0)
    p_all.add_argument(
        "--force", action="store_true", help="execute every chapter and rebuild the book even when nothing changed"
    )
    p_nb = sub.add_parser(
        "notebooks", help="write the runnable .ipynb of every chapter (Colab, Jupyter without jupytext)"
    )
    p_nb.add_argument("-o", "--output", type=Path, default=Path("build/ipynb"), help="folder (default build/ipynb)")
    p_nb.add_argument("--ref", help="git commit the Colab bootstrap checks out (default: the checked-out commit)")
    p_bench = sub.add_parser("bench", help="time each hot step against its reference tool (bookkit.bench)")
    p_bench.add_argument("--quick", action="store_true", help="small sizes (seconds)")
    p_bench.add_argument("--repeat", type=int, default=3, help="best of this many runs per timing")
    p_bench.add_argument(
        "--steps", nargs="*", help="isoscore cosine silhouette lid alignment kmeans kmeans2 embedding (default all)"
    )
    p_bench.add_argument("--json", type=Path, help="also write the rows as JSON here")
    p_bench.add_argument(
        "--scaling",
        type=Path,
        metavar="DIR",
        help="instead: measure each chapter's dominant step over two orders of magnitude of work, fit the "
        "exponent, write DIR/scaling.png and DIR/scaling_results.txt (with paper-profile H100 estimates)",
    )
    p_bench.add_argument(
        "--markdown",
        type=Path,
        help="also write the table with the machine, date and commit here (the running page"
        " includes book/bench_results.txt)",
    )
    p_rep = sub.add_parser("report", help="runner reports: merge, drift between two runs, dashboard page")
    rsub = p_rep.add_subparsers(dest="report_cmd", required=True)
    r_merge = rsub.add_parser("merge", help="merge reports (one per profile; the latest run of a chapter wins)")
    r_merge.add_argument("reports", nargs="+")
    r_merge.add_argument("-o", "--output", help="write the merged JSON here (default: stdout)")
    r_drift = rsub.add_parser("drift", help="claims whose status or value changed between two reports")
    r_drift.add_argument("old")
    r_drift.add_argument("new")
    r_drift.add_argument("--rtol", type=float, default=1e-9, help="relative change below which values are equal")
    r_drift.add_argument("--json", help="also write the drift rows as JSON here")
    r_drift.add_argument(
        "--fail-on-status-change",
        action="store_true",
        help="exit 1 when a claim changed status (or appeared/disappeared)",
    )
    r_dash = rsub.add_parser("dashboard", help="the validation page (Markdown) from one or more reports")
    r_dash.add_argument("reports", nargs="+")
    r_dash.add_argument("-o", "--output", help="write the Markdown here (default: stdout)")
    p_card = sub.add_parser("card", help="isotropy card of any model: per-layer metrics, JSON + HTML (replib.card)")
    p_card.add_argument("model", help="registry key, folder path, or Hugging Face id[@revision]")
    p_card.add_argument(
        "--data",
        type=Path,
        help="text file, one line per row (protein models: one sequence per "
        "line, or FASTA); default WikiText-2 test / Swiss-Prot 5k",
    )
    p_card.add_argument("-o", "--output", type=Path, help="folder (default build/cards/<model slug>)")
    p_card.add_argument("--max-rows", type=int, default=5000, help="rows per layer kept for the metrics")
    p_card.add_argument("--n-lines", type=int, default=400, help="WikiText-2 lines (text models)")
    p_card.add_argument("--n-proteins", type=int, default=100, help="Swiss-Prot sequences (protein models)")
    p_card.add_argument("--device", help="torch device (default: cuda when available)")
    args = ap.parse_args(argv)
    if args.cmd == "card":
        return _card(args)

    if args.cmd == "report":
        return _report(args)
    if args.cmd == "bench" and args.scaling:
        from . import scaling
        from .bench import _cpu_model

        rows = scaling.run()
        args.scaling.mkdir(parents=True, exist_ok=True)
        scaling.plot(rows, args.scaling / "scaling.png")
        machine = f"{_cpu_model()}, {os.cpu_count()} CPU cores"
        (args.scaling / "scaling_results.txt").write_text(scaling.markdown(rows, machine) + "\n")
        print(scaling.markdown(rows, machine))
        return 0
    if args.cmd == "bench":
        from . import bench

        rows = bench.run(quick=args.quick, repeat=args.repeat, steps=args.steps)
        print(bench.markdown(rows))
        if args.json:
            write_json_atomic(args.json, bench.as_dicts(rows))
        if args.markdown:
            try:
                commit = git_commit(find_root(args.root))
            except Exception:
                commit = None
            args.markdown.write_text(bench.markdown(rows, commit=commit, repeat=args.repeat) + "\n")
        return 0 if all(r.equal for r in rows) else 1
    root = find_root(args.root)
    if args.cmd == "notebooks":
        ref = args.ref or git_commit(root)
        for chapter in toc_chapters(root):
            print(write_runnable(root, chapter, args.output / f"{chapter}.ipynb", ref=ref))
        return 0
    if args.cmd in ("run", "check", "all"):
        if args.rehearsal and args.profile != "paper":
            print("error: --rehearsal runs the paper profile: add --profile paper", file=sys.stderr)
            return 2
        try:
            models = runner.parse_model_options(args.model, [c.chapter for c in runner.discover_chapters(root)])
            rep = runner.run(
                profile=args.profile,
                chapters=args.chapters,
                check_only=args.cmd == "check",
                timeout_scale=getattr(args, "timeout_scale", 1.0),
                root=root,
                models=models or None,
                rehearsal=args.rehearsal,
                seeds=args.seeds,
                force=getattr(args, "force", False),
            )
        except (ValueError, FileNotFoundError, runner.RunLockedError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        print(runner.format_table(rep))
        s = rep["summary"]
        failed = s["failed"] > 0 or s["chapter_failures"] > 0
        if args.cmd != "all":
            return 1 if failed else 0
    else:
        failed = False
    # the main job builds the book even when a claim failed: the validation page shows the failure
    html = book.build(
        args.profile, strict=not getattr(args, "no_strict", False), root=root, force=getattr(args, "force", False)
    )
    print(f"book built: {html / 'index.html'}")
    return 1 if failed else 0


def _read_rows(path: Path) -> list[str]:
    """Lines of a text file; FASTA records (``>`` headers) are joined into one sequence each."""
    lines = path.read_text().splitlines()
    if not any(ln.startswith(">") for ln in lines):
        return [ln for ln in lines if ln.strip()]
    seqs, cur = [], []
    for ln in lines:
        if ln.startswith(">"):
            if cur:
                seqs.append("".join(cur))
            cur = []
        elif ln.strip():
            cur.append(ln.strip())
    if cur:
        seqs.append("".join(cur))
    return seqs


def _card(args) -> int:
    from replib.card import CardConfig, compute_card
    from replib.models import ModelUnavailableError, model_slug

    cfg = CardConfig(max_rows=args.max_rows, n_lines=args.n_lines, n_proteins=args.n_proteins)
    out = args.output or Path("build") / "cards" / model_slug(args.model)
    try:
        data = _read_rows(args.data) if args.data else None
        card = compute_card(args.model, out, data=data, cfg=cfg, device=args.device)
    except (ModelUnavailableError, ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"card of {card['model']['name']}: {len(card['layers'])} layers -> {out / 'card.json'}, {out / 'card.html'}")
    return 0


def _report(args) -> int:
    try:
        if args.report_cmd == "merge":
            merged = report.merge([r for path in args.reports for r in report.load(path)])
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
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

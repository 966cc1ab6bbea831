"""Command line: ``python -m replib run|check|book|all|report``."""
from __future__ import annotations

import argparse
import sys

from .claims import DEFAULT_PROFILE, PROFILES


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m replib", description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)

    def common(p):
        p.add_argument("--profile", choices=PROFILES, default=DEFAULT_PROFILE)
        p.add_argument("--chapters", nargs="*", help="chapter names (default: all)")

    p_run = sub.add_parser("run", help="execute the chapters with papermill and check every claim")
    common(p_run)
    p_run.add_argument("--timeout-scale", type=float, default=1.0, help="multiply every chapter's time limit")
    p_chk = sub.add_parser("check", help="check claims of already executed notebooks (no execution)")
    common(p_chk)
    p_book = sub.add_parser("book", help="build the HTML book from executed notebooks (jupyter-book, strict)")
    p_book.add_argument("--profile", choices=PROFILES, default=DEFAULT_PROFILE)
    p_book.add_argument("--no-strict", action="store_true")
    p_all = sub.add_parser("all", help="run + check + book: the main job")
    common(p_all)
    p_all.add_argument("--timeout-scale", type=float, default=1.0)
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
    r_drift.add_argument("--fail-on-status-change", action="store_true",
                         help="exit 1 when a claim changed status (or appeared/disappeared)")
    r_dash = rsub.add_parser("dashboard", help="the validation page (Markdown) from one or more reports")
    r_dash.add_argument("reports", nargs="+")
    r_dash.add_argument("-o", "--output", help="write the Markdown here (default: stdout)")
    args = ap.parse_args(argv)

    if args.cmd == "report":
        return _report(args)

    from . import book, runner

    if args.cmd in ("run", "check", "all"):
        report = runner.run(profile=args.profile, chapters=args.chapters, check_only=args.cmd == "check",
                            timeout_scale=getattr(args, "timeout_scale", 1.0))
        print(runner.format_table(report))
        s = report["summary"]
        failed = s["failed"] > 0 or s["chapter_failures"] > 0
        if args.cmd != "all":
            return 1 if failed else 0
    else:
        failed = False
    # the main job builds the book even when a claim failed: the validation page shows the failure
    html = book.build(args.profile, strict=not getattr(args, "no_strict", False))
    print(f"book built: {html / 'index.html'}")
    return 1 if failed else 0


def _report(args) -> int:
    import json

    from . import report
    from ._io import write_json_atomic

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
            from pathlib import Path

            Path(args.output).write_text(md)
        else:
            print(md)
        return 0
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

"""Command line: ``python -m replib run|check|book|all``."""
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
    args = ap.parse_args(argv)

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


if __name__ == "__main__":
    sys.exit(main())

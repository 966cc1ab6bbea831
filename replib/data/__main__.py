"""``python -m replib.data verify [--dataset NAME ...]``, ``python -m replib.data prefetch [--dataset NAME ...]``
and ``python -m replib.data extract-swissprot``."""

import argparse
import sys

from .registry import DATASETS
from .store import fetch, verify_main
from .swissprot import main as swissprot_main


def prefetch_main(argv=None) -> int:
    """Fetch every registered file that has a source (mirror, cache, direct URL or canonical archive) into the
    cache, verified, so that a later run needs no network (``REPLIB_DATA_OFFLINE=1``); files that are generated
    locally (the full Swiss-Prot set) are left out. Exit status 1 when any file could not be fetched."""
    ap = argparse.ArgumentParser(prog="python -m replib.data prefetch", description=prefetch_main.__doc__)
    ap.add_argument("--dataset", action="append", choices=sorted(DATASETS), help="only this data set (repeatable)")
    args = ap.parse_args(argv)
    failed = 0
    for name in args.dataset or sorted(DATASETS):
        for rel, entry in DATASETS[name].files.items():
            if not (entry.in_mirror or entry.urls or entry.archive):
                continue
            try:
                path = fetch(name, rel)
            except Exception as exc:
                failed += 1
                lines = str(exc).splitlines() or [type(exc).__name__]
                why = next((x for x in lines if x.startswith("Attempts: ")), lines[0])  # what was tried and why
                print(f"FAILED   {name}/{rel}: {why}")
            else:
                print(f"ok       {name}/{rel} {path.stat().st_size / 1e6:.1f} MB")
    print(f"{failed} failed")
    return 1 if failed else 0


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["verify"]:
        return verify_main(argv[1:])
    if argv[:1] == ["prefetch"]:
        return prefetch_main(argv[1:])
    return swissprot_main(argv)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())

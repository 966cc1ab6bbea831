"""``python -m replib.data verify [--dataset NAME ...]``, ``python -m replib.data prefetch [--dataset NAME ...]``
and ``python -m replib.data extract-swissprot``."""

import argparse

from .registry import DATASETS
from .store import MIRROR_ENV, fetch, verify_all
from .swissprot import extract_swissprot_full


def verify(args) -> int:
    """Re-hash every registered data file found in the mirror ($REPLIB_DATA_MIRROR) and the cache, ignoring
    remembered verifications. Exit status 1 when any file fails its checksum (each failure is printed with its
    path)."""
    rows = verify_all(args.mirror, args.cache, args.dataset)
    for path, status, msg in rows:
        print("%-8s %s%s" % (status, path, (" - " + msg) if msg else ""))
    failed = sum(status == "FAILED" for _, status, _ in rows)
    print("%d files checked, %d failed" % (len(rows), failed))
    return 1 if failed else 0


def prefetch(args) -> int:
    """Fetch every registered file that has a source (mirror, cache, direct URL or canonical archive) into the
    cache, verified, so that a later run needs no network (``REPLIB_DATA_OFFLINE=1``); files that are generated
    locally (the full Swiss-Prot set) are left out. Exit status 1 when any file could not be fetched."""
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
    ap = argparse.ArgumentParser(prog="python -m replib.data", description="The registered data files.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    v = sub.add_parser("verify", help="re-hash the registered files", description=verify.__doc__)
    v.add_argument("--dataset", action="append", help="only this data set (repeatable)")
    v.add_argument("--mirror", help="mirror folder (default $%s)" % MIRROR_ENV)
    v.add_argument("--cache", help="cache folder (default $REPLIB_CACHE_DIR/data)")
    p = sub.add_parser("prefetch", help="fetch every registered file into the cache", description=prefetch.__doc__)
    p.add_argument("--dataset", action="append", choices=sorted(DATASETS), help="only this data set (repeatable)")
    ex = sub.add_parser("extract-swissprot", help="extract the full 486k Swiss-Prot 2014-01 set from metastudent-data")
    ex.add_argument("--deb", help="path of metastudent-data_2.0.1-8_all.deb (default: fetch it)")
    ex.add_argument("--out", help="output FASTA (default: the replib cache)")
    args = ap.parse_args(argv)
    if args.cmd == "extract-swissprot":
        print(extract_swissprot_full(args.deb, args.out))
        return 0
    return verify(args) if args.cmd == "verify" else prefetch(args)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())

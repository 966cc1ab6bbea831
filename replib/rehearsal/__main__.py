"""``python -m replib.rehearsal run CHAPTER PART --workdir DIR --json FILE``: rehearse one part (see
:mod:`replib.rehearsal`); the kit's ``python -m replib rehearsal`` runs every part this way in a child process."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .._io import write_json_atomic
from . import Context, rehearse_part


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m replib.rehearsal", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run", help="rehearse one part")
    run.add_argument("chapter")
    run.add_argument("part")
    run.add_argument("--workdir", type=Path, required=True, help="the chapter's rehearsal folder")
    run.add_argument("--json", type=Path, required=True, help="write the part's result here")
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--scale", type=float, default=1.0, help="sizes of the forward measurements (1.0: a minute)")
    run.add_argument("--max-items", type=int, default=None, help="cap the statistics' items (tests)")
    run.add_argument("--stats-flops", type=float, default=1e12, help="accumulator work of the statistics here")
    run.add_argument("--progress", action="store_true")
    args = ap.parse_args(argv)
    ctx = Context(args.workdir, args.seed, args.scale, args.max_items, args.progress, args.stats_flops)
    out = rehearse_part(args.chapter, args.part, ctx)
    write_json_atomic(args.json, json.loads(json.dumps(out, default=_plain)))
    print(json.dumps({k: out[k] for k in ("chapter", "part", "t4_hours_estimate", "fraction_of_paper")}))
    return 0


def _plain(value):
    return value.tolist() if hasattr(value, "tolist") else str(value)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

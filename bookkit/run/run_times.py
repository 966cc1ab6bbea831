"""The running page's run-time table (``book/measurements/run_times.csv``) written from a runner's report, so
that no time in it is typed by hand: ``python -m bookkit.run.run_times REPORT --cache cold --what "..."``
adds one row per chapter and seed (the first seed with the chapter's preparation, as the budget counts it,
:mod:`bookkit.run.budget`), one for the runner from its start to its end, and, with ``--wall``, the whole
command's seconds; rows of an earlier measurement with the same ``what`` and ``cache`` are replaced."""

from __future__ import annotations

import argparse
import json
import os
from datetime import datetime
from pathlib import Path

from replib._io import read_csv, write_csv_atomic

__all__ = ["COLUMNS", "RUN_TIMES", "cold_seconds", "machine", "rows_from_report", "main"]

RUN_TIMES = Path("book") / "measurements" / "run_times.csv"
COLUMNS = ("chapter", "profile", "cache", "seeds", "seconds", "date", "machine", "what")


def machine() -> str:
    """This machine in words: its CPU cores, CPU model and GPU (``"2 CPU cores (AMD EPYC 7B13), no GPU"``)."""
    cpuinfo = Path("/proc/cpuinfo")
    lines = cpuinfo.read_text().splitlines() if cpuinfo.exists() else []
    names = [ln.split(":", 1)[1].strip() for ln in lines if ln.startswith("model name")]
    return f"{os.cpu_count()} CPU cores{f' ({names[0]})' if names else ''}, no GPU"


def cold_seconds(root: Path, profile: str) -> dict[str, tuple[float | None, float | None]]:
    """``chapter -> (seed 0's seconds, a further seed's)`` in the newest cold measurement of ``profile`` in the
    run-time table (rows are appended, so a later row replaces an earlier one; None where none was measured)."""
    out: dict = {}
    for r in read_csv(Path(root) / RUN_TIMES):
        if r["cache"] == "cold" and r["profile"] == profile and r["seeds"].isdigit():
            first, each = out.get(r["chapter"], (None, None))
            out[r["chapter"]] = (float(r["seconds"]), each) if r["seeds"] == "0" else (first, float(r["seconds"]))
    return out


def rows_from_report(report: dict, cache: str, what: str, wall: float | None = None) -> list[dict]:
    """The table's rows for one run: each chapter's seeds executed in it (the first with the chapter's
    preparation; a reused execution's seconds belong to the run that made it), the runner's span (``started`` to
    ``finished``) and, when given, the command's ``wall`` seconds."""
    day = report["started"][:10]
    gpu = report.get("environment", {}).get("device", "cpu")
    where = machine() if gpu == "cpu" else machine().replace("no GPU", gpu)
    base = {"profile": report["profile"], "cache": cache, "date": day, "machine": where, "what": what}
    rows = []
    for c in report["chapters"]:
        for i, (seed, info) in enumerate(sorted(c.get("seeds", {}).items(), key=lambda kv: int(kv[0]))):
            if info.get("reused"):
                continue
            extra = float(c.get("prepare_seconds") or 0.0) if i == 0 else 0.0
            rows.append({**base, "chapter": c["chapter"], "seeds": seed, "seconds": round(info["seconds"] + extra)})
    seeds = " ".join(str(s) for s in report.get("seeds") or [])
    runner_s = (datetime.fromisoformat(report["finished"]) - datetime.fromisoformat(report["started"])).total_seconds()
    rows.append({**base, "chapter": "runner", "seeds": seeds, "seconds": round(runner_s)})
    if wall is not None:
        rows.append({**base, "chapter": "all", "seeds": seeds, "seconds": round(wall)})
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bookkit.run.run_times", description=__doc__.split("\n\n")[0])
    parser.add_argument("report", type=Path, help="a runner's report.json")
    parser.add_argument("--cache", choices=("cold", "warm", "unchanged"), required=True)
    parser.add_argument("--what", required=True, help="what was run, in words (replaces earlier rows of it)")
    parser.add_argument("--wall", type=float, help="the whole command's seconds (setup and book included)")
    parser.add_argument("--table", type=Path, default=RUN_TIMES)
    args = parser.parse_args(argv)
    new = rows_from_report(json.loads(args.report.read_text()), args.cache, args.what, args.wall)
    kept = [r for r in read_csv(args.table) if (r["what"], r["cache"]) != (args.what, args.cache)]
    write_csv_atomic(args.table, kept + new, COLUMNS)
    print(f"{args.table}: {len(new)} rows for {args.what!r} ({args.cache})")


if __name__ == "__main__":
    main()

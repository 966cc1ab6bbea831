"""The runner's report on disk (``<out>/report.json``): where it ran (:func:`environment_info`), reading the last
one, merging a partial run into it, keeping it as it is when nothing changed, the plain-text table the command line
prints, and the claims of a run on substituted models (:func:`bind_to_paper_models`)."""

from __future__ import annotations

import json
import platform
from datetime import datetime, timezone
from pathlib import Path

from replib._io import write_json_atomic
from replib._optional import optional_import
from replib.profiles import NATIVE_BF16, cpu_flags

from ..claims.checker import XFAIL_HOLDS
from ..claims.status import closing_line, summarize
from ..project import git_commit
from .reuse import PACKAGES as RESULT_PACKAGES
from .reuse import version

torch = optional_import("torch")  # the kit runs without it: the device is then cpu

__all__ = [
    "bind_to_paper_models",
    "chapter_entry",
    "environment_info",
    "format_table",
    "new_report",
    "previous_report",
    "previous_seconds",
    "write_report",
]

#: the packages whose versions a report lists: those that can change a chapter's numbers, and the book's tools
PACKAGES = (*RESULT_PACKAGES, "papermill", "jupyter-book")


def environment_info(root: Path | None = None) -> dict:
    """Package versions, device and git commit for the report."""
    packages = {p: v for p in PACKAGES if (v := version(p)) is not None}
    info = {"python": platform.python_version(), "platform": platform.platform(), "packages": packages}
    try:  # the GPU torch would use (its name), else cpu
        info["device"] = torch.cuda.get_device_name(0) if torch is not None and torch.cuda.is_available() else "cpu"
    except Exception:  # a driver or build that torch cannot use: the report says cpu
        info["device"] = "cpu"
    flags = cpu_flags()  # the CPU's vector and bf16 instructions (each chapter's precision: its report entry)
    info["cpu_flags"] = sorted(f for f in flags if f.startswith(("avx", "amx", "fma")) or f in NATIVE_BF16)
    info["native_bf16"] = any(f in flags for f in NATIVE_BF16)
    info["git_commit"] = git_commit(root) if root is not None else None
    return info


#: report fields that change with every run (when it ran), not with what it found
_VOLATILE = ("started", "finished", "merged_from")


def bind_to_paper_models(results: list[dict], models, rehearsal: bool) -> list[dict]:
    """Claims of a run on substituted models: a value compared with a paper's number (a tolerance check)
    belongs to the paper's models, so it becomes ``unverified`` (never "reproduced"); a per-model key that
    the substituted run did not record is ``unverified`` too; an expected failure registered for the profile's
    own model that holds on the substituted one is ``consistent``, not a stale claims file. Other property
    claims keep their status."""
    what = "paper-scale rehearsal" if rehearsal else "run"
    models = [str(m) for m in models]  # ModelRefs or their specs
    out = []
    for r in results:
        r = dict(r)
        if r["check"].startswith("tolerance") and r["status"] != "unverified":
            r["detail"] = (
                f"{what} on {', '.join(models)}: value bound to the paper's models, not compared "
                f"(would be: {r['status']}: {r['detail']})"
            )
            r["status"] = "unverified"
        elif r["status"] == "failed" and r["detail"].startswith("value not recorded"):
            r["detail"] = f"{what} on {', '.join(models)}: {r['detail']} (a key of a model that did not run)"
            r["status"] = "unverified"
        elif r["status"] == "failed" and r["detail"].startswith(XFAIL_HOLDS):
            # the expected failure was registered for the profile's own model: on another model the claim holding
            # is a result about that model, not a stale claims file
            r["detail"] = f"{what} on {', '.join(models)}: holds on this model; " + r["detail"].split(": update")[0]
            r["status"] = "consistent"
        r["models"] = list(models)
        if rehearsal:
            r["rehearsal"] = True
        out.append(r)
    return out


def chapter_entry(ch, status: str, error: str | None, seconds: float, notebook: str | None, **more) -> dict:
    """A chapter's entry in a report: the chapter (:class:`~bookkit.claims.checker.ChapterClaims`) and its title,
    how its run ended, its seconds and executed notebook, then ``more`` (its models, data, parts, ...)."""
    entry = {"chapter": ch.chapter, "title": ch.title, "status": status, "error": error, "seconds": seconds}
    return {**entry, "notebook": notebook, **more}


def previous_report(out_dir: Path) -> dict:
    """The report of the last run into ``out_dir`` (``{}`` when there is none or it cannot be read)."""
    try:
        return json.loads((Path(out_dir) / "report.json").read_text())
    except (OSError, ValueError):
        return {}


def _same_outcome(new: dict, old: dict) -> bool:
    """True when every chapter of ``new`` was reused and it says exactly what ``old`` says (apart from when
    it ran): then rewriting the report would only change its timestamps (and rebuild the book for nothing)."""
    if not old or not new["chapters"] or not all(c.get("reused") for c in new["chapters"]):
        return False
    new, old = ({k: v for k, v in r.items() if k not in _VOLATILE} for r in (json.loads(json.dumps(new)), old))
    return new == old


def _merge_previous(report: dict, old: dict) -> None:
    """Keep the chapters (and their claims) of an earlier report of the same profile that this run did not
    touch; each chapter entry says which run it came from (``run_started``)."""
    if not old or (old.get("profile"), bool(old.get("rehearsal"))) != (
        report["profile"],
        bool(report.get("rehearsal")),
    ):
        return
    ran = {c["chapter"] for c in report["chapters"]}
    kept = [c for c in old.get("chapters", []) if c["chapter"] not in ran]
    for c in kept:
        c.setdefault("run_started", old.get("started"))
    report["chapters"] = kept + report["chapters"]
    report["claims"] = [c for c in old.get("claims", []) if c["chapter"] not in ran] + report["claims"]
    report["merged_from"] = [old.get("started"), report["started"]]


def write_report(report: dict, out_dir: Path, partial: bool, progress=print) -> None:
    """Write ``out_dir/report.json`` atomically; a ``partial`` run (some chapters) merges into the report of
    the others, never replaces it. When every chapter was reused and every verdict is the same, the file is
    kept as it is and ``report["unchanged"]`` is set."""
    old = previous_report(out_dir)
    on_disk = report
    if partial:
        on_disk = json.loads(json.dumps(report))
        _merge_previous(on_disk, old)
        on_disk["summary"] = summarize(on_disk["claims"], on_disk["chapters"])
    if _same_outcome(on_disk, old):
        report["unchanged"] = True
        progress("nothing changed since the last run: report.json kept")
    else:
        write_json_atomic(Path(out_dir) / "report.json", on_disk)


def _cell(v) -> str:
    return f"{v:.4g}" if isinstance(v, float) else ("—" if v is None else str(v))


def format_table(report: dict) -> str:
    """A plain-text table of every claim, then the closing line with every status counted separately
    (:func:`~bookkit.claims.status.closing_line`)."""
    rows = [("chapter", "key", "status", "value", "paper", "check")] + [
        (c["chapter"], c["key"], c["status"], _cell(c["value"])[:24], _cell(c["paper_value"])[:24], c["check"][:40])
        for c in report["claims"]
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)) for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    for ch in report["chapters"]:
        if ch["status"] != "ok":
            lines.append(f"chapter {ch['chapter']}: {ch['status']}: {ch['error']}")
        for c in report["claims"]:
            if c["chapter"] == ch["chapter"] and c["status"] == "failed":
                lines.append(f"  FAILED {c['key']}: {c['detail']}")
    lines.append(closing_line(report["summary"]))
    return "\n".join(lines)


def previous_seconds(out_dir: Path) -> dict:
    """``(chapter, seed) -> seconds`` of the report in ``out_dir``: a re-check keeps the run times of the run
    that executed the notebooks. A seed's time includes its share of the chapter's preparation
    (``prepare_seconds``, :func:`replib.config.prepare_chapter`: work done once for all its seeds), so that the lanes'
    longest-first order sees what executing the seed alone costs."""
    previous = {}
    for c in previous_report(out_dir).get("chapters", []):
        seeds = c.get("seeds") or {}
        share = float(c.get("prepare_seconds") or 0.0) / max(len(seeds), 1)
        for s, info in seeds.items():
            previous[(c["chapter"], int(s))] = info.get("seconds", 0.0) + share
        previous[(c["chapter"], None)] = c.get("seconds", 0.0)
    return previous


def new_report(
    profile: str, root: Path, models: dict | None, rehearsal: bool, seeds: list | None, part: str | None = None
) -> dict:
    """The head of a run's report: profile, start, environment, the run's options; no chapter yet."""
    report = {
        "profile": profile,
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "environment": environment_info(root),
        "chapters": [],
        "claims": [],
    }
    overrides = {k: [str(m) for m in v] for k, v in models.items()} if models else None
    extra = {
        "models_override": overrides,
        "rehearsal": True if rehearsal else None,
        "seeds": seeds or None,
        "part": part,
    }
    return {**report, **{k: v for k, v in extra.items() if v is not None}}

"""The tables and fits of the benchmark commands (``python -m replib bench`` and ``bench --scaling``), apart
from the benchmarks themselves (:mod:`bookkit.bench`, :mod:`bookkit.scaling`, which import the reference tools
and the science): a row of the benchmark, a measured scaling with its power-law fit, and their Markdown tables.
"""

from __future__ import annotations

import os
import platform
from dataclasses import asdict, dataclass
from datetime import datetime, timezone

import numpy as np

__all__ = ["BenchRow", "Scaling", "as_dicts", "cpu_model", "fit_power_law", "markdown", "scaling_markdown"]


@dataclass
class BenchRow:
    step: str
    size: str
    replib_s: float
    reference: str
    reference_s: float
    ratio: float
    max_abs_diff: float
    tolerance: float

    @property
    def equal(self) -> bool:
        return bool(self.max_abs_diff <= self.tolerance)


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``), else what ``platform`` says."""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def markdown(
    rows: list[BenchRow], commit: str | None = None, repeat: int | None = None, threads: int | None = None
) -> str:
    """The benchmark table (Markdown) with the machine it ran on (and, when given, torch's threads and the
    commit)."""
    threads = f", torch {threads} threads" if threads else ""
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        f"Machine: {cpu_model()}, {os.cpu_count()} CPU cores{threads}, Python {platform.python_version()}; "
        f"measured {when}"
        + (f" at commit `{commit[:12]}`" if commit else "")
        + (f", best of {repeat} runs per timing" if repeat else "")
        + ".",
        "",
        "| step | size | replib (s) | reference | reference (s) | ratio | max abs diff | equal |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.step} | {r.size} | {r.replib_s:.3f} | {r.reference} | {r.reference_s:.3f} | "
            f"{r.ratio:.2f} | {r.max_abs_diff:.2g} | {'yes' if r.equal else 'NO'} |"
        )
    return "\n".join(lines)


def as_dicts(rows: list[BenchRow]) -> list[dict]:
    return [{**asdict(r), "equal": r.equal} for r in rows]


@dataclass
class Scaling:
    step: str
    chapter: str
    unit: str
    sizes: list[int]
    seconds: list[float]
    exponent: float
    coefficient: float
    paper_work: float
    paper_note: str
    speedup: float
    speedup_note: str

    def predict(self, work: float) -> float:
        return float(self.coefficient * work**self.exponent)


def fit_power_law(sizes, seconds) -> tuple[float, float]:
    """``(a, b)`` of ``t = a * W**b``, least squares on ``log t = log a + b log W``."""
    b, log_a = np.polyfit(np.log(np.asarray(sizes, float)), np.log(np.asarray(seconds, float)), 1)
    return float(np.exp(log_a)), float(b)


def _human(seconds: float) -> str:
    for unit, s in (("days", 86400), ("h", 3600), ("min", 60)):
        if seconds >= s:
            return f"{seconds / s:.1f} {unit}"
    return f"{seconds:.1f} s"


def scaling_markdown(rows: list[Scaling], machine: str) -> str:
    lines = [
        f"Measured on {machine}. *b*: fitted exponent of *t* = *a* · *W*^*b*. The last two columns extrapolate the "
        "fit to the paper profile's work and divide by an assumed GPU speed-up: **estimates, not measurements**.",
        "",
        "| chapter | dominant step | sizes (work) | *b* | paper-profile work | CPU, extrapolated | one H100 (estimate) | "
        "assumed speed-up |",
        "|---|---|---|---:|---|---:|---:|---|",
    ]
    for r in rows:
        cpu = r.predict(r.paper_work)
        lines.append(
            f"| {r.chapter} | {r.step} | {r.sizes[0]:,}–{r.sizes[-1]:,} {r.unit} | {r.exponent:.2f} | "
            f"{r.paper_work:,.0f} {r.unit}: {r.paper_note} | {_human(cpu)} | {_human(cpu / r.speedup)} | "
            f"{r.speedup:.0f}× ({r.speedup_note}) |"
        )
    return "\n".join(lines)

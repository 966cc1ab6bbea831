"""The tables and fits of the benchmark commands (``python -m replib bench`` and ``bench --scaling``), apart
from the benchmarks themselves (:mod:`bookkit.bench.bench`, :mod:`bookkit.bench.scaling`, which import the reference tools
and the science): a row of the benchmark, a measured scaling with its power-law fit, and their Markdown tables.
"""

from __future__ import annotations

import os
import platform
from dataclasses import asdict, dataclass
from datetime import datetime, timezone

import numpy as np

__all__ = [
    "BenchRow",
    "ForwardRow",
    "PaddingRow",
    "PrecisionRow",
    "Scaling",
    "as_dicts",
    "cpu_model",
    "fit_power_law",
    "forward_markdown",
    "markdown",
    "padding_markdown",
    "precision_markdown",
    "scaling_markdown",
]


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
    floor: str = ""
    floor_s: float = float("nan")

    @property
    def equal(self) -> bool:
        return bool(self.max_abs_diff <= self.tolerance)

    @property
    def over_floor(self) -> float:
        """replib's time ÷ the floor's (1 = as fast as the one call doing the essential work; NaN without one)."""
        return self.replib_s / self.floor_s if self.floor_s > 0 else float("nan")


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``), else what ``platform`` says."""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def markdown(rows: list[BenchRow], repeat: int | None = None, threads: int | None = None) -> str:
    """The benchmark table (Markdown) with the machine it ran on and the date (and, when given, torch's
    threads); no commit: the book names no commits (the file's history is in git)."""
    threads = f", torch {threads} threads" if threads else ""
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    try:  # the machine's load when the table is written: other processes' share of the cores skews timings
        load = f" (load average {os.getloadavg()[1]:.1f} over 5 minutes)"
    except OSError:
        load = ""
    lines = [
        f"Machine: {cpu_model()}, {os.cpu_count()} CPU cores{threads}, Python {platform.python_version()}; "
        f"measured {when}{load}" + (f", best of {repeat} runs per timing" if repeat else "") + ".",
        "",
    ]
    floors = any(r.floor for r in rows)
    head = "| step | size | replib (s) | reference | reference (s) | ratio |"
    head += " floor | floor (s) | replib ÷ floor |" if floors else ""
    lines += [head + " max abs diff | equal |", "|---" * (head.count("|") + 1) + "|"]
    for r in rows:
        floor = f" {r.floor} | {r.floor_s:.3f} | {r.over_floor:.2f} |" if r.floor else " - | - | - |"
        floor = floor if floors else ""
        lines.append(
            f"| {r.step} | {r.size} | {r.replib_s:.3f} | {r.reference} | {r.reference_s:.3f} | "
            f"{r.ratio:.2f} |{floor} {r.max_abs_diff:.2g} | {'yes' if r.equal else 'NO'} |"
        )
    return "\n".join(lines)


def as_dicts(rows: list) -> list[dict]:
    """The rows as JSON-ready dicts (with their derived columns; NaN as ``None``)."""
    out = []
    for r in rows:
        d = asdict(r)
        for name in ("equal", "over_floor", "padding_waste", "ratio", "gflops", "peak_fraction"):
            if hasattr(type(r), name) and isinstance(getattr(type(r), name), property):
                d[name] = getattr(r, name)
        out.append({k: None if isinstance(v, float) and not np.isfinite(v) else v for k, v in d.items()})
    return out


@dataclass
class Scaling:
    """A step measured at several sizes of its work, its fitted power law, and the paper profile's work.

    ``calls`` is how many times the paper profile does this work (models of the same geometry, seeds,
    evaluations): the extrapolated time is ``calls * a * paper_work**b``, or with ``linear`` (forward passes)
    ``calls * paper_work`` times the largest measurement's seconds per item."""

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
    calls: float = 1.0
    linear: bool = False

    def predict(self, work: float) -> float:
        if self.linear:
            return float(self.seconds[-1] / self.sizes[-1] * work)
        return float(self.coefficient * work**self.exponent)

    @property
    def paper_seconds(self) -> float:
        """The CPU time extrapolated to the paper profile's work, all its calls."""
        return self.calls * self.predict(self.paper_work)


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
    """The scaling table; in each chapter the step with the largest extrapolated time is bold and marked
    *dominant*."""
    top = {
        c: max((r for r in rows if r.chapter == c), key=lambda r: r.paper_seconds) for c in {r.chapter for r in rows}
    }
    lines = [
        f"Measured on {machine}. *b*: fitted exponent of *t* = *a* · *W*^*b*. The last two columns extrapolate the "
        "fit to the paper profile's work (a forward pass, *(linear)*, at its larger measurement's cost per item: "
        "batches of one shape are linear in their items) and divide by an assumed GPU speed-up: **estimates, not "
        "measurements**.",
        "",
        "| chapter | step | sizes (work) | *b* | paper-profile work | CPU, extrapolated | one H100 (estimate) | "
        "assumed speed-up |",
        "|---|---|---|---:|---|---:|---:|---|",
    ]
    for r in rows:
        cpu = r.paper_seconds
        step = f"**{r.step}** (dominant)" if top[r.chapter] is r else r.step
        calls = f" × {r.calls:g}" if r.calls != 1 else ""
        lines.append(
            f"| {r.chapter} | {step} | {r.sizes[0]:,}–{r.sizes[-1]:,} {r.unit} | {r.exponent:.2f}{' (linear)' * r.linear} | "
            f"{r.paper_work:,.0f} {r.unit}{calls}: {r.paper_note} | {_human(cpu)} | {_human(cpu / r.speedup)} | "
            f"{r.speedup:.0f}× ({r.speedup_note}) |"
        )
    return "\n".join(lines)


class _Padded:
    """A row with ``tokens`` and ``padded_tokens``: the share of the padded tokens that is padding."""

    @property
    def padding_waste(self) -> float:
        return 1.0 - self.tokens / self.padded_tokens if self.padded_tokens else float("nan")


@dataclass
class ForwardRow(_Padded):
    """A model's forward passes: replib's extraction against the model's bare forward on the same
    pre-tokenised, length-sorted batches, and the forward's GEMM throughput against this CPU's GEMM peak."""

    model: str
    geometry: str
    data: str
    items: int
    tokens: int
    padded_tokens: int
    batch_tokens: int
    replib_s: float
    raw_s: float
    flop: float
    peak_flops: float
    max_abs_diff: float
    precision: str = "fp32"

    @property
    def ratio(self) -> float:
        """replib's tokens per second ÷ the bare forward's (target: at least 0.9)."""
        return self.raw_s / self.replib_s if self.replib_s > 0 else float("nan")

    @property
    def gflops(self) -> float:
        return self.flop / self.raw_s / 1e9 if self.raw_s > 0 else float("nan")

    @property
    def peak_fraction(self) -> float:
        return self.flop / self.raw_s / self.peak_flops if self.raw_s > 0 and self.peak_flops > 0 else float("nan")


def forward_markdown(rows: list[ForwardRow]) -> str:
    return _table(
        "| model | geometry | data | tokens (padding) | replib tokens/s | bare forward tokens/s | replib ÷ bare | "
        "forward GFLOP/s | ÷ GEMM peak | max abs diff |\n|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
        (
            f"| {r.model} | {r.geometry} | {r.data} | {r.tokens:,} ({r.padding_waste:.1%}) | "
            f"{r.tokens / r.replib_s:,.0f} | {r.tokens / r.raw_s:,.0f} | {r.ratio:.2f} | {r.gflops:.0f} | "
            f"{r.peak_fraction:.2f} of {r.peak_flops / 1e9:.0f} | {r.max_abs_diff:.2g} |"
            for r in rows
        ),
    )


@dataclass
class PaddingRow(_Padded):
    """Padding of one length distribution under one batching: padded tokens against real tokens."""

    data: str
    batching: str
    items: int
    tokens: int
    padded_tokens: int


def padding_markdown(rows: list[PaddingRow]) -> str:
    return _table(
        "| lengths | batching | items | tokens | padded tokens | padding |\n|---|---|---:|---:|---:|---:|",
        (
            f"| {r.data} | {r.batching} | {r.items:,} | {r.tokens:,} | {r.padded_tokens:,} | {r.padding_waste:.1%} |"
            for r in rows
        ),
    )


@dataclass
class PrecisionRow:
    """One forward precision against float32 on the same model, data and device: speed and the isotropy
    measures' differences."""

    model: str
    device: str
    precision: str
    tokens: int
    seconds: float
    fp32_seconds: float
    measures: dict  # name -> (float32 value, this precision's value)
    note: str = ""

    @property
    def speedup(self) -> float:
        return self.fp32_seconds / self.seconds if self.seconds > 0 else float("nan")


def precision_markdown(rows: list[PrecisionRow]) -> str:
    return _table(
        "| model | device | precision | tokens/s (float32) | tokens/s | speed-up | measure: float32 → this "
        "precision (abs diff) |\n|---|---|---|---:|---:|---:|---|",
        (
            f"| {r.model} | {r.device}{r.note} | {r.precision} | {r.tokens / r.fp32_seconds:,.0f} | "
            f"{r.tokens / r.seconds:,.0f} | {r.speedup:.2f} | "
            + "; ".join(f"{k}: {a:.6g} → {b:.6g} ({abs(b - a):.2g})" for k, (a, b) in r.measures.items())
            + " |"
            for r in rows
        ),
    )


def _table(head: str, lines) -> str:
    """A Markdown table: its header (with the separator line) and one line per row."""
    return "\n".join([head, *lines])

"""Profiles: ``smoke`` (CI, minutes, CPU), ``offline`` (packaged real models and mirrored data, CPU,
the default) and ``paper`` (paper scale, GPU, internet, real pretrained weights)."""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

from ._optional import optional_import

#: every profile, in order of scale; the one place they are defined
PROFILES = ("smoke", "offline", "paper")
DEFAULT_PROFILE = "offline"

__all__ = [
    "PROFILES",
    "DEFAULT_PROFILE",
    "NATIVE_BF16",
    "chapter_precision",
    "choose_precision",
    "cpu_flags",
    "resolve_profile",
    "on_colab",
    "torch_device",
]


def on_colab() -> bool:
    return "google.colab" in sys.modules


def torch_device() -> str:
    """``"cuda"`` when a GPU is visible, else ``"cpu"`` (also without torch, which is imported only here, at
    use: choosing a profile must not load it)."""
    torch = optional_import("torch")
    return "cuda" if torch is not None and torch.cuda.is_available() else "cpu"


#: CPU flags of native bfloat16 arithmetic (without one, torch emulates bf16 on the CPU, slower than float32)
NATIVE_BF16 = ("avx512_bf16", "amx_bf16")
#: bf16 is chosen only where the bench measured the statistics to move by less than this fraction of the claims'
#: bands (``python -m replib bench --precision``)
MAX_SHIFT_OF_BAND = 0.1


def cpu_flags() -> set[str]:
    """The CPU's flags as ``/proc/cpuinfo`` lists them (empty where it cannot be read)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def choose_precision(flags=None, shift_of_band: float | None = None) -> str:
    """The CPU forward's precision: ``"bf16"`` where the CPU has native bf16 (:data:`NATIVE_BF16` among
    ``flags``, default :func:`cpu_flags`) and the bench measured the statistics to move by less than
    :data:`MAX_SHIFT_OF_BAND` of the claims' bands (``shift_of_band``: the largest shift over its band; None,
    not measured), else ``"fp32"``."""
    flags = cpu_flags() if flags is None else set(flags)
    native = any(f in flags for f in NATIVE_BF16)
    return "bf16" if native and shift_of_band is not None and shift_of_band < MAX_SHIFT_OF_BAND else "fp32"


#: per chapter, the largest shift of its statistics under bf16 autocast over their bands, measured on a CPU with
#: native bf16 (``python -m bookkit.bench.precision_shift``): one row per statistic
SHIFT_FILE = Path(__file__).resolve().parents[1] / "book" / "measurements" / "precision_shift.csv"
#: the columns of :data:`SHIFT_FILE`
SHIFT_COLUMNS = ("chapter", "key", "fp32", "bf16", "shift", "band", "band_from", "shift_of_band", "date", "machine")
#: overrides every chapter's choice: ``fp32``, ``bf16``, ``fp16`` or ``auto`` (the default: :func:`chapter_precision`)
PRECISION_ENV = "REPLIB_PRECISION"


def measured_shift(chapter: str, path: Path | None = None) -> float | None:
    """The largest measured shift over band of ``chapter``'s statistics (:data:`SHIFT_FILE`); None when none was
    measured."""
    from ._io import read_csv  # profiles is imported before everything else: no I/O module at import

    rows = [r for r in read_csv(path or SHIFT_FILE, SHIFT_COLUMNS) if r["chapter"] == chapter]
    return max(float(r["shift_of_band"]) for r in rows) if rows else None


def chapter_precision(chapter: str, profile: str, flags=None, path: Path | None = None) -> str:
    """The precision of a chapter's forward passes: ``$REPLIB_PRECISION`` when set (other than ``auto``); in the
    ``offline`` profile on a CPU, :func:`choose_precision` with the chapter's :func:`measured_shift` (bf16 where
    the CPU has native bf16 and its statistics were measured to move by less than a tenth of their bands);
    float32 otherwise (smoke's tiny models, and the GPU runs of the paper profile)."""
    forced = os.environ.get(PRECISION_ENV, "auto")
    if forced != "auto":
        from .models.base import check_precision

        return check_precision(forced)
    if profile != "offline" or torch_device() != "cpu":
        return "fp32"
    return choose_precision(flags, measured_shift(chapter, path))


def resolve_profile(profile: str | None) -> str:
    """Validate a chapter's ``profile`` parameter; ``None`` means automatic.

    Automatic is ``paper`` on Colab (with a warning when no GPU is attached) and ``offline`` elsewhere;
    the environment variable ``REPLIB_PROFILE`` overrides the automatic choice.
    """
    if profile is None:
        profile = os.environ.get("REPLIB_PROFILE") or ("paper" if on_colab() else DEFAULT_PROFILE)
        if profile == "paper" and torch_device() == "cpu":
            warnings.warn(
                "profile 'paper' without a GPU: expect hours. On Colab: Runtime > Change runtime type > GPU.",
                stacklevel=2,
            )
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; expected one of {PROFILES}")
    return profile

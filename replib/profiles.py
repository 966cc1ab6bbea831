"""Profiles: ``smoke`` (CI, minutes, CPU), ``offline`` (packaged real models and mirrored data, CPU,
the default) and ``paper`` (paper scale, GPU, internet, real pretrained weights)."""

from __future__ import annotations

import os
import sys
import warnings

from ._optional import optional_import

#: every profile, in order of scale; the one place they are defined
PROFILES = ("smoke", "offline", "paper")
DEFAULT_PROFILE = "offline"

__all__ = [
    "PROFILES",
    "DEFAULT_PROFILE",
    "NATIVE_BF16",
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

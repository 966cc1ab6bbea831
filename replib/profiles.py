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

__all__ = ["PROFILES", "DEFAULT_PROFILE", "resolve_profile", "on_colab", "torch_device"]


def on_colab() -> bool:
    return "google.colab" in sys.modules


def torch_device() -> str:
    """``"cuda"`` when a GPU is visible, else ``"cpu"`` (also without torch, which is imported only here, at
    use: choosing a profile must not load it)."""
    torch = optional_import("torch")
    return "cuda" if torch is not None and torch.cuda.is_available() else "cpu"


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

"""A chapter's time limit for the models it runs.

A claims file's ``timeout`` is set for the profile's own models (offline: the packaged all-MiniLM-L6-v2, 6
blocks of width 384). A reader's model (``--model``, a folder or Hub id) of width 768 does about eight times
the forward work per token, so its run gets a proportionally longer limit instead of being killed by one
set for MiniLM: the limit is multiplied by :func:`model_limit_scale`.
"""

from __future__ import annotations

from replib.config import chapter_config
from replib.models import forward_flops_per_token
from replib.models.errors import ModelUnavailableError

__all__ = ["model_limit_scale"]


def model_limit_scale(chapter: str, profile: str, chosen) -> float:
    """How much longer ``chapter`` may run in ``profile`` with the models ``chosen`` instead of its own: the
    forward work per token of the chosen models over that of the profile's own models (each summed over the
    models; :func:`replib.models.forward_flops_per_token`), never below 1. 1 without chosen models, when the
    profile's own models do no forward pass, or when a config cannot be read (the chapter then reports the
    model's error itself)."""
    if not chosen:
        return 1.0
    try:
        own = sum(forward_flops_per_token(s) for s in chapter_config(chapter, profile).model_specs)
        new = sum(forward_flops_per_token(s) for s in chosen)
    except (ModelUnavailableError, OSError, ValueError):
        return 1.0
    return max(1.0, new / own) if own > 0 else 1.0

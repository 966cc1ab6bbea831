"""What a runner report says about where it ran: Python, platform, package versions, device, git commit.

torch is imported through :mod:`replib._optional` (the kit itself runs without it: the device is then
``cpu``).
"""

from __future__ import annotations

import platform
from importlib import metadata
from pathlib import Path

from replib._optional import optional_import
from replib.profiles import NATIVE_BF16, cpu_flags

from ..project import git_commit

torch = optional_import("torch")

__all__ = ["PACKAGES", "device_name", "environment_info"]

#: the packages whose versions a report lists
PACKAGES = (
    "numpy",
    "scipy",
    "scikit-learn",
    "torch",
    "transformers",
    "pandas",
    "papermill",
    "jupyter-book",
    "IsoScore",
    "biopython",
    "parasail",
    "scikit-dimension",
    "sentence-transformers",
)


def device_name() -> str:
    """The GPU torch would use (its name), else ``"cpu"``."""
    try:
        return torch.cuda.get_device_name(0) if torch is not None and torch.cuda.is_available() else "cpu"
    except Exception:  # a driver or build that torch cannot use: the report says cpu
        return "cpu"


def environment_info(root: Path | None = None) -> dict:
    """Package versions, device and git commit for the report."""
    info = {"python": platform.python_version(), "platform": platform.platform(), "packages": {}}
    for pkg in PACKAGES:
        try:
            info["packages"][pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    info["device"] = device_name()
    flags = cpu_flags()  # the CPU's vector and bf16 instructions (each chapter's precision: its report entry)
    info["cpu_flags"] = sorted(f for f in flags if f.startswith(("avx", "amx", "fma")) or f in NATIVE_BF16)
    info["native_bf16"] = any(f in flags for f in NATIVE_BF16)
    info["git_commit"] = git_commit(root) if root is not None else None
    return info

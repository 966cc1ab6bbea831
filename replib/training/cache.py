"""The content key of a training run: what must be equal for two runs to give the same trained weights.

A run folder is named ``<task>-<key>-s<seed>``, where ``key`` is the sha256 (first 12 hex digits) of

- the run's configuration (``config_for(profile)[task]``: shape, schedule, data subset or corpus splits);
- the identity of its data: the sha256 of the training and validation text as loaded
  (:func:`data_identity`: the Swiss-Prot sequences, or the lines of the corpus's training and evaluation
  splits), so a new Swiss-Prot release or a changed mirror file trains a new run;
- the code version: the sha256 of the source of the modules of :mod:`replib.training` that shape the
  weights (:data:`CODE_MODULES`) and of the ESM-2 vocabulary, with the versions of torch, transformers
  and tokenizers (:func:`code_version`);
- the run folder's layout version (:data:`RUN_FORMAT`).

The seed is the folder name's suffix. Changing any of them gives another folder, never a mix of old and
new checkpoints; what the key was made of is written to the run's ``run.json``.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import json
from pathlib import Path

from .._io import hash_inputs
from ..data import load_swissprot
from ..data.loaders import load_lm_corpus
from ..models.tiny import ESM_VOCAB

__all__ = ["CODE_MODULES", "RUN_FORMAT", "code_version", "data_identity", "run_key", "run_key_parts"]

#: version of the run folder's layout: runs written before checkpoints carried their sha256 (layout 1) are
#: never read as verified ones; layout 3 logs the validation loss at the evaluation steps too; layout 4 also the
#: loss on fixed training windows (train_eval_loss, the train-validation gap of the flattening criterion)
RUN_FORMAT = 4
#: the modules of :mod:`replib.training` whose source shapes the trained weights and the run folder (the
#: measurements, :mod:`.measure`, are keyed on their own)
CODE_MODULES = ("cache.py", "checkpoints.py", "data.py", "loop.py", "quality.py")
_LIBRARIES = ("torch", "transformers", "tokenizers")
_HERE = Path(__file__).resolve().parent


def code_version(folder: Path | None = None) -> dict:
    """sha256 of the training code (:data:`CODE_MODULES` and the ESM-2 vocabulary) and the library versions.

    Parameters
    ----------
    folder : Path, optional
        Where the modules are read from (default: this package, read once per process; a test points it
        at an edited copy).

    Returns
    -------
    dict
        ``{"source": <sha256 hex>, "torch": "2.x", "transformers": ..., "tokenizers": ...}``.
    """
    return _version_of(Path(folder)) if folder is not None else dict(_package_version())


@functools.lru_cache(maxsize=1)
def _package_version() -> dict:
    return _version_of(_HERE)


def _version_of(folder: Path) -> dict:
    texts = [name + "\n" + (folder / name).read_text(encoding="utf-8") for name in CODE_MODULES]
    out = {"source": hash_inputs([*texts, "\n".join(ESM_VOCAB)])}
    return out | {lib: importlib.metadata.version(lib) for lib in _LIBRARIES}


@functools.lru_cache(maxsize=16)
def _identity(task: str, source: tuple) -> str:
    if task == "protein":
        return hash_inputs(load_swissprot(source[0])["sequence"])
    corpus, *splits = source
    return hash_inputs([f"{split}:{hash_inputs(load_lm_corpus(corpus, split))}" for split in splits])


def data_identity(task: str, cfg: dict) -> str:
    """sha256 of the data a run reads, as loaded: the sequences of the Swiss-Prot ``subset`` (protein), or
    the lines of the corpus's ``train_split`` (one or several) and ``eval_split`` (text). Remembered per process."""
    if task == "protein":
        return _identity(task, (cfg["subset"],))
    train = (cfg["train_split"],) if isinstance(cfg["train_split"], str) else tuple(cfg["train_split"])
    return _identity(task, (cfg["corpus"], *train, cfg["eval_split"]))


def run_key_parts(task: str, cfg: dict) -> dict:
    """Everything the run key is made of: ``config``, ``data`` (:func:`data_identity`), ``code``
    (:func:`code_version`) and ``format`` (:data:`RUN_FORMAT`)."""
    return {"config": cfg, "data": data_identity(task, cfg), "code": code_version(), "format": RUN_FORMAT}


def run_key(task: str, cfg: dict) -> str:
    """The first 12 hex digits of the sha256 of :func:`run_key_parts` (JSON, sorted keys)."""
    blob = json.dumps(run_key_parts(task, cfg), sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:12]

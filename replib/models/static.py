"""Word-vector files (GloVe text, word2vec text or binary) as a model: words, vectors and the file's sha256."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from ..provenance import note_model
from .resolve import ModelUnavailableError, _sha256_file


def static_layout(path: Path) -> str:
    """``word2vec`` when the first line is a ``<n_words> <dim>`` header (or the file is binary), else ``glove``."""
    opener = _open_text(path)
    try:
        with opener as f:
            first = f.readline()
    except UnicodeDecodeError:
        return "word2vec-binary"
    return "word2vec" if re.fullmatch(r"\s*\d+\s+\d+\s*", first) else "glove"


def _open_text(path: Path):
    import gzip

    if str(path).endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


def load_static_vectors(path, *, max_words: int | None = None) -> tuple[list[str], np.ndarray, str]:
    """Words and vectors of a GloVe (``word v1 v2 ...``) or word2vec (text with a ``n d`` header, or binary)
    file, with the file's sha256 noted as the model's provenance.

    Parameters
    ----------
    path : path-like
    max_words : int, optional
        Keep the first ``max_words`` rows (files are in frequency order).

    Returns
    -------
    words : list of str
    vectors : ndarray (n_words, dim) float32
    sha256 : str

    Raises
    ------
    ModelUnavailableError
        Missing file, or rows of unequal width.
    """
    p = Path(path).expanduser()
    if not p.is_file():
        raise ModelUnavailableError(f"no such word-vector file: {path}")
    layout = static_layout(p)
    sha = _sha256_file(p)
    words, rows = [], []
    if layout == "word2vec-binary":
        with open(p, "rb") as f:
            n, d = map(int, f.readline().split())
            n = min(n, max_words or n)
            for _ in range(n):
                w = bytearray()
                while (c := f.read(1)) != b" ":
                    if c != b"\n":
                        w += c
                words.append(w.decode("utf-8", errors="replace"))
                rows.append(np.frombuffer(f.read(4 * d), dtype="<f4"))
    else:
        with _open_text(p) as f:
            if layout == "word2vec":
                f.readline()
            for line in f:
                parts = line.rstrip("\n").rstrip().split(" ")
                if len(parts) < 2:
                    continue
                words.append(parts[0])
                rows.append(np.asarray(parts[1:], dtype=np.float32))
                if max_words and len(words) >= max_words:
                    break
    widths = {len(r) for r in rows}
    if len(widths) != 1:
        raise ModelUnavailableError(f"{p}: rows have different widths {sorted(widths)[:5]}")
    note_model(p.stem, kind="file", source=str(p), revision=sha, resolved=f"sha256:{sha}", pinned=True)
    return words, np.vstack(rows).astype(np.float32), sha

"""Word-vector files (GloVe text, word2vec text or binary) as a model: words, vectors and the file's sha256."""

from __future__ import annotations

import gzip
import mmap
import re
from pathlib import Path

import numpy as np

from .._io import sha256_file
from ..provenance import note_model
from .errors import CorruptModelFileError, ModelUnavailableError

__all__ = ["load_static_vectors", "static_layout"]


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
    if str(path).endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


def load_static_vectors(path) -> tuple[list[str], np.ndarray, str]:
    """Words and vectors of a GloVe (``word v1 v2 ...``) or word2vec (text with a ``n d`` header, or binary)
    file, with the file's sha256 noted as the model's provenance.

    Parameters
    ----------
    path : path-like

    Returns
    -------
    words : list of str
    vectors : ndarray (n_words, dim) float32
    sha256 : str

    Raises
    ------
    ModelUnavailableError
        Missing file, or rows of unequal width.
    CorruptModelFileError
        A word2vec file shorter than its header says (a truncated download), a binary one without a header, a
        value that is not a number, or a vector that is not finite (nan, inf).
    """
    p = Path(path).expanduser()
    if not p.is_file():
        raise ModelUnavailableError(f"no such word-vector file: {path}")
    layout = static_layout(p)
    sha = sha256_file(p)
    if layout == "word2vec-binary":
        words, rows = _read_word2vec_binary(p)
    else:
        words, rows = _read_text_vectors(p, layout)
    widths = {len(r) for r in rows}
    if len(widths) != 1:
        raise ModelUnavailableError(f"{p}: rows have different widths {sorted(widths)[:5]}")
    vectors = np.vstack(rows).astype(np.float32)
    bad = np.flatnonzero(~np.isfinite(vectors).all(axis=1))
    if bad.size:
        i = int(bad[0])
        raise CorruptModelFileError(
            f"{p}: the vector of {words[i]!r} (row {i + 1}) is not finite (nan or inf), and {bad.size - 1} more rows; "
            "every metric would be nan: fix or drop those rows"
        )
    note_model(p.stem, kind="file", source=str(p), revision=sha, resolved=f"sha256:{sha}", pinned=True)
    return words, vectors, sha


def _read_text_vectors(p: Path, layout: str):
    """Rows of a text file: ``word v1 v2 ...`` per line, after a ``n d`` header for word2vec (then fewer rows
    than announced means a truncated file)."""
    words, rows, announced = [], [], None
    with _open_text(p) as f:
        if layout == "word2vec":
            announced = int(f.readline().split()[0])
        for line in f:
            parts = line.rstrip("\n").rstrip().split(" ")
            if len(parts) < 2:
                continue
            try:
                rows.append(np.asarray(parts[1:], dtype=np.float32))
            except ValueError:
                raise CorruptModelFileError(
                    f"{p}: the row of {parts[0]!r} holds a value that is not a number; expected 'word v1 v2 ...'"
                ) from None
            words.append(parts[0])
    if announced is not None and len(words) < announced:
        raise CorruptModelFileError(
            f"{p} is truncated: its header announces {announced} words but it holds {len(words)}; download it again"
        )
    if not rows:
        raise ModelUnavailableError(f"{p} holds no word vectors (expected lines 'word v1 v2 ...')")
    return words, rows


def _read_word2vec_binary(p: Path):
    """Rows of a binary word2vec file: a ``n d`` header line, then per word its bytes, a space and ``d``
    little-endian float32 (a newline may precede a word). Every read is bounded by the file's size, so a
    truncated file ends in an error, never in a loop."""
    size = p.stat().st_size
    with open(p, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        end = mm.find(b"\n")
        header = mm[: max(end, 0)].split()
        if end < 0 or len(header) != 2 or not all(h.isdigit() for h in header):
            raise CorruptModelFileError(f"{p}: no '<n_words> <dim>' header line; not a word2vec binary file")
        n, d = map(int, header)
        words, rows, pos = [], [], end + 1
        for i in range(n):
            space = mm.find(b" ", pos)
            if space < 0 or space + 1 + 4 * d > size:
                raise CorruptModelFileError(
                    f"{p} is truncated: its header announces {n} words of {d} dimensions but the file ends in "
                    f"word {i + 1} ({size} bytes); download it again"
                )
            words.append(mm[pos:space].replace(b"\n", b"").decode("utf-8", errors="replace"))
            rows.append(np.frombuffer(mm[space + 1 : space + 1 + 4 * d], dtype="<f4").copy())
            pos = space + 1 + 4 * d
    return words, rows

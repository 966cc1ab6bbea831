"""Registry of the data sets that the book reads.

Every file is described by its path inside the mirror (the layout of the shared
offline copy, e.g. ``stsb/sts-dev.csv``), its sha256, size and line count (copied
from the mirror's ``PROVENANCE.md`` files), the direct URLs that serve exactly
those bytes, and its canonical upstream source (an :class:`Archive` member: extracted and verified when
``identical``, documentation only when the file is derived from it).

Files with ``sha256=None`` are paper-profile files that the offline mirror does
not hold and whose sha256 we could not observe from a verified copy.  PTB train
is pinned by a published md5 (``md5``), WikiText-2 train by the published md5 of
its archive (``Archive.md5``).  The current UniProt release has no fixed checksum
at all: it is accepted over https only, and the observed sha256 is recorded next
to the cached file (``<file>.sha256.json``) and verified on every later use.
Plain-http sources are used only where a checksum pins the bytes.
"""

from __future__ import annotations

from .sources import _EXTRA_FILES, _META, _MIRROR_ROWS, _SOURCES, _STS_SUBSETS, Archive, DataFile, Dataset  # noqa: F401

__all__ = ["Archive", "DataFile", "Dataset", "DATASETS", "get_file"]


def _build() -> dict[str, Dataset]:
    files: dict[str, dict[str, DataFile]] = {name: {} for name in _META}
    for path, sha, size, lines in _MIRROR_ROWS:
        ds, rel = path.split("/", 1)
        files[ds][rel] = DataFile(path, sha, int(size), int(lines), **_SOURCES[ds](rel))
    for ds, extra in _EXTRA_FILES.items():
        files[ds].update(extra)
    return {
        name: Dataset(name, desc, home, lic, cite, parser, files[name])
        for name, (desc, home, lic, cite, parser) in _META.items()
    }


DATASETS: dict[str, Dataset] = _build()


def get_file(dataset: str, file: str) -> DataFile:
    """Return the registry entry of ``file`` (path inside the data set's folder) of ``dataset``.

    Raises
    ------
    KeyError
        With the list of known data sets or files.
    """
    if dataset not in DATASETS:
        raise KeyError("unknown data set %r; known: %s" % (dataset, ", ".join(sorted(DATASETS))))
    files = DATASETS[dataset].files
    if file not in files:
        raise KeyError("data set %r has no file %r; known: %s" % (dataset, file, ", ".join(sorted(files))))
    return files[file]

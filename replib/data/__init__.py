"""Data layer: registry, checksummed fetching through a mirror or the canonical sources, exact parsers.

Set ``REPLIB_DATA_MIRROR`` to a folder (or an ``http://`` base URL) laid out like the
offline mirror to read data without network access; downloads are cached in
``$REPLIB_CACHE_DIR/data`` (default ``~/.cache/replib/data``).  See ``data/README.md``.
"""

from .loaders import (
    load_glue,
    load_glue_train,
    load_lm_corpus,
    load_polarity,
    load_sick,
    load_snli,
    load_sts,
    load_stsb,
)
from .registry import DATASETS, get_file
from .semcor import load_semcor
from .store import ChecksumError, DataNotFoundError, IncompleteDownloadError, cache_dir, fetch
from .swissprot import load_swissprot, validate_residues
from .wordnet import load_wordnet_supersenses, load_wordnet_tag_counts

"""``python -m replib.data extract-swissprot [--deb DEB] [--out FASTA]``."""
from .swissprot import main

if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())

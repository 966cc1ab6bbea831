"""``python -m replib.data verify [--dataset NAME ...]`` and ``python -m replib.data extract-swissprot``."""

import sys

from .store import verify_main
from .swissprot import main as swissprot_main


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["verify"]:
        return verify_main(argv[1:])
    return swissprot_main(argv)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())

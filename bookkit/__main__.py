"""``python -m bookkit ...``: the same command line as ``python -m replib``."""

from .cli import main

raise SystemExit(main())

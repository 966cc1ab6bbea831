"""``python -m replib ...``: the book kit's command line (:mod:`bookkit.cli`), kept under the science
package's name for the commands users already type."""

from bookkit.cli import main

raise SystemExit(main())

"""MathJax served with the book, so that formulas render without internet.

The book's ``_config.yml`` sets ``mathjax_path: mathjax/tex-svg-full.js`` (relative to ``_static``);
staging (:func:`bookkit.book.book.stage`) puts that file there. It is one file of the npm package
``mathjax`` (version :data:`VERSION`): the TeX input with every extension and SVG output, so no font or
extension is fetched later. The package tarball is downloaded once from the npm registry, checked
against :data:`SHA256`, and the file kept in the cache (``$REPLIB_CACHE_DIR/static/``);
``scripts/setup.sh`` does this at install time, so later builds need no network.

Command line: ``python -m bookkit.book.mathjax`` fetches it (no-op when cached) and prints its path.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tarfile
import tempfile
from pathlib import Path

from replib._io import atomic_write, cache_root
from replib.data.store import download as _download

VERSION = "3.2.2"
TARBALL_URL = f"https://registry.npmjs.org/mathjax/-/mathjax-{VERSION}.tgz"
#: sha256 of the registry's tarball (its npm integrity is sha512-Bt+SSVU8eBG27zChVewOicYs7Xsdt40q…)
SHA256 = "1b9c0a1c44df864e915690558e72adb9cc5203360daefd385084ced3b6c64c09"
MEMBER = "package/es5/tex-svg-full.js"
#: where the book's pages load it from (``mathjax_path`` in _config.yml), relative to ``_static``
STATIC_PATH = "mathjax/tex-svg-full.js"
TARBALL_ENV = "REPLIB_MATHJAX_TGZ"  # a local copy of the tarball (offline installs)


def fetch() -> Path:
    """The MathJax bundle in the cache, downloading the package tarball when it is missing.

    Raises
    ------
    FileNotFoundError
        When it is not cached and the download fails.
    """
    target = cache_root("static") / f"mathjax-{VERSION}" / Path(MEMBER).name
    if target.exists():
        return target
    tgz = os.environ.get(TARBALL_ENV)
    with tempfile.TemporaryDirectory() as tmp:
        if not tgz:
            tgz = Path(tmp) / "mathjax.tgz"
            try:
                _download(TARBALL_URL, tgz, sha256=SHA256)
            except Exception as exc:
                raise FileNotFoundError(
                    f"cannot download MathJax {VERSION} from {TARBALL_URL}: {exc}; "
                    f"set {TARBALL_ENV} to a local copy of the tarball"
                ) from exc
        digest = hashlib.sha256(Path(tgz).read_bytes()).hexdigest()
        if digest != SHA256:
            raise ValueError(f"{tgz}: sha256 {digest} is not MathJax {VERSION}'s {SHA256}")
        with tarfile.open(tgz) as tar:
            data = tar.extractfile(MEMBER).read()
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(target, lambda fh: fh.write(data))  # a half-written bundle is never taken for the real one
    return target


if __name__ == "__main__":
    try:
        print(fetch())
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(1)

"""WordNet 3.0 supersenses (lexicographer files) of words, read from the Debian package ``wordnet-base``.

WordNet assigns every synset to one of 45 lexicographer files (``noun.animal``, ``verb.motion``, ...); the
26 noun files are the noun *supersenses* used for supersense tagging (Mickus et al. 2024, setup iv, after
Tikhonov et al. 2023). The database files come from Debian's ``wordnet-base`` 1:3.0-37 (the Princeton
WordNet 3.0 files, unchanged), fetched through the data layer (mirror, cache, then deb.debian.org;
sha256-verified) and read straight out of the ``.deb`` in Python: no ``apt``, no ``nltk`` download.
"""

from __future__ import annotations

import gzip
import io
import lzma
import re
import tarfile
from functools import lru_cache
from pathlib import Path

from .store import fetch

WORDNET_DEB = "wordnet-base_3.0-37_all.deb"
_POS = ("noun", "verb", "adj", "adv")


def _ar_members(data: bytes) -> dict[str, bytes]:
    """Members of a Unix ``ar`` archive (the container format of a ``.deb``)."""
    if not data.startswith(b"!<arch>\n"):
        raise ValueError("not a .deb/ar archive (bad magic)")
    out, pos = {}, 8
    while pos + 60 <= len(data):
        header = data[pos : pos + 60]
        name = header[:16].decode("ascii").strip().rstrip("/")
        size = int(header[48:58].decode("ascii").strip())
        pos += 60
        out[name] = data[pos : pos + size]
        pos += size + (size % 2)  # members are 2-byte aligned
    return out


@lru_cache(maxsize=2)
def _data_tar(deb: str, size: int, mtime_ns: int) -> tuple:
    """The package's data archive, decompressed once per file version: (bytes, tarfile mode)."""
    members = _ar_members(Path(deb).read_bytes())
    name = next((n for n in members if n.startswith("data.tar")), None)
    if name is None:
        raise ValueError(f"{deb}: no data.tar.* member")
    if name.endswith(".xz"):
        return lzma.decompress(members[name]), "r:"
    return members[name], "r:*"


def deb_file(deb: str | Path, member: str) -> bytes:
    """The bytes of one file (e.g. ``./usr/share/wordnet/data.noun``) inside a ``.deb`` package.

    The data archive is decompressed once and kept (keyed by path, size and mtime), so reading several files
    of one package does not decompress it again.

    Raises
    ------
    KeyError
        If the package does not contain ``member``.
    """
    st = Path(deb).stat()
    raw, mode = _data_tar(str(deb), st.st_size, st.st_mtime_ns)
    with tarfile.open(fileobj=io.BytesIO(raw), mode=mode) as tar:
        want = member if member.startswith("./") else "./" + member.lstrip("/")
        try:
            f = tar.extractfile(want)
        except KeyError:
            raise KeyError(f"{deb}: no {member}") from None
        if f is None:
            raise KeyError(f"{deb}: {member} is not a regular file")
        return f.read()


def _lexnames(deb) -> dict[int, str]:
    """File number -> lexicographer file name, parsed from the package's own ``lexnames(5WN)`` page."""
    page = gzip.decompress(deb_file(deb, "usr/share/man/man5/lexnames.5WN.gz")).decode("utf-8", "replace")
    names = {int(m.group(1)): m.group(2) for m in re.finditer(r"^(\d\d)\t(\S+)", page, re.M)}
    if len(names) != 45:
        raise ValueError(f"expected the 45 WordNet 3.0 lexicographer files, parsed {len(names)}")
    return names


@lru_cache(maxsize=8)
def _supersenses(deb: str, pos: str) -> dict[str, frozenset[str]]:
    names = _lexnames(deb)
    text = deb_file(deb, f"usr/share/wordnet/data.{pos}").decode("utf-8")
    out: dict[str, set] = {}
    for line in text.splitlines():
        if not line or line.startswith("  "):  # the licence header lines start with two spaces
            continue
        f = line.split(" ")
        lex = names[int(f[1])]
        n_words = int(f[3], 16)
        for i in range(n_words):
            word = f[4 + 2 * i]
            if pos == "adj":
                word = re.sub(r"\((a|p|ip)\)$", "", word)  # adjective position markers
            out.setdefault(word.lower(), set()).add(lex)
    return {w: frozenset(s) for w, s in out.items()}


def load_wordnet_supersenses(pos: str = "noun") -> dict[str, frozenset[str]]:
    """Every WordNet 3.0 lemma of one part of speech with the set of its supersenses.

    Parameters
    ----------
    pos : {"noun", "verb", "adj", "adv"}
        ``"noun"`` gives the 26 noun supersenses (``noun.Tops`` ... ``noun.time``), ``"verb"`` the 15 verb ones.

    Returns
    -------
    dict
        Lower-cased lemma (multi-word lemmas joined by ``_`` as in WordNet) -> frozenset of lexicographer
        file names of all synsets of that part of speech containing it. A polysemous word has several.

    Notes
    -----
    WordNet 3.0 :cite:`fellbaum1998wordnet` has 117,798 noun lemmas (its ``wnstats(7WN)`` page); the data
    files list every synset with its lexicographer file number (field 2) and its words (fields 5 on).
    """
    if pos not in _POS:
        raise ValueError(f"pos must be one of {sorted(_POS)}, got {pos!r}")
    deb = str(fetch("wordnet", WORDNET_DEB))
    return dict(_supersenses(deb, pos))


@lru_cache(maxsize=2)
def _tag_counts(deb: str) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for pos in _POS:
        for line in deb_file(deb, f"usr/share/wordnet/index.{pos}").decode("utf-8").splitlines():
            if not line or line.startswith("  "):
                continue
            f = line.split()
            p_cnt = int(f[3])
            tagsense_cnt = int(f[5 + p_cnt])  # lemma pos synset_cnt p_cnt [ptr...] sense_cnt tagsense_cnt ...
            out.setdefault(f[0].lower(), {})[pos] = tagsense_cnt
    return out


def load_wordnet_tag_counts() -> dict[str, dict[str, int]]:
    """For every WordNet 3.0 lemma, the number of its senses per part of speech that are tagged in the
    semantic concordance (``tagsense_cnt`` of the ``index.*`` files, see ``wndb(5WN)``).

    Returns
    -------
    dict
        Lower-cased lemma -> {pos: tagsense_cnt} for each of "noun", "verb", "adj", "adv" the lemma has.
        A lemma whose noun count is the largest is mostly used as a noun in running text.
    """
    deb = str(fetch("wordnet", WORDNET_DEB))
    return {w: dict(c) for w, c in _tag_counts(deb).items()}

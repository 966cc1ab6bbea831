"""SemCor 3.0 (sense-annotated Brown corpus sentences) from NLTK's XML conversion, read with the standard library.

SemCor :cite:`miller1993semcor` tags the content words of 352 Brown corpus texts with WordNet senses:
``brown1`` and ``brown2`` every content word, ``brownv`` the verbs only. NLTK's data package ``semcor.zip``
(4,397,021 bytes, md5 ``46c095f0ab7090132567f87252af724f`` as published in NLTK's ``index.xml``) holds one XML
file per text, ``semcor/brown*/tagfiles/*.xml``, of the form::

    <contextfile concordance="brown"><context filename="br-a01" paras="yes"><p pnum="1"><s snum="1">
      <wf cmd="ignore" pos="DT">The</wf>
      <wf cmd="done" pos="VB" lemma="say" wnsn="1" lexsn="2:32:00::">said</wf>
      <punc>.</punc>
    </s>...

Every ``wf`` and ``punc`` element is a token (a multi-word unit such as ``Fulton_County_Grand_Jury`` is one
token, its underscores read as spaces); ``pos`` is the Penn Treebank tag, ``lemma`` and ``wnsn`` (the WordNet
sense number) name the sense. The zip comes through the data layer (mirror, cache, then NLTK's GitHub pages,
md5-verified); nothing here needs ``nltk``.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
import zipfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .store import fetch

__all__ = ["SEMCOR_ZIP", "SemcorSentence", "VerbToken", "load_semcor", "parse_semcor_xml", "read_semcor_zip"]

SEMCOR_ZIP = "semcor.zip"
#: the members read: one XML file per Brown text, in the three concordances brown1, brown2 and brownv
MEMBER = re.compile(r"^semcor/(brown[^/]*)/tagfiles/([^/]+)\.xml$")
_SENSE = re.compile(r"^[1-9][0-9]*$")


@dataclass(frozen=True)
class VerbToken:
    """A sense-tagged verb of a sentence: its token ``index``, ``lemma``, WordNet sense number ``sense``
    (``wnsn``, a string such as ``"2"``) and Penn Treebank ``tag`` (``VB``, ``VBD``, ``VBG``, ``VBN``,
    ``VBP``, ``VBZ``)."""

    index: int
    lemma: str
    sense: str
    tag: str


@dataclass(frozen=True)
class SemcorSentence:
    """One sentence: ``doc`` (``brown1/br-a01``), ``snum`` (its number in the text), ``tokens`` (the words and
    punctuation in order) and ``verbs`` (its sense-tagged verbs)."""

    doc: str
    snum: str
    tokens: tuple[str, ...]
    verbs: tuple[VerbToken, ...]

    @property
    def text(self) -> str:
        """The tokens joined by single spaces (the text the models read)."""
        return " ".join(self.tokens)


def _verb(elem: ET.Element, index: int) -> VerbToken | None:
    """The verb a ``wf`` element tags, or None: not a verb, no lemma, or no single sense (``wnsn`` missing,
    ``0``, or several senses ``1;2``)."""
    tag = elem.get("pos", "")
    lemma, sense = elem.get("lemma"), elem.get("wnsn", "")
    if not tag.startswith("VB") or not lemma or not _SENSE.match(sense):
        return None
    return VerbToken(index, lemma.lower(), sense, tag)


def parse_semcor_xml(data: bytes, doc: str) -> list[SemcorSentence]:
    """The sentences of one SemCor tag file (bytes of ``semcor/brown*/tagfiles/*.xml``).

    Raises
    ------
    ValueError
        The bytes are not well-formed XML, or hold no ``<s>`` element.
    """
    try:
        root = ET.fromstring(data)
    except ET.ParseError as exc:
        raise ValueError(f"{doc}: not a SemCor XML file ({exc})") from None
    out = []
    for s in root.iter("s"):
        tokens, verbs = [], []
        for elem in s:
            if elem.tag not in ("wf", "punc"):
                continue
            word = (elem.text or "").strip().replace("_", " ")
            if not word:
                continue
            if elem.tag == "wf":
                verb = _verb(elem, len(tokens))
                if verb is not None:
                    verbs.append(verb)
            tokens.append(word)
        if tokens:
            out.append(SemcorSentence(doc, s.get("snum", ""), tuple(tokens), tuple(verbs)))
    if not out:
        raise ValueError(f"{doc}: no sentence (<s> element with tokens) found")
    return out


def read_semcor_zip(path: str | Path) -> list[SemcorSentence]:
    """Every sentence of the tag files ``semcor/brown*/tagfiles/*.xml`` of NLTK's ``semcor.zip``, by member
    name order.

    Raises
    ------
    ValueError
        The zip holds no such member, or one of them does not parse.
    """
    with zipfile.ZipFile(path) as zf:
        names = sorted(n for n in zf.namelist() if MEMBER.match(n))
        if not names:
            raise ValueError(f"{path}: no semcor/brown*/tagfiles/*.xml member (is it NLTK's semcor.zip?)")
        out = []
        for name in names:
            m = MEMBER.match(name)
            out += parse_semcor_xml(zf.read(name), f"{m.group(1)}/{m.group(2)}")
    return out


@lru_cache(maxsize=2)
def _parsed(path: str, size: int, mtime_ns: int) -> tuple[SemcorSentence, ...]:
    return tuple(read_semcor_zip(path))


def load_semcor() -> list[SemcorSentence]:
    """SemCor 3.0's sentences with their sense-tagged verbs (NLTK's XML conversion, through :func:`fetch`).

    Returns
    -------
    list of SemcorSentence
        About 37,000 sentences of the 352 tagged Brown texts (``brown1``, ``brown2``, ``brownv``).

    Raises
    ------
    replib.data.DataNotFoundError
        The zip is in neither the mirror nor the cache and cannot be downloaded (the message names
        ``REPLIB_DATA_MIRROR`` and the source).
    replib.data.ChecksumError
        A copy whose md5 is not the published one.
    """
    path = fetch("semcor", SEMCOR_ZIP)
    st = Path(path).stat()
    return list(_parsed(str(path), st.st_size, st.st_mtime_ns))

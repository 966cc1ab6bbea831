"""Swiss-Prot sequences: loading, residue validation, and extraction of the full set.

The offline mirror holds two random subsets (5k, 20k) of the 486,000 Swiss-Prot
(January 2014) sequences with GO biological-process annotations that the Debian
package ``metastudent-data`` ships as a BLAST database.  The full set is
regenerated with :func:`extract_swissprot_full` (or
``python -m replib.data extract-swissprot --deb metastudent-data_2.0.1-8_all.deb``),
which needs ``dpkg-deb`` and ``blastdbcmd`` (Debian: ``apt-get install ncbi-blast+``).
"""

from __future__ import annotations

import gzip
import os
import random
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterable
from pathlib import Path

import pandas as pd
from Bio import SeqIO
from Bio.SeqIO.FastaIO import SimpleFastaParser

from .._io import atomic_path, sha256_file, write_json_atomic
from .store import DataNotFoundError, cache_dir, fetch

__all__ = ["load_swissprot", "validate_residues", "extract_swissprot_full", "make_subset", "POLICIES"]

_SUBSETS = {
    "5k": "swissprot_2014_01_goBP_random5k.fasta",
    "20k": "swissprot_2014_01_goBP_random20k.fasta",
    "full": "swissprot_2014_01_goBP_full.fasta",
    "current": "uniprot_sprot.fasta.gz",
}
_GO = re.compile(r"GO:\d{7}")
SUBSET_SEED = 20240101
BPO_DB = "usr/share/metastudent-data/dataset_201401/BPO/goasp.fasta"


# ------------------------------------------------------------------ residue policies
STANDARD = frozenset("ACDEFGHIKLMNPQRSTVWY")
ALWAYS = STANDARD | {"X"}
AMBIGUOUS = frozenset("UZOB")

#: Per-model handling of the rare letters U (selenocysteine), O (pyrrolysine),
#: B (D or N), Z (E or Q) and X (unknown).
POLICIES = {
    None: "validate only; U/Z/O/B/X kept",
    "prottrans_bert": "[UZOB] -> X (ProtBert/ProtT5 preprocessing, Elnaggar et al. 2021)",
    "prottrans_xlnet": "[UZOBX] -> '<unk>' (ProtXLNet preprocessing)",
    "proteinbert": "alphabet ACDEFGHIKLMNPQRSTUVWXY kept; Z/O/B -> '<OTHER>' token (Brandes et al. 2022)",
    "align": "U -> C, O -> K (PAM250 and BLOSUM62 have no U/O; B, Z, X kept)",
}


def validate_residues(seq: str, policy: str | None = None, seq_id: str | None = None) -> str:
    """Check a protein sequence and map rare residues per model policy.

    The sequence must be upper case over the 20 standard amino acids plus X, U,
    Z, O, B.  Lower-case letters, gaps, ``*`` or any other character raise.

    Parameters
    ----------
    seq : str
        The sequence.
    policy : {None, "prottrans_bert", "prottrans_xlnet", "proteinbert", "align"}
        None validates only.  ``prottrans_bert``: ``[UZOB] -> X``.
        ``prottrans_xlnet``: ``[UZOBX] -> "<unk>"``.  ``proteinbert``: its
        22-letter alphabet ``ACDEFGHIKLMNPQRSTUVWXY`` is kept and Z/O/B become
        ``"<OTHER>"``.  ``align``: ``U -> C`` (selenocysteine as cysteine),
        ``O -> K`` (pyrrolysine as lysine), since the substitution matrices (PAM250, BLOSUM62) have neither.
        Multi-character markers (``<unk>``, ``<OTHER>``) are single tokens for the
        model's tokenizer.
    seq_id : str, optional
        Identifier used in error messages.

    Returns
    -------
    str
        The mapped sequence.

    Raises
    ------
    ValueError
        Unknown policy, empty sequence, or invalid letters; the message names the
        sequence id, the offending letters and their 1-based positions.
    """
    if policy not in POLICIES:
        raise ValueError("unknown residue policy %r; one of %s" % (policy, ", ".join(map(repr, POLICIES))))
    name = seq_id if seq_id is not None else "<unnamed>"
    if not isinstance(seq, str) or not seq:
        raise ValueError("sequence %s is empty or not a string" % name)
    allowed = ALWAYS | AMBIGUOUS
    bad = [(i + 1, c) for i, c in enumerate(seq) if c not in allowed]
    if bad:
        letters = sorted({c for _, c in bad})
        pos = [p for p, _ in bad]
        shown = ", ".join(map(str, pos[:20])) + (" ..." if len(pos) > 20 else "")
        hint = " (lower case is not accepted: upper-case it deliberately)" if any(c.islower() for c in letters) else ""
        raise ValueError(
            "sequence %s: invalid residue(s) %s at position(s) %s (1-based, %d in all)%s; allowed: "
            "ACDEFGHIKLMNPQRSTVWY, X, U, Z, O, B" % (name, ", ".join(map(repr, letters)), shown, len(pos), hint)
        )
    if policy is None:
        return seq
    if policy == "prottrans_bert":
        return re.sub(r"[UZOB]", "X", seq)
    if policy == "prottrans_xlnet":
        return re.sub(r"[UZOBX]", "<unk>", seq)
    if policy == "proteinbert":
        return re.sub(r"[ZOB]", "<OTHER>", seq)
    return seq.replace("U", "C").replace("O", "K")


# ------------------------------------------------------------------------ loading
def _parse_fasta(handle, go: bool) -> pd.DataFrame:
    acc, seqs, gos = [], [], []
    for rec in SeqIO.parse(handle, "fasta"):
        parts = rec.id.split("|")
        acc.append(parts[1] if len(parts) > 1 and parts[0] in ("sp", "tr") else parts[0])
        seqs.append(str(rec.seq))
        gos.append(sorted(set(_GO.findall(rec.description))) if go else [])
    return pd.DataFrame({"accession": acc, "sequence": seqs, "go_bp": gos, "length": [len(s) for s in seqs]})


def load_swissprot(subset: str = "5k") -> pd.DataFrame:
    """Load Swiss-Prot sequences with their GO biological-process ids.

    Parameters
    ----------
    subset : {"5k", "20k", "full", "current"}
        ``5k``/``20k``: random subsets of the January 2014 set (offline mirror).
        ``full``: all 486,000 sequences, produced by :func:`extract_swissprot_full`
        (looked up in the mirror, then the cache).  ``current``: the current
        UniProtKB/Swiss-Prot release FASTA from UniProt (paper profile; no fixed
        checksum, the observed sha256 and release are recorded in the cache);
        its ``go_bp`` lists are empty (the release FASTA carries no GO ids).

    Returns
    -------
    pandas.DataFrame
        Columns ``accession`` (e.g. ``Q8CWS4``), ``sequence`` (str, as in the
        file), ``go_bp`` (sorted list of unique ``GO:nnnnnnn`` ids) and ``length``.
    """
    if subset not in _SUBSETS:
        raise ValueError("Swiss-Prot subset must be one of %s, got %r" % (", ".join(_SUBSETS), subset))
    if subset == "full":
        try:
            path = fetch("swissprot", _SUBSETS[subset], download_ok=False)
        except DataNotFoundError as exc:
            raise DataNotFoundError(
                "%s\nThe full set is generated locally: apt-get install ncbi-blast+; then "
                "python -m replib.data extract-swissprot (downloads the metastudent-data .deb, 225 MB, "
                "verified by sha256) writes it into the cache." % exc
            ) from None
    else:
        path = fetch("swissprot", _SUBSETS[subset])
    if subset == "current":
        _record_release(path)
        with gzip.open(path, "rt") as fh:
            return _parse_fasta(fh, go=False)
    with open(path) as fh:
        return _parse_fasta(fh, go=True)


def _record_release(path: Path) -> None:
    """Record the UniProt release (reldate.txt) next to the downloaded current FASTA."""
    side = path.with_name(path.name + ".release.json")
    if side.exists():
        return
    try:
        rel = fetch("swissprot", "reldate.txt").read_text()
    except Exception as exc:  # best effort: the release note is documentation
        rel = "unknown (%s)" % exc
    write_json_atomic(side, {"reldate": rel, "sha256": sha256_file(path)}, indent=1)


# ---------------------------------------------------------------------- extraction
def _defline_to_header(defline: str) -> str:
    """Rewrite a blastdbcmd defline to ``>sp|ACCESSION| GO_BP=GO:...,GO:...``."""
    first = defline[1:].split()[0] if defline[1:].split() else ""
    for prefix in ("lcl|", "sp|", "gnl|BL_ORD_ID|"):
        if first.startswith(prefix):
            first = first[len(prefix) :]
    acc = first.strip("|").split("|")[0]
    return ">sp|%s| GO_BP=%s" % (acc, ",".join(_GO.findall(defline)))


def _wrap(seq: str, width: int = 60) -> Iterable[str]:
    for i in range(0, len(seq), width):
        yield seq[i : i + width]


def extract_swissprot_full(deb: str | os.PathLike | None = None, out: str | os.PathLike | None = None) -> Path:
    """Extract the 486,000 Swiss-Prot (2014-01) BPO sequences from ``metastudent-data``.

    Runs ``dpkg-deb -x`` on the package and ``blastdbcmd -db .../BPO/goasp.fasta
    -entry all -outfmt "%f"``, rewrites each header to
    ``>sp|ACCESSION| GO_BP=<GO ids in the BLAST defline>`` and wraps sequences
    at 60, like the mirror's subsets.  The result is written atomically.

    Parameters
    ----------
    deb : path-like, optional
        ``metastudent-data_2.0.1-8_all.deb``; default: fetched through the
        registry (mirror, cache, then deb.debian.org; sha256-verified).
    out : path-like, optional
        Output FASTA; default ``<cache>/swissprot/swissprot_2014_01_goBP_full.fasta``
        (where :func:`load_swissprot` ``("full")`` looks).

    Returns
    -------
    pathlib.Path
        The written FASTA.
    """
    for tool in ("dpkg-deb", "blastdbcmd"):
        if shutil.which(tool) is None:
            raise RuntimeError(
                "%s not found: install it (Debian/Ubuntu: apt-get install %s)"
                % (tool, "ncbi-blast+" if tool == "blastdbcmd" else "dpkg")
            )
    deb = Path(deb) if deb is not None else fetch("swissprot", "metastudent-data_2.0.1-8_all.deb")
    out = Path(out) if out is not None else cache_dir() / "swissprot" / _SUBSETS["full"]
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["dpkg-deb", "-x", str(deb), tmp], check=True)
        db = Path(tmp) / BPO_DB
        raw = Path(tmp) / "raw.fasta"
        with open(raw, "wb") as fh:
            subprocess.run(["blastdbcmd", "-db", str(db), "-entry", "all", "-outfmt", "%f"], check=True, stdout=fh)
        with atomic_path(out) as part, open(part, "w") as dst, open(raw) as src:
            _rewrite_fasta(src, dst)
    return out


def _rewrite_fasta(src, dst) -> None:
    """Each record of ``src`` (parsed by Biopython) with its header rewritten by :func:`_defline_to_header`
    and its sequence wrapped at 60; text before the first header is ignored."""
    for title, seq in SimpleFastaParser(src):
        dst.write(_defline_to_header(">" + title) + "\n")
        for line in _wrap(seq):
            dst.write(line + "\n")


def make_subset(
    full: str | os.PathLike, n: int, out: str | os.PathLike, seed: int = SUBSET_SEED, sample_size: int = 20000
) -> Path:
    """Write a random subset of a FASTA file the way the mirror's subsets were drawn.

    ``random.Random(seed).sample(records, sample_size)`` and the first ``n`` of
    that sample (20k: n=20000; 5k: n=5000), each record written as its header and its sequence wrapped at 60
    (the layout of :func:`extract_swissprot_full`'s output, so the records' bytes are unchanged).  Checked:
    on the output of :func:`extract_swissprot_full` (ncbi-blast+ 2.12.0) this reproduces the
    mirror's 5k and 20k files byte for byte (same sha256 as the registry).
    """
    with open(full) as fh:
        records = list(SimpleFastaParser(fh))
    sample = random.Random(seed).sample(records, sample_size)[:n]
    out = Path(out)
    with atomic_path(out) as part, open(part, "w") as fh:
        for title, seq in sample:
            fh.write(">" + title + "\n")
            fh.writelines(line + "\n" for line in _wrap(seq))
    return out

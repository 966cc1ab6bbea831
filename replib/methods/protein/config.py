"""The protein chapter's parameters per profile (read through :func:`replib.config.chapter_config`).

``paper``: current Swiss-Prot, the four models of Hakim et al. and four ESM-2 sizes, 3,578 proteins for the
pair analysis (C(3578, 2) = 6,399,253 ≈ the paper's 6.4×10⁶ pairs). ``offline``: the real Swiss-Prot 2014
samples, tiny same-architecture random models (``tiny``: sequences cut at 256 residues), 800 proteins
(319,600 pairs). ``smoke``: a few hundred sequences and pairs. The pair proteins are the first
``n_pair_proteins`` of the random global sample, so their embeddings are rows of the global table.

Alignment settings (global, PAM250, gap open 10, extend 1) are the same at every profile; the local analysis
requires ``min_ratio`` · n residues per amino acid. With ``tiny`` the paper's models are replaced by random
stand-ins whose values are recorded under ``standin_`` keys, never compared with the paper.
"""

from __future__ import annotations

#: the four models of Hakim et al. (registry keys, also their row labels and record-key names)
PAPER_MODELS = ["prot_bert", "prot_bert_bfd", "prot_xlnet", "proteinbert"]
_ESM_PAPER = ["esm2_t6_8M", "esm2_t12_35M", "esm2_t30_150M", "esm2_t33_650M"]

SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": [
        "models",
        "subset",
        "n_global",
        "n_pair_proteins",
        "n_biopython",
        "n_local",
        "max_length",
        "chunk_size",
        "n_jobs",
        "kmer_max",
        "tiny",
        "gap_open",
        "gap_extend",
        "matrix",
        "min_ratio",
    ],
    "properties": {
        "models": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        "subset": {"enum": ["5k", "20k", "current"], "description": "Swiss-Prot sample (replib.data)"},
        "n_global": {"type": ["integer", "null"], "minimum": 2, "description": "proteins of the global table"},
        "n_pair_proteins": {"type": "integer", "minimum": 3, "description": "proteins whose pairs are aligned"},
        "n_biopython": {"type": "integer", "minimum": 1, "description": "pairs re-aligned with Biopython"},
        "n_local": {"type": "integer", "minimum": 1, "description": "proteins of the per-residue analysis"},
        "max_length": {"type": "integer", "minimum": 8, "description": "residues kept per protein"},
        "chunk_size": {"type": "integer", "minimum": 1, "description": "pairs per resumable alignment chunk"},
        "n_jobs": {"type": "integer", "description": "alignment processes (-1: every core)"},
        "kmer_max": {"type": "integer", "minimum": 1, "description": "longest k-mer composition baseline"},
        "tiny": {"type": "boolean", "description": "tiny random stand-ins for the paper's models"},
        "gap_open": {"type": "integer", "minimum": 1},
        "gap_extend": {"type": "integer", "minimum": 1},
        "matrix": {"type": "string"},
        "min_ratio": {"type": "number", "minimum": 0, "description": "residues per amino acid / dimension"},
    },
}

_COMMON = dict(gap_open=10, gap_extend=1, matrix="pam250", min_ratio=5, kmer_max=2)
# fmt: off
TABLE = {
    "smoke": dict(_COMMON, models=PAPER_MODELS + ["tiny-esm"], subset="5k", n_global=200, n_pair_proteins=40,
                  n_biopython=100, n_local=200, max_length=128, chunk_size=200, n_jobs=2, tiny=True),
    "offline": dict(_COMMON, models=PAPER_MODELS + ["tiny-esm"], subset="20k", n_global=1500, n_pair_proteins=800,
                    n_biopython=300, n_local=400, max_length=256, chunk_size=20000, n_jobs=2, tiny=True),
    "paper": dict(_COMMON, models=PAPER_MODELS + _ESM_PAPER, subset="current", n_global=None, n_pair_proteins=3578,
                  n_biopython=2000, n_local=5000, max_length=1022, chunk_size=50000, n_jobs=-1, tiny=False),
}
# fmt: on


def derive(params: dict, models: tuple, *, default: list, given: bool) -> dict:
    """``default_models``: the profile's own models; any other model in ``models`` is the reader's, recorded
    under its own label and never compared with the paper."""
    return {**params, "default_models": list(default)}

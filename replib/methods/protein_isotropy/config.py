"""The protein chapter's parameters per profile (read through :func:`replib.config.chapter_config`).

``paper``: a seeded sample of 3,578 proteins of current Swiss-Prot (``n_global`` and ``n_local`` sized by the
precision rule, :mod:`replib.precision`; the paper embeds all of it), the four models of Hakim et al. and four
ESM-2 sizes, all of them for the pair analysis (C(3578, 2) = 6,399,253 ≈ the paper's 6.4×10⁶ pairs).
``offline``: the real Swiss-Prot 2014 samples, tiny same-architecture random models (``tiny``: sequences cut at
256 residues), 600 proteins (179,700 pairs: the alignments are the chapter's largest cost). ``smoke``: a few
hundred sequences and pairs. The pair proteins are the first ``n_pair_proteins`` of the random global sample,
so their embeddings are rows of the global table. With ``tiny`` the paper's models are replaced by random
stand-ins whose values are recorded under ``standin_`` keys, never compared with the paper.

Parts (:mod:`replib.parts`): one per model (its embeddings and its row of the global table; ProtBERT's also runs
the per-residue analysis), a model over 3 T4-hours in shard ranges of the sequences at paper scale
(``prot_xlnet-1`` ...: :data:`_SPLIT`), the alignment pairs in shard ranges (``align-1`` ...), and ``rest``.
"""

from __future__ import annotations

from ...chapter import Chapter
from ...models import require_protein_model
from ...parts import Budget, Part, model_parts, rest_part
from ...schema import closed_object

#: the four models of Hakim et al. (registry keys, also their row labels and record-key names)
PAPER_MODELS = ["prot_bert", "prot_bert_bfd", "prot_xlnet", "proteinbert"]
_ESM_PAPER = ["esm2_t6_8M", "esm2_t12_35M", "esm2_t30_150M", "esm2_t33_650M"]

SCHEMA = closed_object(
    {
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
        "stream": {
            "type": "boolean",
            "description": "stream every model's vectors into per-layer accumulators (replib.methods.streaming): "
            "no table of every protein's vectors is held; the pair proteins' rows are kept",
        },
        "local_samples": {
            "type": "integer",
            "minimum": 1,
            "maximum": 2,
            "description": "disjoint samples of n_local proteins for the per-residue analysis (2: their spread)",
        },
    }
)

_COMMON = dict(gap_open=10, gap_extend=1, matrix="pam250", min_ratio=5, kmer_max=2, stream=False, local_samples=1)
# fmt: off
TABLE = {
    "smoke": dict(_COMMON, models=PAPER_MODELS + ["tiny-esm"], subset="5k", n_global=200, n_pair_proteins=40,
                  n_biopython=100, n_local=200, max_length=128, chunk_size=200, n_jobs=2, tiny=True),
    "offline": dict(_COMMON, models=PAPER_MODELS + ["tiny-esm"], subset="20k", n_global=1500, n_pair_proteins=600,
                    n_biopython=300, n_local=400, max_length=256, chunk_size=20000, n_jobs=2, tiny=True),
    "paper": dict(_COMMON, models=PAPER_MODELS + _ESM_PAPER, subset="current", n_global=3578, n_pair_proteins=3578,
                  n_biopython=2000, n_local=460, max_length=1022, chunk_size=50000, n_jobs=-1, tiny=False,
                  stream=True, local_samples=2),
}
# fmt: on


def derive(params: dict, models: tuple, *, default: list, given: bool) -> dict:
    """``default_models``: the profile's own models; any other model in ``models`` is the reader's, recorded
    under its own label and never compared with the paper."""
    return {**params, "default_models": list(default)}


#: the chapter's steps (cells marked ``# step: NAME``)
STEPS = ("embed", "local", "align", "tables")
_STATS = ("isoscore", "eff_dims", "eff_dims_ceil", "avg_cosine")
#: T4-hours of each model's embeddings of ~570k Swiss-Prot sequences (paper profile), as the rehearsal measured
#: them (book/rehearsal.csv; a model in shard ranges: the sum of its parts)
_T4_HOURS = {
    "prot_bert": 2.98,
    "prot_bert_bfd": 2.6,
    "prot_xlnet": 3.16,
    "proteinbert": 0.034,
    "esm2_t6_8M": 0.11,
    "esm2_t12_35M": 0.55,
    "esm2_t30_150M": 1.2,
    "esm2_t33_650M": 5.6,
}
#: the alignment pairs in this many shard ranges
_ALIGN_PARTS = {"smoke": 2, "offline": 2, "paper": 4}
#: a model over 3 T4-hours: its sequences in this many shard ranges (a part each, at most ~2 T4-hours)
_SPLIT = {"prot_xlnet": 2, "esm2_t33_650M": 3}


def stream_ranges(spec: str, profile: str) -> int:
    """The shard ranges a model's stream is cut into (its parts; one unless a model needs several sessions)."""
    return _SPLIT.get(str(spec), 1) if profile == "paper" else 1


def _model_records(label: str) -> list[str]:
    """The keys of one model's part: its row of the global table (or its stand-in's), its ESM layers, and for
    ProtBERT the per-residue analysis."""
    keys = [f"{label}_{s}" for s in _STATS] + [f"standin_{label}_{s}" for s in _STATS]
    keys.append(
        "standin_esm_layer_isoscores" if label == "tiny-esm" else f"esm_{label.replace('-', '_')}_layer_isoscores"
    )
    if label == "prot_bert":
        keys += ["local_*", "standin_local_mean_eff_dims"]
    return keys


def _ranges(name: str, n: int, fraction: float, budget: Budget, models: tuple, step: str) -> list:
    """``n`` parts ``<name>-1`` ... ``<name>-<n>``, each running ``step`` on its shard range of ``n``."""
    return [
        Part(
            name=f"{name}-{k + 1}",
            chapter=CHAPTER.name,
            fraction=fraction,
            budget=budget,
            models=models,
            steps=(step,),
            shards=(k, n),
            records=(),
        )
        for k in range(n)
    ]


def parts(profile: str, params: dict) -> list:
    """The protein chapter's parts for one profile and its parameters (see the module docstring)."""
    total = sum(_T4_HOURS.get(m, 0.2) for m in params["models"]) + 0.6 + 0.5  # + alignment + rest
    out = []
    for spec in params["models"]:
        hours, n = _T4_HOURS.get(spec, 0.2), stream_ranges(spec, profile)
        if n == 1:
            out += model_parts(
                CHAPTER.name,
                [spec],
                {},
                fraction={"*": hours / total},
                budget={"*": Budget(t4_hours=round(min(hours * 1.2, 3.0), 2), peak_rss_gb=8.0, cache_gb=6.0)},
                steps=("embed", "local") if spec == "prot_bert" else ("embed",),
                records=_model_records,
            )
        else:  # a model over 3 T4-hours: its sequences in ranges, cached; rest assembles them
            budget = Budget(t4_hours=round(min(hours / n * 1.2, 3.0), 2), peak_rss_gb=8.0, cache_gb=8.0)
            out += _ranges(spec, n, hours / n / total, budget, (spec,), "embed")
    n = _ALIGN_PARTS[profile]
    budget = Budget(t4_hours=0.5, peak_rss_gb=4.0, cache_gb=0.5)
    out += _ranges("align", n, 0.6 / n / total, budget, (), "align")
    return [*out, rest_part(CHAPTER.name, out, Budget(t4_hours=1.0, peak_rss_gb=12.0, cache_gb=10.0))]


CHAPTER = Chapter(
    "protein_isotropy",
    ("hakim2025protein",),
    TABLE,
    SCHEMA,
    STEPS,
    parts,
    derive,
    # the current Swiss-Prot release is not in the mirror: its 5,000-sequence sample stands in; the pair
    # correlations' bootstrap resamples the pair proteins (the global sample's head): at least 20 of them
    rehearsal={
        "scale": ("n_global", "n_pair_proteins", "n_biopython", "n_local"),
        "set": {"subset": "5k"},
        # the local analysis needs min_ratio x 1,024 residues of an amino acid: 200 proteins give leucine (~10 %) that
        "least": {"n_global": 20, "n_pair_proteins": 20, "n_local": 200},
    },
    check_model=require_protein_model,
)

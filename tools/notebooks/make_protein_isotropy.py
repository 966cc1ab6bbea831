"""Generate notebooks/protein_isotropy.ipynb (committed without outputs).

Run from the repository root: ``python tools/notebooks/make_protein_isotropy.py``.
"""
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

BOOTSTRAP = '''# Colab bootstrap: on Google Colab this clones the book and installs replib (keeping Colab's own
# torch and transformers); anywhere else it does nothing.
import os, subprocess, sys
if "google.colab" in sys.modules and not os.path.isdir("/content/isotropy-replication-book"):
    subprocess.run(["git", "clone", "--depth", "1", "--branch", "main",
                    "https://github.com/replib-books/isotropy-replication-book",
                    "/content/isotropy-replication-book"], check=True)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "-e",
                    "/content/isotropy-replication-book[colab]"], check=True)
if "google.colab" in sys.modules:
    sys.path.insert(0, "/content/isotropy-replication-book")
    os.chdir("/content/isotropy-replication-book/notebooks")'''

PARAMS = '''profile = None  # "smoke" | "offline" | "paper"; None = automatic ("paper" on Colab, else "offline")
seed = 0
cache_dir = None  # resumable alignment chunks and embedding shards; default $REPLIB_CACHE_DIR/protein_isotropy'''


def write(path, cells):
    nb = new_notebook()
    out = []
    for kind, src, *tags in cells:
        c = new_markdown_cell(src.strip("\n")) if kind == "md" else new_code_cell(src.strip("\n"))
        if tags:
            c.metadata["tags"] = list(tags[0])
        out.append(c)
    nb.cells = out
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nb.metadata["language_info"] = {"name": "python"}
    nbformat.validate(nb)
    nbformat.write(nb, path)


cells = [
("md", r"""
# How many dimensions do protein language models use?

*Reproducing and extending* {cite}`hakim2025protein`.

Hakim, Roy and Rahman measure the isotropy of pretrained protein language models, ProtBERT,
ProtBERT-BFD and ProtXLNet {cite}`elnaggar2021prottrans` and ProteinBERT {cite}`brandes2022proteinbert`,
with the average pairwise cosine and IsoScore {cite}`rudman2022isoscore`. They report that the ProtTrans
models use only a handful of their 1024 dimensions, that ProteinBERT (trained on sequences *and* GO
annotations) is far more isotropic, and that distances between protein embeddings correlate only weakly
with alignment-based similarity (PAM250 {cite}`dayhoff1978pam`). No code was released; this chapter
rebuilds every step: the global table, the per-amino-acid ("local") analysis, and the
embedding-versus-alignment correlation, and it adds what the paper does not give: ESM-2
{cite}`lin2023esm2` per layer, and amino-acid and dipeptide **composition** baselines that show how far
plain composition already goes. The paper's numbers reached us only through a secondary summary
([S]); the exact values and their ambiguities are listed with each claim on the
[validation page](../book/validation.md).
"""),
("code", BOOTSTRAP),
("code", PARAMS, ["parameters"]),
("code", r"""
import os
import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from IPython.display import display

from replib import record
from replib._io import cache_root
from replib.data import load_swissprot
from replib.methods import protein as P
from replib.metrics import isoscore
from replib.plotting import setup
from replib.profiles import resolve_profile

%matplotlib inline
profile = resolve_profile(profile)
setup()
cfg = P.config_for(profile)
cache = Path(cache_dir).expanduser() if cache_dir else cache_root("protein_isotropy")
cache.mkdir(parents=True, exist_ok=True)
print("profile:", profile, cfg)
"""),
("md", r"""
## Reading the reported integers: effective dimensions are rounded *up*

IsoScore ι turns into "the number of dimensions used" by $k = \iota(n-1)+1$, a real number. The paper
reports integers. Feeding the paper's own ι and n back through this map, `ceil` reproduces
{glue:text}`eff_dims_ceil_matches` of the 4 reported integers, `round` only
{glue:text}`eff_dims_round_matches` and `floor` {glue:text}`eff_dims_floor_matches`. So the paper
rounds up; below we show the real number and its ceiling side by side.
"""),
("code", r"""
rows = []
for name, v in P.HAKIM2025_REPORTED.items():
    k = P.effective_dimensions_from_isoscore(v["isoscore"], v["n"])
    rows.append({"model": v["label"], "n": v["n"], "reported IsoScore": v["isoscore"], "k = ι(n−1)+1": k,
                 "ceil": P.round_effective_dimensions(k, "ceil"), "round": P.round_effective_dimensions(k, "round"),
                 "floor": P.round_effective_dimensions(k, "floor"), "reported": v["eff_dims"]})
display(pd.DataFrame(rows).round(4))
for rule in ("ceil", "round", "floor"):
    record(f"eff_dims_{rule}_matches", P.rounding_rule_matches(rule=rule))
"""),
("md", r"""
## Data

Swiss-Prot sequences: the paper uses the current release (about 570,000 sequences); offline we use a
random sample of the January 2014 release with GO annotations (see the data README). The `paper` profile
loads the current release.
"""),
("code", r"""
sp = load_swissprot(cfg["subset"])
order = np.random.default_rng(seed).permutation(len(sp))
glob_idx = order if cfg["n_global"] is None else order[: cfg["n_global"]]
seqs_global = sp.sequence.iloc[glob_idx].tolist()
print(f"{len(sp):,} sequences loaded; {len(seqs_global):,} for the global table;",
      f"median length {int(np.median([len(s) for s in seqs_global]))}")
"""),
("md", r"""
## Global isotropy

Each protein becomes one vector: the mean of its residue vectors (special tokens and padding dropped;
ProtTrans recipes: residues separated by spaces, rare residues to X), or ProteinBERT's 512-d global output.
In `smoke` and `offline` no pretrained protein weights are available, so the same code runs through
**tiny random models of the same architectures** (`replib.models.tiny_model`); their numbers say nothing
about the pretrained models and are not compared with the paper. The composition baselines are real at
every profile.
"""),
("code", r"""
def key(name):
    return name.replace("-", "_")

glob_rows, embeddings, global_E, missing = [], {}, {}, []
for name in P.protein_models(profile):
    try:
        lm = P.load_protein_model(name, profile, seed=seed)
    except NotImplementedError as exc:  # only while replib.models is not merged (private fallback)
        missing.append(name)
        print("skipped", name, "-", exc)
        continue
    is_esm = lm.spec.recipe == "esm"
    layers = tuple(range(lm.spec.n_layers + 1)) if is_esm else (-1,)
    emb = P.embed_global(lm, seqs_global, layers=layers, max_length=cfg["max_length"],
                         cache_dir=cache / "embeddings")
    E = emb.pooled["global"] if lm.spec.recipe == "proteinbert" else emb.pooled[layers[-1]]
    embeddings[name] = (lm, emb)
    global_E[name] = E
    g = P.global_isotropy(E)
    glob_rows.append({"embedding": name, "model": lm.name, **g})
    if is_esm:
        esm_layers = [P.global_isotropy(emb.pooled[l])["isoscore"] for l in layers]
        if profile == "paper":
            record(f"esm_{key(name)}_layer_isoscores", esm_layers)
        else:
            record("standin_esm_layer_isoscores", esm_layers)
record("lm_models_missing", len(missing))

comp = {"aa_composition": P.composition_embeddings(seqs_global, k=1)}
for k in range(2, cfg["kmer_max"] + 1):
    comp[f"{k}mer_composition"] = P.composition_embeddings(seqs_global, k=k)
for name, E in comp.items():
    glob_rows.append({"embedding": name, "model": "composition (no parameters)", **P.global_isotropy(E)})
glob = pd.DataFrame(glob_rows)
display(glob.round(6))
G = glob.set_index("embedding")
for stat in ("isoscore", "eff_dims", "avg_cosine"):
    record(f"aa_composition_{stat}", G.loc["aa_composition", stat])
    record(f"2mer_composition_{stat}", G.loc["2mer_composition", stat])
paper_models = [n for n in ("prot_bert", "prot_bert_bfd", "prot_xlnet", "proteinbert") if n in G.index]
for stat in ("isoscore", "eff_dims", "eff_dims_ceil", "avg_cosine"):
    if profile == "paper":  # the pretrained models: compared with the paper
        record(f"prot_bert_{stat}", G.loc["prot_bert", stat])
        record(f"prot_bert_bfd_{stat}", G.loc["prot_bert_bfd", stat])
        record(f"prot_xlnet_{stat}", G.loc["prot_xlnet", stat])
        record(f"proteinbert_{stat}", G.loc["proteinbert", stat])
    else:  # tiny random stand-ins: recorded, never compared with the paper
        for name in paper_models:
            record(f"standin_{name}_{stat}", G.loc[name, stat])
"""),
("md", r"""
IsoScore has an independent implementation, the authors' `IsoScore` package; on the amino-acid
composition vectors the two agree to {glue:text}`aa_isoscore_package_diff:.1e`.

The amino-acid composition (20-d) has IsoScore {glue:text}`aa_composition_isoscore:.3f`
({glue:text}`aa_composition_eff_dims:.1f` effective dimensions) and average cosine
{glue:text}`aa_composition_avg_cosine:.3f`: every protein is a non-negative frequency vector close to the
background composition, so all pairs point the same way (an average cosine near 1 says nothing about
how many directions the *variation* uses, which is what IsoScore measures). The 400-d dipeptide
composition scores {glue:text}`2mer_composition_isoscore:.3f`.
"""),
("code", r"""
from IsoScore import IsoScore as isoscore_package  # the authors' implementation (independent oracle)

record("aa_isoscore_package_diff",
       abs(float(isoscore_package.IsoScore(comp["aa_composition"])) - P.global_isotropy(comp["aa_composition"])["isoscore"]))

esm_names = [n for n in embeddings if embeddings[n][0].spec.recipe == "esm"]
if esm_names:  # paper: four ESM-2 sizes; smoke/offline: the tiny stand-in
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for n in esm_names:
        lm, emb = embeddings[n]
        ls = sorted(l for l in emb.pooled if isinstance(l, int))
        ax.plot([l / ls[-1] for l in ls], [P.global_isotropy(emb.pooled[l])["isoscore"] for l in ls],
                marker="o", label=f"{lm.name} ({lm.spec.n_layers} layers)")
    ax.set(xlabel="relative depth (0 = embedding output, 1 = last layer)", ylabel="IsoScore of mean-pooled vectors",
           title="ESM-2: IsoScore per layer")
    ax.legend()
    plt.show()
"""),
("md", r"""
## Local isotropy: one point cloud per amino acid

For every amino acid, the per-residue vectors of all its occurrences form a point cloud. We never hold
these clouds in memory: each protein's residue matrix is folded into one streaming covariance per amino
acid (`CovarianceAccumulator`, float64) and dropped. IsoScore is deflated when a cloud has fewer points
than dimensions (isotropic data score about m/(n+m)), so we require m ≥ {glue:text}`local_min_ratio_required`·n;
the rarest amino acid here has {glue:text}`local_min_count` residues, {glue:text}`local_min_ratio:.1f`
times the dimension. The paper reports "about 14 effective dimensions on average" for the 1024-d ProtTrans
models; the mean over amino acids here is {glue:text}`local_mean_eff_dims_value:.2f` (model: the ProtBERT
{glue:text}`local_model` stand-in in `smoke`/`offline`). Streaming and in-memory IsoScore of the same
clouds agree to {glue:text}`local_streaming_vs_memory:.1e`.
"""),
("code", r"""
seqs_local = seqs_global[: cfg["n_local"]]
lm_local, _ = embeddings["prot_bert"]
res_acc = P.accumulate_residues(lm_local, seqs_local, layer=-1, max_length=cfg["max_length"],
                                min_ratio=cfg["min_ratio"])
local = res_acc.table()
display(local.round(4))
record("local_model", lm_local.name)
record("local_min_ratio_required", cfg["min_ratio"])
record("local_min_count", int(local["count"].min()))
record("local_min_ratio", float(local["count"].min() / res_acc.n_features))
mean_k = res_acc.mean_effective_dimensions()
record("local_mean_eff_dims_value", mean_k)
record("local_mean_eff_dims" if profile == "paper" else "standin_local_mean_eff_dims", mean_k)

# streaming vs in memory on a small subset: stack every residue row, group, score with numpy
small = seqs_local[:30]
stream = P.accumulate_residues(lm_local, small, layer=-1, max_length=cfg["max_length"], min_ratio=0,
                               progress=False).table().set_index("residue")
rows_mem = P.residue_rows(lm_local, small, layer=-1, max_length=cfg["max_length"])
diffs = [abs(stream.loc[a, "isoscore"] - isoscore(R)) for a, R in rows_mem.items() if len(R) >= 2
         and a in stream.index and np.isfinite(stream.loc[a, "isoscore"])]
record("local_streaming_vs_memory", max(diffs))

fig, ax = plt.subplots(figsize=(8, 3.5))
sns.barplot(data=local, x="residue", y="eff_dims", ax=ax, color="C0")
if profile == "paper":
    ax.axhline(14, ls="--", color="k", lw=1, label="paper: ~14 (1024-d ProtTrans, [S])")
ax.axhline(res_acc.n_features, ls=":", color="k", lw=1, label=f"all n = {res_acc.n_features} dimensions")
ax.set(ylabel="effective dimensions ι(n−1)+1", title=f"Per-amino-acid isotropy, {lm_local.name} (n = {res_acc.n_features})")
ax.legend()
plt.show()
"""),
("md", r"""
## Embedding distance versus alignment

We take {glue:text}`pair_n_proteins` of the randomly drawn proteins and align **all** {glue:text}`n_pairs` pairs
globally (Needleman–Wunsch) with PAM250, **gap open 10 and extend 1** (the paper names Biopython and
PAM250 but not the gap penalties nor global vs local; these are our choice). Before aligning, selenocysteine
U is mapped to C and pyrrolysine O to K, explicitly (PAM250 has neither; Biopython rejects them).
*Identity* is the number of identical columns over the alignment length (gaps included). Alignments
run through parasail {cite}`daily2016parasail`'s striped vector kernel with traceback (`nw_trace_striped_16`;
matches and length are counted on the traceback), in parallel processes (joblib), in chunks written
atomically to disk: a killed run resumes where it stopped and gives identical results.

parasail also has a faster "statistics" kernel (`nw_stats_striped_16`) that returns matches and length
without a traceback. Its score is right (largest difference from ours {glue:text}`stats_kernel_score_max_diff`),
but its *length* is impossible for a global alignment (shorter than the longer sequence) on a fraction
{glue:text}`stats_kernel_impossible_length_frac:.2f` of the pairs checked below, which would inflate
identity; we do not use it.

Biopython's `PairwiseAligner` {cite}`cock2009biopython`, an independent implementation, agrees on
{glue:text}`biopython_n_pairs` pairs: the largest score difference is {glue:text}`biopython_score_max_diff`,
and identity differs by at most {glue:text}`biopython_identity_max_diff:.3f` (mean
{glue:text}`biopython_identity_mean_diff:.4f`; a fraction {glue:text}`biopython_identity_frac_over_002:.3f` of
pairs differ by more than 0.02). The differences are not errors: rescoring the alignments of the worst pair
from scratch (parasail's traceback and Biopython's) gives the optimal score for both, so they are
**co-optimal alignments** (when the two differ; the table's last rows add parasail's statistics kernel,
whose length need not be that of any alignment). For short unrelated proteins these can differ by several hundredths: "identity of the optimal
alignment" is not uniquely defined, a caveat for any table that reports it (the paper included).
"""),
("code", r"""
pair_idx = glob_idx[: cfg["n_pair_proteins"]]  # a random sample: the head of the global permutation
pair_seqs = seqs_global[: cfg["n_pair_proteins"]]
pairs = P.all_pairs(len(pair_seqs))
record("pair_n_proteins", len(pair_seqs))
record("n_pairs", len(pairs))
aln = P.alignment_pair_stats(pair_seqs, pairs, out_dir=cache / "alignments", chunk_size=cfg["chunk_size"],
                             n_jobs=cfg["n_jobs"], gap_open=cfg["gap_open"], gap_extend=cfg["gap_extend"],
                             matrix=cfg["matrix"], seq_ids=sp.accession.iloc[pair_idx].tolist())
display(aln.describe().round(3))

check = aln.sample(min(cfg["n_biopython"], len(aln)), random_state=seed)
bio = [P.alignment_stats_biopython(P.map_residues_for_alignment(pair_seqs[i]), P.map_residues_for_alignment(pair_seqs[j]),
                                   cfg["gap_open"], cfg["gap_extend"], cfg["matrix"]) for i, j in zip(check.i, check.j)]
bio = pd.DataFrame(bio, index=check.index)
record("biopython_n_pairs", len(check))
record("biopython_score_max_diff", int((bio.score - check.score).abs().max()))
record("biopython_identity_max_diff", float((bio.identity - check.identity).abs().max()))
record("biopython_identity_mean_diff", float((bio.identity - check.identity).abs().mean()))
record("biopython_identity_frac_over_002", float(((bio.identity - check.identity).abs() > 0.02).mean()))

# the pair with the largest identity difference: are both alignments really optimal? rescore them from scratch
worst = (bio.identity - check.identity).abs().idxmax()
a, b = (P.map_residues_for_alignment(pair_seqs[k]) for k in (check.i[worst], check.j[worst]))
resc = {tool: P.rescore_alignment(*P.aligned_strings(a, b, tool, cfg["gap_open"], cfg["gap_extend"], cfg["matrix"]),
                                  cfg["gap_open"], cfg["gap_extend"], cfg["matrix"]) for tool in ("parasail", "biopython")}
# parasail's statistics kernel: is its "length" a possible global-alignment length (>= the longer sequence)?
kern = [P.alignment_stats_kernel(P.map_residues_for_alignment(pair_seqs[i]), P.map_residues_for_alignment(pair_seqs[j]),
                                 cfg["gap_open"], cfg["gap_extend"], cfg["matrix"]) for i, j in zip(check.i, check.j)]
too_short = [k["length"] < max(len(pair_seqs[i]), len(pair_seqs[j])) for k, i, j in zip(kern, check.i, check.j)]
record("stats_kernel_impossible_length_frac", float(np.mean(too_short)))
record("stats_kernel_score_max_diff", int(max(abs(k["score"] - s) for k, s in zip(kern, check.score))))
record("coopt_worst_both_optimal", all(r["score"] == int(check.score[worst]) for r in resc.values()))
resc["parasail stats kernel (no traceback)"] = P.alignment_stats_kernel(a, b, cfg["gap_open"], cfg["gap_extend"], cfg["matrix"])
resc["Biopython counts()"] = bio.loc[worst, ["score", "matches", "length", "identity"]].to_dict()
display(pd.DataFrame(resc).T.rename_axis("worst pair, alignment from"))
"""),
("md", r"""
The two alignment measures correlate at Pearson {glue:text}`corr_score_identity:.3f` (Spearman
{glue:text}`spearman_score_identity:.3f`); the paper reports 0.847. Both summarise the same alignment,
so a strong positive correlation is expected; its size depends on how many related pairs and how varied
the lengths are (the raw score grows with length, identity does not).
"""),
("code", r"""
record("corr_score_identity", float(aln[["score", "identity"]].corr().iloc[0, 1]))
record("spearman_score_identity", float(aln[["score", "identity"]].corr("spearman").iloc[0, 1]))

# embeddings of the same proteins: composition baselines and the (stand-in) language models
pair_emb = {"aa_composition": P.composition_embeddings(pair_seqs, k=1),
            "2mer_composition": P.composition_embeddings(pair_seqs, k=2)}
for name in ("prot_bert", "prot_bert_bfd", "prot_xlnet", "proteinbert"):
    if name in global_E:  # the pair proteins are the first rows of the global table
        pair_emb[name] = global_E[name][: len(pair_seqs)]

corr_rows, tables = [], {}
for name, E in pair_emb.items():
    df = pd.concat([P.embedding_pair_stats(E, pairs), aln[["score", "identity"]]], axis=1)
    tables[name] = df
    for method in ("pearson", "spearman"):
        C = P.pair_correlations(df, method=method)
        corr_rows.append({"embedding": name, "method": method,
                          **{f"{a}–{b}": C.loc[a, b] for (a, b) in P.HAKIM2025_CORRELATIONS}})
corr = pd.DataFrame(corr_rows)
reported = {"embedding": "ProtBERT (paper, [S])", "method": "pearson",
            **{f"{a}–{b}": v for (a, b), v in P.HAKIM2025_CORRELATIONS.items()}}
display(pd.concat([pd.DataFrame([reported]), corr]).round(3))

def pearson(name, a, b):
    return float(tables[name][[a, b]].corr().iloc[0, 1])

for (a, b), short in {("cosine", "sq_euclidean"): "cos_sqeuclid", ("cosine", "identity"): "cos_identity",
                      ("cosine", "score"): "cos_score", ("sq_euclidean", "identity"): "sqeuclid_identity"}.items():
    record(f"aa_composition_corr_{short}", pearson("aa_composition", a, b))
    record(f"2mer_composition_corr_{short}", pearson("2mer_composition", a, b))
for (a, b) in P.HAKIM2025_CORRELATIONS:
    if {a, b} != {"score", "identity"}:
        if profile == "paper":
            record(f"prot_bert_corr_{a}_{b}", pearson("prot_bert", a, b))
        else:
            record(f"standin_prot_bert_corr_{a}_{b}", pearson("prot_bert", a, b))
"""),
("md", r"""
**The sign of the cosine–distance correlation.** The paper's matrix gives +0.791 between ProtBERT's
cosine *similarity* and squared Euclidean *distance*. A similarity and a distance of the same pairs
should correlate negatively: for unit vectors $\lVert x-y\rVert^2 = 2 - 2\cos(x,y)$ exactly (correlation
−1), and varying norms only weaken this. For the composition vectors we measure
{glue:text}`aa_composition_corr_cos_sqeuclid:.3f` (amino acids) and
{glue:text}`2mer_composition_corr_cos_sqeuclid:.3f` (dipeptides). A positive value needs the norms to vary
strongly and co-vary with direction, or a transcription error (one of the two columns negated, e.g. a
cosine *distance*); the summary we have cannot tell which.

**Does composition track alignment?** The amino-acid composition cosine correlates with alignment
identity at {glue:text}`aa_composition_corr_cos_identity:.3f` and with the score at
{glue:text}`aa_composition_corr_cos_score:.3f`; the paper's ProtBERT values are −0.011 and 0.014.
A language model whose geometry tracks alignment no better than composition does has learnt little
about homology that the composition did not already carry. (In `smoke` and `offline` the `prot_bert` rows
come from a random-weight stand-in; mean-pooling random token vectors gives nearly a fixed linear map of
the amino-acid composition, so those rows are a second composition baseline, not a language model.)
"""),
("code", r"""
show = [n for n in ("prot_bert", "aa_composition", "2mer_composition") if n in tables]
fig, axes = plt.subplots(2, len(show), figsize=(4.4 * len(show), 7.5), squeeze=False, constrained_layout=True)
for c, name in enumerate(show):
    df = tables[name]
    for r, col in enumerate(("cosine", "sq_euclidean")):
        ax = axes[r, c]
        hb = ax.hexbin(df["identity"], df[col], gridsize=40, bins="log", mincnt=1, cmap="viridis")
        ax.axvline(0.3, color="w", ls="--", lw=1)
        ax.set(xlabel="alignment identity" if r == 1 else "", ylabel=col, title=name if r == 0 else "")
fig.colorbar(hb, ax=axes, label="pairs (log)")
plt.show()

# low- vs high-similarity regimes (identity below / above 0.3, the classical twilight zone)
reg_rows = []
for name in show:
    df = tables[name]
    for regime, m in (("identity < 0.3", df.identity < 0.3), ("identity ≥ 0.3", df.identity >= 0.3)):
        if m.sum() >= 3:
            reg_rows.append({"embedding": name, "regime": regime, "pairs": int(m.sum()),
                             "cosine mean": df.cosine[m].mean(), "cosine sd": df.cosine[m].std(),
                             "sq. Euclidean mean": df.sq_euclidean[m].mean(),
                             "sq. Euclidean sd": df.sq_euclidean[m].std()})
display(pd.DataFrame(reg_rows).round(4))
n_high = record("pairs_high_identity", int((aln.identity >= 0.3).sum()))
"""),
("md", r"""
Most random pairs of proteins are unrelated, so nearly all of them sit in the low-identity regime
(identity of a global alignment of unrelated sequences is about 0.1–0.2); only
{glue:text}`pairs_high_identity` pairs reach identity 0.3. In that regime the embedding distances spread
widely, the paper's observation; with a random sample, the high-similarity regime is thinly populated
and the scatter plots are dominated by unrelated pairs.

## Deviations from the paper

- **Models.** No pretrained protein weights can be downloaded in the `smoke`/`offline` profiles, so
  ProtBERT, ProtBERT-BFD, ProtXLNet, ProteinBERT and ESM-2 are replaced by tiny random models of the same
  architecture and tokenisation. Their IsoScores exercise the code but are not compared with the paper
  (the paper's values are `unverified` here); to keep the runs short they see at most 128 (`smoke`) or 256
  (`offline`) residues per protein. The `paper` profile loads the real weights through `replib.models`
  (ProteinBERT through a PyTorch port of the Keras weights) and keeps up to 1,022 residues (longer
  sequences are truncated; the paper does not say how it handled them).
- **ProteinBERT's 512-d vector** is not named in the paper; the README's "global representation" is a
  15,599-d concatenation. We use the final global layer (512-d), the most natural reading.
- **Data.** Offline: a random sample of Swiss-Prot January 2014 (GO-annotated, 486,000 entries), not the
  current release (~570,000).
- **Pairs.** "1 % of ~570,000 proteins" would be 5,700 proteins and 1.6×10⁷ pairs, not the reported
  6.4×10⁶; the `paper` profile uses 3,578 proteins, whose C(3578, 2) = 6,399,253 pairs match the reported
  count.
- **Alignment settings** (global, PAM250, gap open 10, extend 1) and the identity denominator (alignment
  length with gaps) are our choices; the paper states none of them. Co-optimal alignments make identity
  tool-dependent by up to a few hundredths.
- **Rounding.** The paper's integer effective dimensions are `ceil(ι(n−1)+1)`; we report the real number too.
- **Local analysis.** The paper's per-amino-acid table did not reach us; only "about 14 on average".
  We require at least 5·n residues per amino acid; the paper does not say how many it used.
- **The cosine–distance sign** (+0.791 in the paper) contradicts the geometry of a similarity against a
  distance; we show the measured sign.
"""),
]

if __name__ == "__main__":
    out = Path(__file__).resolve().parents[2] / "notebooks" / "protein_isotropy.ipynb"
    write(out, cells)
    print("wrote", out)

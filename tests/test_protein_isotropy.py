"""Protein isotropy chapter (Hakim et al. 2025): alignment vs Biopython, residue mapping, resumable
pair engine, streaming per-residue IsoScore, composition embeddings, effective-dimension rounding."""

import itertools
import json
import math
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.spatial.distance import sqeuclidean
from scipy.stats import pearsonr, spearmanr
from sklearn.metrics.pairwise import cosine_similarity

from replib.config import chapter_config
from replib.embeddings import embed_proteins
from replib.methods import protein_isotropy as P
from replib.metrics import CovarianceAccumulator, effective_dimensions, isoscore
from replib.sampling import bootstrap_spread

ROOT = Path(__file__).resolve().parents[1]
MIRROR = Path(os.environ.get("REPLIB_DATA_MIRROR") or ROOT.parent / "shared" / "data")
AA = P.AMINO_ACIDS


def random_protein(n, rng):
    return "".join(rng.choice(list(AA), size=n))


def _sample(n_total, n, seed):
    """``n`` of ``n_total`` protein indices drawn without replacement, sorted."""
    return np.sort(np.random.default_rng(seed).choice(n_total, size=n, replace=False))


def related(seq, rng, p=0.2):
    """A mutated copy with substitutions and one deletion (homologue-like)."""
    s = [c if rng.random() > p else rng.choice(list(AA)) for c in seq]
    k = int(rng.integers(0, len(s) - 5))
    return "".join(s[:k] + s[k + 3 :])


@pytest.fixture(scope="module")
def real_seqs():
    if not (MIRROR / "swissprot").is_dir():
        pytest.skip("offline data mirror not found")
    os.environ.setdefault("REPLIB_DATA_MIRROR", str(MIRROR))
    from replib.data import load_swissprot

    df = load_swissprot("5k")
    return df.sequence.tolist()


# ------------------------------------------------------------------------------- alignment statistics
def test_gap_convention_by_hand():
    # 20 W aligned (PAM250 W/W = 17) and one 3-residue gap: 340 - (10 + 2*1) = 328, in both tools
    a, b = "W" * 20, "W" * 10 + "AAA" + "W" * 10
    for fn in (P.alignment_stats, P.alignment_stats_biopython):
        r = fn(a, b)
        assert r["score"] == 328
        assert r["matches"] == 20 and r["length"] == 23
        assert r["identity"] == pytest.approx(20 / 23)


def test_alignment_agrees_with_biopython_synthetic(rng):
    diffs = []
    for _ in range(25):
        a = random_protein(int(rng.integers(30, 150)), rng)
        b = related(a, rng) if rng.random() < 0.5 else random_protein(int(rng.integers(30, 150)), rng)
        p, q = P.alignment_stats(a, b), P.alignment_stats_biopython(a, b)
        assert p["score"] == q["score"]  # the optimal score is unique
        diffs.append(abs(p["identity"] - q["identity"]))
    # co-optimal alignments are broken differently: identity may differ, by a few columns' worth
    assert max(diffs) < 0.1 and np.mean(diffs) < 0.01


def test_alignment_agrees_with_biopython_real(real_seqs):
    idx = _sample(len(real_seqs), 12, seed=3)
    seqs = [P.map_residues_for_alignment(real_seqs[i]) for i in idx]
    for i, j in P.all_pairs(12)[:30]:
        p, q = P.alignment_stats(seqs[i], seqs[j]), P.alignment_stats_biopython(seqs[i], seqs[j])
        assert p["score"] == q["score"]
        assert abs(p["identity"] - q["identity"]) < 0.03


def test_identity_of_identical_sequences_is_one_and_saturation_fallback(rng):
    s = random_protein(2500, rng)  # self-score > 32767 would saturate 16-bit; the 32-bit kernel is used
    r = P.alignment_stats(s, s)
    assert r["identity"] == 1.0 and r["length"] == 2500
    assert r["score"] == P.alignment_stats_biopython(s, s)["score"] > 0


def test_scan_kernel_gives_the_striped_kernels_alignments(real_seqs, rng):
    """The traceback kernel runs in parasail's scan layout for speed; its alignments (score, matches, length) are
    the striped layout's, on real pairs, related pairs and a pair that saturates 16 bits."""
    import parasail

    def striped(a, b):
        r = parasail.nw_trace_striped_16(a, b, 10, 1, parasail.pam250)
        r = parasail.nw_trace_striped_32(a, b, 10, 1, parasail.pam250) if r.saturated else r
        top, bottom = r.traceback.query, r.traceback.ref
        matches = sum(x == y != "-" for x, y in zip(top, bottom))
        return {"score": r.score, "matches": matches, "length": len(top), "identity": matches / len(top)}

    idx = _sample(len(real_seqs), 40, seed=5)
    seqs = [P.map_residues_for_alignment(real_seqs[i]) for i in idx]
    cases = [(seqs[i], seqs[j]) for i, j in P.all_pairs(40)[::8]]
    cases += [(a, related(a, rng)) for a in seqs[:20]]
    long = random_protein(7000, rng)
    cases.append((long, related(long, rng, p=0.02)))  # its score saturates the 16-bit kernels
    assert parasail.nw_trace_scan_16(*cases[-1], 10, 1, parasail.pam250).saturated
    assert all(P.alignment_stats(a, b) == striped(a, b) for a, b in cases)


def test_alignment_length_and_identity_come_from_a_real_alignment(rng):
    for _ in range(40):
        a = random_protein(int(rng.integers(20, 200)), rng)
        b = random_protein(int(rng.integers(20, 200)), rng)
        r = P.alignment_stats(a, b)
        assert r["length"] >= max(len(a), len(b))  # a global alignment covers both sequences
        assert r["length"] <= len(a) + len(b)
        top, bottom = P.aligned_strings(a, b, "parasail")
        assert P.rescore_alignment(top, bottom) == r
        assert P.alignment_stats_kernel(a, b)["score"] == r["score"]


def test_both_tools_return_optimal_alignments_by_rescoring(rng):
    for _ in range(10):
        a = random_protein(int(rng.integers(40, 120)), rng)
        b = related(a, rng) if rng.random() < 0.5 else random_protein(int(rng.integers(40, 120)), rng)
        best = P.alignment_stats(a, b)["score"]
        for tool in ("parasail", "biopython"):
            top, bottom = P.aligned_strings(a, b, tool)
            assert top.replace("-", "") == a and bottom.replace("-", "") == b
            assert P.rescore_alignment(top, bottom)["score"] == best
        assert P.rescore_alignment(*P.aligned_strings(a, b, "biopython"))["identity"] == pytest.approx(
            P.alignment_stats_biopython(a, b)["identity"]
        )
    with pytest.raises(ValueError):
        P.rescore_alignment("A-", "-")


# ------------------------------------------------------------------------------------- residue mapping
def test_mapping_u_o():
    assert P.map_residues_for_alignment("MUKO") == "MCKK"
    assert P.map_residues_for_alignment("ACXBZ") == "ACXBZ"


@pytest.mark.parametrize("bad", ["acde", "AC*D", "AC-D", "AC1", ""])
def test_mapping_rejects_bad_letters(bad):
    with pytest.raises(ValueError):
        P.map_residues_for_alignment(bad, seq_id="P12345")


def test_biopython_rejects_unmapped_u():
    with pytest.raises(ValueError):
        P.alignment_stats_biopython("ACUA", "ACCA")
    assert P.alignment_stats_biopython(P.map_residues_for_alignment("ACUA"), "ACCA")["identity"] == 1.0


def test_pair_engine_names_bad_sequence_before_work():
    with pytest.raises(ValueError, match="bad_one"):
        P.alignment_pair_stats(["ACDE", "acde"], [[0, 1]], seq_ids=["ok", "bad_one"], progress=False)
    with pytest.raises(ValueError):
        P.alignment_pair_stats(["ACDE", "ACDE"], [[0, 2]], progress=False)
    with pytest.raises(ValueError):
        P.alignment_pair_stats(["ACDE", "ACDE"], np.array([[0.0, 1.0]]), progress=False)


# --------------------------------------------------------------------------------- resumable pair engine
def _toy_job(n=14):
    seqs = [random_protein(20 + 3 * k, np.random.default_rng(k)) for k in range(n)]
    return seqs, P.all_pairs(n)


def test_pair_engine_matches_direct_calls_and_jobs():
    seqs, pairs = _toy_job()
    df1 = P.alignment_pair_stats(seqs, pairs, chunk_size=17, n_jobs=1, progress=False)
    df2 = P.alignment_pair_stats(seqs, pairs, chunk_size=17, n_jobs=2, progress=False)
    pd.testing.assert_frame_equal(df1, df2)
    for r in df1.sample(10, random_state=0).itertuples():
        d = P.alignment_stats(seqs[r.i], seqs[r.j])
        assert (r.score, r.matches, r.length) == (d["score"], d["matches"], d["length"])


def test_pair_engine_resume_after_kill(tmp_path):
    seqs, pairs = _toy_job()
    fresh = P.alignment_pair_stats(seqs, pairs, chunk_size=10, progress=False)

    class Killed(RuntimeError):
        pass

    def kill_after(c):
        if c == 3:
            raise Killed

    with pytest.raises(Killed):
        P.alignment_pair_stats(seqs, pairs, out_dir=tmp_path, chunk_size=10, progress=False, on_chunk=kill_after)
    (folder,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    done = sorted(p.name for p in folder.glob("shard-*.npz"))
    assert done == [f"shard-{c:05d}.npz" for c in range(4)]
    (folder / ".shard-00004.npz.xyz.tmp").write_bytes(b"partial")  # a write cut short
    computed = []
    resumed = P.alignment_pair_stats(
        seqs, pairs, out_dir=tmp_path, chunk_size=10, progress=False, on_chunk=computed.append
    )
    assert computed == list(range(4, -(-len(pairs) // 10)))  # finished chunks are not recomputed
    pd.testing.assert_frame_equal(fresh, resumed)
    computed.clear()
    again = P.alignment_pair_stats(
        seqs, pairs, out_dir=tmp_path, chunk_size=10, progress=False, on_chunk=computed.append
    )
    assert computed == []
    pd.testing.assert_frame_equal(fresh, again)


@pytest.mark.slow
def test_pair_engine_survives_sigkill(tmp_path, rng):
    script = tmp_path / "job.py"
    script.write_text(
        "import sys, numpy as np\n"
        "from replib.methods import protein_isotropy as P\n"
        "rng = np.random.default_rng(0)\n"
        "seqs = [''.join(rng.choice(list(P.AMINO_ACIDS), size=400)) for _ in range(60)]\n"
        "df = P.alignment_pair_stats(seqs, P.all_pairs(60), out_dir=sys.argv[1], chunk_size=30, progress=False)\n"
        "df.to_csv(sys.argv[2])\n"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = tmp_path / "store"
    proc = subprocess.Popen([sys.executable, str(script), str(out), str(tmp_path / "a.csv")], env=env)
    deadline = time.time() + 60
    while time.time() < deadline and len(list(out.glob("*/shard-*.npz"))) < 5:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    n_done = len(list(out.glob("*/shard-*.npz")))
    assert 0 < n_done < 59  # killed midway
    subprocess.run([sys.executable, str(script), str(out), str(tmp_path / "b.csv")], env=env, check=True)
    subprocess.run([sys.executable, str(script), str(tmp_path / "other"), str(tmp_path / "c.csv")], env=env, check=True)
    assert (tmp_path / "b.csv").read_text() == (tmp_path / "c.csv").read_text()


# ------------------------------------------------------------------------ embedding pairs, correlations
def test_embedding_pair_stats_vs_sklearn_scipy(rng):
    E = rng.normal(size=(30, 8)) + 1.0
    pairs = P.all_pairs(30)
    df = P.embedding_pair_stats(E, pairs, batch=50)
    C = cosine_similarity(E)
    np.testing.assert_allclose(df.cosine, C[pairs[:, 0], pairs[:, 1]], atol=1e-12)
    np.testing.assert_allclose(df.sq_euclidean, [sqeuclidean(E[i], E[j]) for i, j in pairs], rtol=1e-12)
    with pytest.raises(ValueError):
        P.embedding_pair_stats(np.vstack([E, np.zeros(8)]), [[0, 30]])


def test_unit_norm_cosine_and_distance_anticorrelate(rng):
    # ||x - y||^2 = 2 - 2 cos for unit vectors: a similarity and a distance correlate at exactly -1
    E = rng.normal(size=(40, 6))
    E /= np.linalg.norm(E, axis=1, keepdims=True)
    df = P.embedding_pair_stats(E, P.all_pairs(40))
    assert P.pair_correlations(df, ("cosine", "sq_euclidean")).iloc[0, 1] == pytest.approx(-1.0, abs=1e-12)


def test_pair_correlations_vs_scipy(rng):
    df = pd.DataFrame(rng.normal(size=(200, 4)), columns=["cosine", "sq_euclidean", "score", "identity"])
    df["identity"] += df["score"]
    pr = P.pair_correlations(df)
    sp = P.pair_correlations(df, method="spearman")
    assert pr.loc["score", "identity"] == pytest.approx(pearsonr(df.score, df.identity)[0], abs=1e-12)
    assert sp.loc["cosine", "score"] == pytest.approx(spearmanr(df.cosine, df.score)[0], abs=1e-12)
    with pytest.raises(ValueError):
        P.pair_correlations(df.assign(score=1.0))


def test_pairs_and_counts():
    pairs = P.all_pairs(5)
    assert len(pairs) == 10 and (pairs[:, 0] < pairs[:, 1]).all()


# ---------------------------------------------------------------------------- per-residue streaming
def test_residue_streaming_equals_in_memory(rng):
    d = 6
    seqs = [random_protein(int(rng.integers(20, 80)), rng) for _ in range(40)]
    mats = [rng.normal(size=(len(s), d)) * np.linspace(0.5, 3, d) + 50.0 for s in seqs]
    acc = P.ResidueIsotropy(d, min_ratio=2)
    for s, R in zip(seqs, mats):
        acc.update(s, R)
    t = acc.table()
    allres = "".join(seqs)
    stacked = np.vstack(mats)
    for row in t.itertuples():
        rows = stacked[np.frombuffer(allres.encode(), np.uint8) == ord(row.residue)]
        assert row.count == len(rows)
        assert row.isoscore == pytest.approx(isoscore(rows), abs=1e-10)
        assert row.eff_dims == pytest.approx(effective_dimensions(rows), rel=1e-10)
        assert row.enough == (len(rows) >= 2 * d)


def test_residue_isotropy_errors_and_enough_flag(rng):
    acc = P.ResidueIsotropy(4, min_ratio=5)
    with pytest.raises(ValueError):
        acc.update("ACD", rng.normal(size=(4, 4)))  # length mismatch
    with pytest.raises(ValueError):
        acc.update("ACD", rng.normal(size=(3, 5)))  # width mismatch
    acc.update("A" * 10 + "C" * 30, rng.normal(size=(40, 4)))
    t = acc.table().set_index("residue")
    assert not t.loc["A", "enough"] and t.loc["C", "enough"]  # 10 < 5*4 <= 30
    assert t.loc["D", "count"] == 0 and np.isnan(t.loc["D", "isoscore"])
    assert acc.mean_effective_dimensions() == pytest.approx(t.loc["C", "eff_dims"])


# ---------------------------------------------------------------------------------------- composition
def test_composition_by_hand():
    E1 = P.composition_embeddings(["AAC", "WXW"], k=1)
    assert E1.shape == (2, 20)
    assert E1[0, AA.index("A")] == pytest.approx(2 / 3) and E1[0, AA.index("C")] == pytest.approx(1 / 3)
    assert E1[1, AA.index("W")] == 1.0  # X skipped
    E2 = P.composition_embeddings(["AACX"], k=2)
    labels = ["".join(p) for p in itertools.product(AA, repeat=2)]
    assert E2.shape == (1, 400) and E2[0, labels.index("AA")] == 0.5 and E2[0, labels.index("AC")] == 0.5


def test_composition_vs_counter(real_seqs):
    seqs = real_seqs[:50]
    for k in (1, 2):
        E = P.composition_embeddings(seqs, k=k)
        np.testing.assert_allclose(E.sum(1), 1.0)
        labels = ["".join(p) for p in itertools.product(AA, repeat=k)]
        for r, s in enumerate(seqs[:10]):
            c = Counter(s[i : i + k] for i in range(len(s) - k + 1) if all(ch in AA for ch in s[i : i + k]))
            tot = sum(c.values())
            ref = np.array([c.get(w, 0) / tot for w in labels])
            np.testing.assert_allclose(E[r], ref, atol=1e-15)


def test_composition_errors():
    with pytest.raises(ValueError):
        P.composition_embeddings(["XXXX"], k=1)
    with pytest.raises(ValueError):
        P.composition_embeddings(["ACD"], k=4)
    with pytest.raises(ValueError):
        P.composition_embeddings(["A"], k=2)


# ---------------------------------------------------------------------------- effective dimensions
def test_reported_integers_are_ceil():
    assert P.rounding_rule_matches(rule="ceil") == 4
    assert P.rounding_rule_matches(rule="round") == 2  # ProtBERT-BFD 5.06 -> 5, ProteinBERT 119.16 -> 119
    assert P.rounding_rule_matches(rule="floor") == 0
    k = P.effective_dimensions_from_isoscore(0.231228, 512)
    assert k == pytest.approx(119.157508) and P.round_effective_dimensions(k) == 120


def test_effective_dims_from_isoscore_matches_metric(rng):
    X = rng.normal(size=(500, 12)) * np.linspace(0.2, 2, 12)
    acc = CovarianceAccumulator().update(X)
    assert P.effective_dimensions_from_isoscore(isoscore(X), 12) == pytest.approx(effective_dimensions(X), rel=1e-12)
    assert P.effective_dimensions_from_isoscore(acc.isoscore(), 12) == pytest.approx(effective_dimensions(X), rel=1e-9)
    g = P.global_isotropy(X)
    assert g["eff_dims_ceil"] == int(np.ceil(g["eff_dims"])) and g["n_features"] == 12
    for bad in (-0.1, 1.5, np.nan):
        with pytest.raises(ValueError):
            P.effective_dimensions_from_isoscore(bad, 10)
    with pytest.raises(ValueError):
        P.round_effective_dimensions(2.5, "up")


# ------------------------------------------------------------------------------- language-model path
@pytest.mark.slow  # imports transformers and builds a model (the smoke chapter run covers every model path)
def test_tiny_protbert_paths(rng):
    seqs = [random_protein(int(rng.integers(10, 40)), rng) for _ in range(12)] + ["MKUOX"]
    lm = P.load_protein_model("prot_bert", tiny=True)
    e = embed_proteins(lm, seqs, max_length=30, progress=False)
    E = e.pooled[-1]
    assert E.shape == (13, lm.spec.hidden_size) and np.isfinite(E).all()
    acc = P.accumulate_residues(lm, seqs, max_length=30, chunk=5, min_ratio=1, progress=False)
    assert sum(a.count for a in acc.acc.values()) == sum(min(len(s), 30) for s in seqs)


def test_config_profiles():
    for p in ("smoke", "offline", "paper"):
        c = chapter_config("protein_isotropy", p)
        assert c.gap_open == 10 and c.gap_extend == 1 and c.tiny == (p != "paper")
        assert c.model_specs[:4] == P.PAPER_MODELS and list(c.default_models) == c.model_specs
    paper = chapter_config("protein_isotropy", "paper")
    assert math.comb(paper.n_pair_proteins, 2) == pytest.approx(6.4e6, rel=0.001)
    assert [str(m) for m in paper.models][4:] == ["esm2_t6_8M", "esm2_t12_35M", "esm2_t30_150M", "esm2_t33_650M"]
    with pytest.raises(ValueError, match="unknown profile"):
        chapter_config("protein_isotropy", "fast")


def _model_folder(tmp_path, name, **config):
    folder = tmp_path / name
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"num_hidden_layers": 2, "hidden_size": 8, **config}))
    return folder


def test_reader_models_are_told_apart_from_the_profile_models(tmp_path):
    folder = _model_folder(tmp_path, "my-esm", model_type="esm", vocab_size=33)
    c = chapter_config("protein_isotropy", "smoke", models=[str(folder), "prot_bert"])
    label = P.model_label(folder)
    assert c.model_specs == [str(folder), "prot_bert"] and label == c.models[0].slug and label.startswith("my_esm_")
    embedded = P.ModelEmbeddings(vectors={label: None, "prot_bert": None})
    assert P.user_models(c, embedded) == [label]
    P.require_protein_models(c)  # an ESM folder is a protein model


@pytest.mark.slow  # builds and saves a model
def test_a_stand_in_folder_named_as_a_paper_model_never_resolves_a_hub_id(tmp_path, monkeypatch, rng):
    """The rehearsal's stand-in folders bear the paper models' names (``.../prot_bert``); on a GPU machine without
    a network the paper profile asked the Hub for ``Rostlab/prot_bert@main`` instead of loading the folder."""
    from replib.models import hub, loading, recipes, resolve, tiny_model

    def blocked(hf_id, *args, **kwargs):
        raise AssertionError(f"the Hub was asked for {hf_id}")

    for module in (hub, loading, recipes, resolve):
        monkeypatch.setattr(module, "hub_snapshot", blocked)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    folder = tmp_path / "prot_bert"
    lm = tiny_model("protbert")
    lm.model.save_pretrained(folder)
    lm.tokenizer.save_pretrained(folder)
    c = chapter_config("protein_isotropy", "paper", models=[str(folder)])
    seqs = [random_protein(int(rng.integers(10, 30)), rng) for _ in range(4)]
    embedded = P.embed_models(c, seqs, cache_dir=tmp_path / "cache", progress=False)
    label = P.model_label(c.models[0])
    assert label == c.models[0].slug != "prot_bert" and list(embedded.vectors) == [label]
    assert embedded.models[label][0].source == str(folder.resolve()) and P.user_models(c, embedded) == [label]


def test_a_text_model_is_refused_before_anything_is_loaded(tmp_path):
    """Issue 28 item 13: a text model given with --model ran the protein chapter to 20 failing claims."""
    from replib.models import WrongModelKindError

    text = _model_folder(tmp_path, "my-encoder", model_type="bert", vocab_size=30522)
    for models in ([str(text)], ["bert-base-uncased"], ["tiny-esm", "tiny-bert"]):
        c = chapter_config("protein_isotropy", "smoke", models=models)
        with pytest.raises(WrongModelKindError, match="this chapter needs a protein model"):
            P.require_protein_models(c)
        with pytest.raises(WrongModelKindError, match="needs a protein model"):
            P.embed_models(c, ["MKV"])
    with pytest.raises(WrongModelKindError, match="my-encoder is a text model"):
        P.load_protein_model(str(text), tiny=True)


# ------------------------------------------------------------------------------ the chapter's steps
def _glob_table(rng, names):
    rows = [
        {
            "embedding": n,
            "model": n,
            "isoscore": rng.random(),
            "eff_dims": rng.random() * 10,
            "eff_dims_ceil": int(rng.integers(1, 10)),
            "avg_cosine": rng.random(),
        }
        for n in names
    ]
    return pd.DataFrame(rows)


def test_global_records_bind_the_paper_keys_to_the_real_models_only_each_its_own(rng):
    names = ["prot_bert", "prot_bert_bfd", "prot_xlnet", "proteinbert", "mine", "aa_composition", "2mer_composition"]
    glob = _glob_table(rng, names)
    G = glob.set_index("embedding")
    real = P.global_records(glob, tiny=False, user_models=["mine"])
    assert real["prot_xlnet_eff_dims_ceil"] == G.loc["prot_xlnet", "eff_dims_ceil"]
    assert real["mine_avg_cosine"] == G.loc["mine", "avg_cosine"] and "aa_composition_isoscore" in real
    assert not any(k.startswith("standin_") for k in real)
    standin = P.global_records(glob, tiny=True, user_models=[])
    assert standin["standin_proteinbert_isoscore"] == G.loc["proteinbert", "isoscore"]
    assert "proteinbert_isoscore" not in standin and "mine_isoscore" not in standin
    # a run of some of the four (a part of the paper profile, replib.parts): each model's keys are its own
    three = P.global_records(glob[glob.embedding != "prot_xlnet"], tiny=False, user_models=[])
    assert three == {k: v for k, v in real.items() if not k.startswith(("prot_xlnet_", "mine_"))}
    assert P.esm_layer_records({"esm2_t6_8M": [0.1, 0.2]}, tiny=False) == {"esm_esm2_t6_8M_layer_isoscores": [0.1, 0.2]}
    assert P.esm_layer_records({"tiny-esm": [0.3]}, tiny=True) == {"standin_esm_layer_isoscores": [0.3]}


def test_local_records_and_reference_lines(rng):
    d = 4
    acc = P.ResidueIsotropy(d, min_ratio=2)
    for _ in range(30):
        s = random_protein(40, rng)
        acc.update(s, rng.normal(size=(len(s), d)))
    standin = P.local_records(acc, "tiny-protbert", "prot_bert", tiny=True)
    assert (
        standin["standin_local_mean_eff_dims"]
        == acc.mean_effective_dimensions()
        == standin["local_mean_eff_dims_value"]
    )
    assert standin["local_min_count"] == int(acc.table()["count"].min()) and standin["local_min_ratio_required"] == 2
    assert "local_mean_eff_dims" in P.local_records(acc, "ProtBERT", "prot_bert", tiny=False)
    assert "my_esm_local_mean_eff_dims" in P.local_records(acc, "x", "my_esm", tiny=False)
    assert [y for y, _, _ in P.local_reference_lines(1024, tiny=False)] == [14, 1024]
    assert [y for y, _, _ in P.local_reference_lines(64, tiny=True)] == [64]


def test_pair_correlation_records_and_regimes(rng):
    n = 60
    aln = pd.DataFrame({"score": rng.normal(size=n), "identity": rng.random(n)})
    tables = {
        name: pd.DataFrame({"cosine": rng.normal(size=n), "sq_euclidean": rng.normal(size=n)}).join(aln)
        for name in ("aa_composition", "2mer_composition", "prot_bert", "mine")
    }
    out = P.pair_correlation_records(tables, ["mine"], tiny=True)
    t = tables["aa_composition"]
    assert out["aa_composition_corr_cos_identity"] == pytest.approx(pearsonr(t.cosine, t.identity)[0], abs=1e-12)
    assert out["standin_prot_bert_corr_cosine_sq_euclidean"] == pytest.approx(
        pearsonr(tables["prot_bert"].cosine, tables["prot_bert"].sq_euclidean)[0], abs=1e-12
    )
    assert "mine_corr_sq_euclidean_score" in out and not any("score_identity" in k for k in out)
    assert "prot_bert_corr_cosine_score" in P.pair_correlation_records(tables, [], tiny=False)
    reg = P.identity_regimes(tables, ["mine"], threshold=0.5).set_index("regime")
    low = tables["mine"][tables["mine"].identity < 0.5]
    assert reg.loc["identity < 0.5", "pairs"] == len(low)
    assert reg.loc["identity < 0.5", "cosine mean"] == pytest.approx(low.cosine.mean())
    assert P.shown_representations("prot_bert", tables) == ["prot_bert", "aa_composition", "2mer_composition"]
    scores = P.score_identity_records(aln)
    assert scores["spearman_score_identity"] == pytest.approx(spearmanr(aln.score, aln.identity)[0])


def test_alignment_crosscheck_on_real_pairs(real_seqs):
    seqs = [s[:60] for s in real_seqs[:8]]
    pairs = P.all_pairs(len(seqs))
    aln = P.alignment_pair_stats(seqs, pairs, chunk_size=100, progress=False)
    xc = P.alignment_crosscheck(seqs, aln, 12, 0, gap_open=10, gap_extend=1, matrix="pam250")
    rec = P.crosscheck_records(xc)
    assert rec["biopython_n_pairs"] == 12 and rec["biopython_score_max_diff"] == 0  # the score is unique
    assert rec["stats_kernel_score_max_diff"] == 0 and rec["coopt_worst_both_optimal"] is True
    assert rec["biopython_n_identity_differs"] == int((xc.biopython.identity != xc.check.identity).sum())
    assert rec["biopython_identity_max_diff_not_coopt"] == 0.0 <= rec["biopython_identity_mean_diff"]
    assert xc.worst in xc.check.index and list(xc.worst_table.index)[:2] == ["parasail", "biopython"]
    lengths = [max(len(seqs[i]), len(seqs[j])) for i, j in zip(xc.check.i, xc.check.j)]
    assert (xc.too_short == (xc.kernel["length"].to_numpy() < lengths)).all()


def test_identity_differences_beyond_co_optimal_ones_do_not_depend_on_the_sampled_pairs(real_seqs):
    """The largest identity difference from Biopython depends on which pairs a seed samples (a rare co-optimal
    pair of very different identities, or not); the largest among pairs whose alignments are not both optimal
    is 0 on every sample, and it sees an alignment that is not optimal (here: a pair table whose scores are
    off by one, so that no rescored alignment reaches them)."""
    seqs = [s[:80] for s in real_seqs[:16]]
    aln = P.alignment_pair_stats(seqs, P.all_pairs(len(seqs)), chunk_size=200, progress=False)
    settings = {"gap_open": 10, "gap_extend": 1, "matrix": "pam250"}
    recs = [P.crosscheck_records(P.alignment_crosscheck(seqs, aln, 40, s, **settings)) for s in range(3)]
    assert len({r["biopython_identity_max_diff"] for r in recs}) > 1  # the maximum is the sample's
    assert all(r["biopython_n_identity_differs"] > 0 for r in recs)
    assert [r["biopython_identity_max_diff_not_coopt"] for r in recs] == [0.0, 0.0, 0.0]
    off = P.crosscheck_records(P.alignment_crosscheck(seqs, aln.assign(score=aln.score + 1), 40, 0, **settings))
    assert off["biopython_identity_max_diff_not_coopt"] == off["biopython_identity_max_diff"] > 0


def test_bootstrap_spread_of_a_maximum_sees_one_rare_value():
    """The bootstrap spread of a maximum: zero when every value is equal, about the gap to the next value times
    sqrt(p(1-p)) with p = 1-(1-1/n)^n when one value stands out; the mean's agrees with s/sqrt(n)."""
    assert bootstrap_spread(np.max, np.full(50, 0.02), n_boot=1000, seed=1) == 0.0
    x = np.r_[np.full(299, 0.02), 0.07]
    p = 1 - (1 - 1 / 300) ** 300
    assert bootstrap_spread(np.max, x, n_boot=4000, seed=2) == pytest.approx(0.05 * np.sqrt(p * (1 - p)), rel=0.05)
    y = np.random.default_rng(3).normal(size=400)
    assert bootstrap_spread(np.mean, y, n_boot=4000, seed=4) == pytest.approx(y.std(ddof=1) / 20, rel=0.08)


def test_global_sample_and_rounding_table():
    seqs = [f"M{'A' * k}" for k in range(10)]
    idx, sample = P.global_sample(seqs, 4, seed=3)
    assert sample == [seqs[i] for i in idx] and len(set(idx)) == 4
    assert (P.global_sample(seqs, None, seed=3)[0][:4] == idx).all()  # the sample is the head of one order
    t = P.rounding_table()
    assert (t["ceil"] == t["reported"]).all() and (t["floor"] != t["reported"]).any()

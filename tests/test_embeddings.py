"""Embedding recipes on tiny models, resumable cache, and real MiniLM checks."""

import numpy as np
import pytest
import torch

import replib.embeddings.proteins as proteins
import replib.embeddings.text as text
from replib.embeddings import (
    embed_proteins,
    embed_sentences,
    embed_token_stream,
    protein_text,
    residue_slice,
    token_stream_ids,
)
from replib.models import tiny_model

SEQS = ["MKTAYIAKQRQISFVKSHFSRQ", "MKX", "ACDEFGHIKLMNPQRSTVWYUZOB", "GGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGG", "W"]


@pytest.fixture(scope="module")
def tiny():
    return {f: tiny_model(f) for f in ["protbert", "protxlnet", "esm", "bert", "gpt2", "proteinbert"]}


def _single(lm, text):
    """Reference: one sequence alone, no padding, hidden states of the last layer."""
    ids = torch.tensor([lm.tokenizer(text)["input_ids"]])
    with torch.inference_mode():
        return lm.model(input_ids=ids, output_hidden_states=True).hidden_states[-1][0].numpy()


def test_protein_text_recipes():
    assert protein_text("mkuzob x", "protbert") == "M K X X X X X"
    assert protein_text("MKUX", "protxlnet") == "M K <unk> <unk>"
    assert protein_text("M K", "esm") == "MK"
    assert residue_slice("protxlnet", 5, 8) == slice(3, 6)


@pytest.mark.parametrize(
    "family,strip", [("protbert", slice(1, -1)), ("esm", slice(1, -1)), ("protxlnet", slice(0, -2))]
)
def test_protein_pooling_equals_single_sequence_reference(tiny, family, strip):
    lm = tiny[family]
    r = embed_proteins(lm, SEQS, return_residues=True, batch_tokens=4096, progress=False)
    assert r.lengths.tolist() == [len(s) for s in SEQS]  # <unk> counts as one residue, not five
    for i, s in enumerate(SEQS):
        ref = _single(lm, protein_text(s, lm.spec.recipe))[strip]
        np.testing.assert_allclose(r.residues[-1][i], ref, atol=2e-5)
        np.testing.assert_allclose(r.pooled[-1][i], ref.mean(0), atol=2e-5)


def test_xlnet_left_padding_batch_independent(tiny):
    lm = tiny["protxlnet"]
    together = embed_proteins(lm, SEQS, batch_tokens=10**6, progress=False).pooled[-1]
    alone = np.stack([embed_proteins(lm, [s], progress=False).pooled[-1][0] for s in SEQS])
    np.testing.assert_allclose(together, alone, atol=2e-5)
    # the padded batch really was left-padded: residue rows come from the right end
    enc = lm.tokenizer([protein_text(s, "protxlnet") for s in SEQS[:2]], padding=True)
    assert enc["attention_mask"][1][0] == 0 and enc["attention_mask"][1][-1] == 1


def test_max_length_truncate_and_drop(tiny):
    lm = tiny["esm"]
    t = embed_proteins(lm, SEQS, max_length=10, progress=False)
    assert t.lengths.max() == 10 and t.truncated.tolist() == [True, False, True, True, False]
    d = embed_proteins(lm, SEQS, max_length=10, too_long="drop", progress=False)
    assert d.index.tolist() == [1, 4]
    np.testing.assert_allclose(d.pooled[-1], t.pooled[-1][[1, 4]], atol=2e-5)
    with pytest.raises(ValueError, match="protein recipe"):
        embed_proteins(tiny["bert"], SEQS)


def test_proteinbert_recipe(tiny):
    lm = tiny["proteinbert"]
    r = embed_proteins(lm, SEQS, return_residues=True, progress=False)
    assert r.pooled["global"].shape == (5, 512) and r.pooled["local_mean"].shape == (5, 128)
    from replib.models.proteinbert import tokenize

    with torch.inference_mode():
        out = lm.model(torch.from_numpy(tokenize([SEQS[0]], 64)))
    np.testing.assert_allclose(r.pooled["global"][0], out["global"][0].numpy(), atol=1e-5)
    np.testing.assert_allclose(r.residues["local"][0], out["local"][0, 1 : len(SEQS[0]) + 1].numpy(), atol=1e-5)


@pytest.mark.parametrize("family,n_special", [("bert", 2), ("gpt2", 0)])
def test_sentences_drop_special_and_batch_independence(tiny, family, n_special):
    lm = tiny[family]
    texts = ["Hello world", "A man is playing a guitar on the beach today.", "hi"]
    r = embed_sentences(lm, texts, progress=False)
    keep = embed_sentences(lm, texts, drop_special=False, progress=False)
    for i, t in enumerate(texts):
        full = lm.tokenizer(t)["input_ids"]
        assert len(keep.tokens[i]) == len(full) and len(r.tokens[i]) == len(full) - n_special
        ref = _single(lm, t)
        np.testing.assert_allclose(keep.tokens[i], ref, atol=2e-5)
        np.testing.assert_allclose(r.means[i], ref[1:-1].mean(0) if n_special else ref.mean(0), atol=2e-5)
    if n_special:
        assert lm.tokenizer.cls_token_id not in np.concatenate(r.token_ids)


def test_token_stream_recipe(tiny):
    lm = tiny["bert"]
    lines = ["The cat sat on the mat .", "", "A second line of text here ."] * 7
    ids = token_stream_ids(lm.tokenizer, lines)
    assert ids.count(lm.tokenizer.cls_token_id) == len(lines)  # [CLS]/[SEP] per line, blank lines too
    ts = embed_token_stream(lm, lines, window=16, progress=False)
    n = (len(ids) // 16) * 16
    assert ts.layers[0].shape == (n, 32) and len(ts.tokens) == n and ts.token_ids.tolist() == ids[:n]
    assert ts.window[16] == 1 and ts.position[17] == 1
    with torch.inference_mode():  # code layer l = hidden_states[l + 1], no attention mask
        hs = lm.model(input_ids=torch.tensor([ids[16:32]]), output_hidden_states=True).hidden_states
    np.testing.assert_allclose(ts.layers[0][16:32], hs[1][0].numpy(), atol=2e-5)
    np.testing.assert_allclose(ts.layers[1][16:32], hs[2][0].numpy(), atol=2e-5)
    bare = embed_token_stream(lm, lines, window=16, layers=[1], add_special_tokens=False, progress=False)
    assert lm.tokenizer.cls_token_id not in bare.token_ids and list(bare.layers) == [1]


def test_token_stream_shares_the_shards_of_common_windows(tiny, tmp_path, monkeypatch):
    """A corpus's first lines and the same corpus at more lines (the IsoScore and manifolds chapters) share the
    cached shards of their common windows: the longer stream computes only its other shards, and its vectors
    equal an uncached run's bit for bit."""
    lm = tiny["bert"]
    lines = [f"Line {k} of a corpus , with words ." for k in range(40)]
    ref = embed_token_stream(lm, lines, window=16, shard_size=2, progress=False)
    short = embed_token_stream(lm, lines[:15], window=16, shard_size=2, cache_dir=tmp_path, progress=False)
    n_short = len(short.token_ids) // 16
    real, windows = text.window_hidden_states, []
    monkeypatch.setattr(
        text, "window_hidden_states", lambda m, w, *a, **k: windows.append(len(w)) or real(m, w, *a, **k)
    )
    out = embed_token_stream(lm, lines, window=16, shard_size=2, cache_dir=tmp_path, progress=False)
    n_long = len(out.token_ids) // 16
    assert n_short >= 4 and sum(windows) == n_long - (n_short // 2) * 2  # the short stream's full shards reused
    for layer, X in ref.layers.items():
        np.testing.assert_array_equal(out.layers[layer], X)
        np.testing.assert_array_equal(short.layers[layer], X[: len(short.token_ids)])


def test_resume_after_kill_gives_identical_output(tiny, tmp_path, monkeypatch):
    lm = tiny["protbert"]
    seqs = [s * (k % 3 + 1) for k, s in enumerate(SEQS * 3)]  # 15 sequences -> 5 shards of 3
    ref = embed_proteins(lm, seqs, layers=(-1, 1), shard_size=3, progress=False)
    real, calls = proteins._hf_protein_shard, []

    def shard(*args, die_at=None):
        calls.append(len(calls))
        if len(calls) == die_at:
            raise KeyboardInterrupt("killed while computing the third shard")
        return real(*args)

    monkeypatch.setattr(proteins, "_hf_protein_shard", lambda *a: shard(*a, die_at=3))
    with pytest.raises(KeyboardInterrupt):
        embed_proteins(lm, seqs, layers=(-1, 1), shard_size=3, cache_dir=tmp_path, progress=False)
    (key,) = [p for p in tmp_path.iterdir()]
    assert sorted(p.name for p in key.glob("shard-*.npz")) == ["shard-00000.npz", "shard-00001.npz"]
    assert not list(key.glob("*.tmp"))
    calls.clear()
    monkeypatch.setattr(proteins, "_hf_protein_shard", lambda *a: shard(*a))
    out = embed_proteins(lm, seqs, layers=(-1, 1), shard_size=3, cache_dir=tmp_path, progress=False)
    assert len(calls) == 3  # only the missing shards 2, 3, 4 were computed
    for l in (-1, 1):
        np.testing.assert_array_equal(out.pooled[l], ref.pooled[l])
    again = embed_proteins(lm, seqs, layers=(-1, 1), shard_size=3, cache_dir=tmp_path, progress=False)
    assert len(calls) == 3
    np.testing.assert_array_equal(again.pooled[-1], ref.pooled[-1])


# ----------------------------------------------------------------------- real packaged MiniLM


@pytest.fixture(scope="module")
def minilm():
    from replib.models import load_model

    return load_model("all-MiniLM-L6-v2", device="cpu")


def test_sbert_mean_pooling_matches_sentence_transformers(minilm):
    st = pytest.importorskip("sentence_transformers")
    from replib.models import minilm_dir

    texts = ["A man is playing a guitar.", "Isotropy of contextual embedding spaces.", "ok"]
    ours = embed_sentences(minilm, texts, drop_special=False, progress=False).means.astype(np.float64)
    ref = st.SentenceTransformer(str(minilm_dir()), device="cpu").encode(texts, normalize_embeddings=False)
    # the packaged pipeline ends with a Normalize module: compare after normalising ours
    ours /= np.linalg.norm(ours, axis=1, keepdims=True)
    np.testing.assert_allclose(ours, ref, atol=1e-5)


def _read_stsb_test():
    from replib.data import load_stsb  # through the data layer and its mirror

    df = load_stsb("test")
    return list(df["sentence1"]), list(df["sentence2"]), np.asarray(df["score"], float)


@pytest.mark.slow
def test_minilm_stsb_spearman(minilm):
    from scipy.stats import spearmanr

    s1, s2, gold = _read_stsb_test()
    assert len(gold) == 1379
    e = embed_sentences(minilm, s1 + s2, drop_special=False, progress=False).means.astype(np.float64)
    a, b = e[: len(s1)], e[len(s1) :]
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    rho = spearmanr(cos, gold).statistic
    print(f"MiniLM STS-B test Spearman = {rho:.4f}")
    # reference: the published score of all-MiniLM-L6-v2 on STS-B test (MTEB STSBenchmark, cosine
    # Spearman x 100 = 82.03), independent of this code
    assert abs(rho - 0.8203) < 0.005


def test_tiny_models_temporary_folder_is_removed_at_exit(tmp_path):
    """Without REPLIB_CACHE_DIR the tiny models live in a folder of the process's own, removed when it exits
    (test runs had left hundreds in /tmp), and not by a forked child that exits first."""
    import os
    import subprocess
    import sys

    code = (
        "import os, sys\n"
        "from replib.models import tiny\n"
        "d = tiny._root(); tiny._protbert_tok()\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    sys.exit(0)\n"  # the child runs atexit handlers: the folder must survive it
        "os.waitpid(pid, 0)\n"
        "print(d, (d / 'protbert' / 'vocab.txt').exists())\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "REPLIB_CACHE_DIR"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    folder, survived_child = out.stdout.split()
    assert survived_child == "True"
    assert folder.startswith(tempfile_prefix()) and not os.path.exists(folder)


def tempfile_prefix() -> str:
    import os
    import tempfile

    return os.path.join(tempfile.gettempdir(), "replib-tiny-")

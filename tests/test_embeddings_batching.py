"""The extractors' batching and precision (replib.embeddings.batching): length-sorted batches over the whole
input for proteins, the padding they compute, and the forward's precision as an opt-in, keyed choice."""

import warnings

import numpy as np
import pytest
import torch

from replib._io import write_csv_atomic
from replib.embeddings import embed_proteins, embed_sentences, model_identity
from replib.embeddings import proteins as proteins_module
from replib.embeddings.batching import _autocast, padded_tokens
from replib.models import tiny_model

RESIDUES = "ACDEFGHIKLMNPQRSTVWY"


def _proteins(n: int, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    return ["".join(rng.choice(list(RESIDUES), size=int(rng.integers(3, 60)))) for _ in range(n)]


def test_padded_tokens_counts_every_batch_padding():
    # budget 20: lengths sorted [1, 2, 3, 10]; [1, 2, 3] fits (3 x 3 = 9), [1, 2, 3, 10] would not (4 x 10 = 40)
    assert padded_tokens([10, 1, 3, 2], 20) == 3 * 3 + 1 * 10
    # shards of 2 in this order: [10, 1] -> 2 x 10 = 20 fits; [3, 2] -> 2 x 3
    assert padded_tokens([10, 1, 3, 2], 20, shard_size=2) == 20 + 6
    assert padded_tokens([], 20) == 0


def test_embed_proteins_sorts_by_length_over_the_whole_input(monkeypatch):
    lm = tiny_model("esm")
    seqs = _proteins(11)
    seen = []
    real = proteins_module._hf_protein_shard

    def spy(lm_, part, *args):
        seen.append([len(s) for s in part])
        return real(lm_, part, *args)

    monkeypatch.setattr(proteins_module, "_hf_protein_shard", spy)
    out = embed_proteins(lm, seqs, layers=(-1,), shard_size=3, return_residues=True, progress=False)
    flat = [n for shard in seen for n in shard]
    assert flat == sorted(len(s) for s in seqs) and [len(s) for s in seen] == [3, 3, 3, 2]
    # results come back in input order: lengths, residue rows and their means
    assert out.lengths.tolist() == [len(s) for s in seqs] and out.index.tolist() == list(range(len(seqs)))
    for i, s in enumerate(seqs):
        assert out.residues[-1][i].shape[0] == len(s)
        np.testing.assert_allclose(out.pooled[-1][i], out.residues[-1][i].astype(np.float64).mean(0), atol=1e-6)
    monkeypatch.setattr(proteins_module, "_hf_protein_shard", real)
    alone = [embed_proteins(lm, [s], layers=(-1,), progress=False).pooled[-1][0] for s in seqs]
    np.testing.assert_allclose(out.pooled[-1], np.stack(alone), atol=1e-5)  # batching moves only rounding


def test_precision_is_opt_in_validated_and_part_of_the_cache_key(tmp_path):
    lm = tiny_model("bert")
    texts = ["a man plays a guitar", "the cat sat", "hello world hello tokens and more tokens"]
    default = embed_sentences(lm, texts, progress=False)
    fp32 = embed_sentences(lm, texts, precision="fp32", progress=False)
    np.testing.assert_array_equal(default.means, fp32.means)
    bf16 = embed_sentences(lm, texts, precision="bf16", progress=False)
    diff = np.abs(bf16.means - fp32.means).max()
    assert 0 < diff < 0.1 and bf16.means.dtype == np.float32  # bf16 products: close, not equal
    assert model_identity(lm)["autocast"] is False and model_identity(lm, "bf16")["autocast"] == "bf16"
    embed_sentences(lm, texts, cache_dir=tmp_path, progress=False)
    embed_sentences(lm, texts, precision="bf16", cache_dir=tmp_path, progress=False)
    assert len(list(tmp_path.iterdir())) == 2  # never one shard folder for two precisions
    with pytest.raises(ValueError, match="precision must be one of"):
        embed_sentences(lm, texts, precision="half", progress=False)
    with pytest.raises(ValueError, match="precision must be one of"):
        embed_proteins(tiny_model("esm"), ["MKT"], precision="float16", progress=False)


def test_autocast_follows_the_device_type():
    """The CUDA path builds CUDA autocast with the dtype asked for (unmeasured here: no GPU; torch disables it
    with a warning when CUDA is absent)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cuda = _autocast("cuda:0", "fp16")
    cpu = _autocast("cpu", "bf16")
    assert (cuda.device, cuda.fast_dtype) == ("cuda", torch.float16)
    assert (cpu.device, cpu.fast_dtype) == ("cpu", torch.bfloat16)
    assert not isinstance(_autocast("cpu", "fp32"), torch.autocast)


def test_sentence_layers_from_one_forward_equal_one_call_per_layer():
    from replib.embeddings import embed_sentence_layers

    lm = tiny_model("bert")
    texts = ["a man plays a guitar", "the cat sat", "hello world hello tokens and more tokens", "x"]
    layers = [0, 1, -1]
    both = embed_sentence_layers(lm, texts, layers, batch_tokens=16)
    for l in layers:
        one = embed_sentences(lm, texts, layer=l, batch_tokens=16, progress=False)
        np.testing.assert_array_equal(both[l].means, one.means)
        for a, b in zip(both[l].tokens, one.tokens):
            np.testing.assert_array_equal(a, b)
    calls = []
    forward = lm.model.forward
    lm.model.forward = lambda *a, **k: calls.append(1) or forward(*a, **k)
    embed_sentence_layers(lm, texts, layers, batch_tokens=10**6, progress=False)
    assert len(calls) == 1  # one batch, one forward for all three layers
    with pytest.raises(ValueError, match="distinct"):
        embed_sentence_layers(lm, texts, [1, 1])


def test_the_cpu_forward_takes_bf16_only_with_native_instructions_and_a_measured_small_shift():
    from bookkit.run.run_report import environment_info
    from replib.profiles import MAX_SHIFT_OF_BAND, choose_precision, cpu_flags

    small = MAX_SHIFT_OF_BAND / 4
    assert choose_precision({"avx", "avx2", "fma"}, small) == "fp32"  # emulated bf16: slower than float32
    assert choose_precision({"avx2", "avx512_bf16"}, None) == "fp32"  # native, but its effect not measured
    assert choose_precision({"avx2", "avx512_bf16"}, small) == "bf16"
    assert choose_precision({"amx_bf16"}, small) == "bf16"
    assert choose_precision({"avx512_bf16"}, MAX_SHIFT_OF_BAND) == "fp32"  # moves the statistics too far
    env = environment_info()  # the report records the CPU's flags and whether they hold native bf16
    assert env["native_bf16"] == (choose_precision(cpu_flags(), small) == "bf16")
    assert set(env["cpu_flags"]) <= cpu_flags()


def test_a_chapter_takes_bf16_offline_only_where_its_measured_shift_is_a_tenth_of_its_bands(tmp_path, monkeypatch):
    from replib.profiles import PRECISION_ENV, SHIFT_COLUMNS, chapter_precision, measured_shift

    path = tmp_path / "shift.csv"
    rows = [dict.fromkeys(SHIFT_COLUMNS, "") | {"chapter": c, "key": k, "shift_of_band": v}
            for c, k, v in (("a", "x", "0.01"), ("a", "y", "0.04"), ("b", "x", "0.3"))]  # fmt: skip
    write_csv_atomic(path, rows, SHIFT_COLUMNS)
    monkeypatch.delenv(PRECISION_ENV, raising=False)
    monkeypatch.setattr("replib.profiles.torch_device", lambda: "cpu")
    native, emulated = {"avx512_bf16"}, {"avx2"}
    assert measured_shift("a", path) == 0.04 and measured_shift("c", path) is None
    assert chapter_precision("a", "offline", native, path) == "bf16"
    assert chapter_precision("b", "offline", native, path) == "fp32"  # one statistic moves too far
    assert chapter_precision("c", "offline", native, path) == "fp32"  # never measured
    assert chapter_precision("a", "offline", emulated, path) == "fp32"
    assert chapter_precision("a", "smoke", native, path) == chapter_precision("a", "paper", native, path) == "fp32"
    monkeypatch.setattr("replib.profiles.torch_device", lambda: "cuda")
    assert chapter_precision("a", "offline", native, path) == "fp32"  # a GPU run: not what was measured
    monkeypatch.setenv(PRECISION_ENV, "bf16")
    assert chapter_precision("b", "smoke", emulated, path) == "bf16"  # asked for: taken as it is
    monkeypatch.setenv(PRECISION_ENV, "half")
    with pytest.raises(ValueError, match="precision must be one of"):
        chapter_precision("a", "offline", native, path)


def test_a_model_carries_the_precision_its_extractors_use_by_default(tmp_path):
    from replib.embeddings.batching import forward_precision
    from replib.models import resolve_model

    lm = tiny_model("bert")
    texts = ["a man plays a guitar", "the cat sat"]
    half = resolve_model(lm, precision="bf16")
    assert (lm.precision, half.precision) == ("fp32", "bf16") and resolve_model(lm) is lm  # a copy, not a change
    assert forward_precision(half) == "bf16" and forward_precision(half, "fp32") == "fp32"
    assert model_identity(half)["autocast"] == "bf16" and model_identity(lm)["autocast"] is False
    np.testing.assert_array_equal(
        embed_sentences(half, texts, progress=False).means,
        embed_sentences(lm, texts, precision="bf16", progress=False).means,
    )
    assert resolve_model("tiny-bert", precision="bf16").precision == "bf16"
    with pytest.raises(ValueError, match="precision must be one of"):
        resolve_model("tiny-bert", precision="half")


@pytest.mark.parametrize("family", ["esm", "proteinbert"])
def test_a_protein_model_carries_its_precision_into_every_path(family):
    from replib.models import resolve_model

    lm = tiny_model(family)
    half = resolve_model(lm, precision="bf16")
    seqs = ["MKTAYIAK", "MKV"]
    fp32 = embed_proteins(lm, seqs, progress=False)
    bf16 = embed_proteins(half, seqs, progress=False)
    asked = embed_proteins(lm, seqs, precision="bf16", progress=False)
    for layer in fp32.pooled:
        np.testing.assert_array_equal(bf16.pooled[layer], asked.pooled[layer])
    assert any(not np.array_equal(fp32.pooled[k], bf16.pooled[k]) for k in fp32.pooled)

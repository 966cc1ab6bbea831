"""ProteinBERT PyTorch port vs the reference Keras model (TF 2.21 / Keras 3.15, random seeded weights)."""

from pathlib import Path

import numpy as np
import pytest
import torch

from replib.models.proteinbert import N_WEIGHTS, ProteinBERT, random_weights, tokenize

FIXTURE = Path(__file__).parent / "fixtures" / "proteinbert_keras_random.npz"


@pytest.fixture(scope="module")
def keras_ref():
    if not FIXTURE.exists():
        pytest.skip("fixture missing: run tools/make_proteinbert_fixture.py in a TF venv")
    return dict(np.load(FIXTURE))


@pytest.fixture(scope="module")
def port_out(keras_ref):
    m = ProteinBERT()
    w = random_weights(m, int(keras_ref["seed"]))
    # same arrays as the Keras side generated (per-array sums stored in the fixture)
    np.testing.assert_allclose([x.astype(np.float64).sum() for x in w], keras_ref["weight_sums"], rtol=0, atol=0)
    m.load_keras_weights(w).eval()
    with torch.inference_mode():
        return m(
            torch.from_numpy(keras_ref["input_ids"]).long(),
            torch.from_numpy(keras_ref["annotations"]),
            return_hidden=True,
        )


def test_parameter_count_and_order():
    m = ProteinBERT()
    assert len(m.ordered_parameters()) == N_WEIGHTS == 145
    assert sum(p.numel() for p in m.ordered_parameters()) == 15_981_321
    names = [n for n, _ in m.ordered_named_parameters()]
    assert names[:3] == ["global_input_kernel", "global_input_bias", "embedding"]
    assert names[3] == "block1.global_to_seq_kernel" and names[-1] == "output_annotations_bias"


def test_keras_variable_names_match_order(keras_ref):
    # Keras 3 paths, e.g. 'narrow-conv-block1/kernel': our order maps onto the same layers
    keras_names = [str(n) for n in keras_ref["weight_names"]]
    ours = [n for n, _ in ProteinBERT().ordered_named_parameters()]
    pairs = {
        "global_to_seq": "global-to-seq-dense",
        "narrow_conv": "narrow-conv",
        "wide_conv": "wide-conv",
        "seq_norm1": "seq-merge1-norm",
        "seq_dense": "seq-dense",
        "seq_norm2": "seq-merge2-norm",
        "global_dense1": "global-dense1",
        "Wq": "global-attention",
        "Wk": "global-attention",
        "Wv": "global-attention",
        "global_norm1": "global-merge1-norm",
        "global_dense2": "global-dense2",
        "global_norm2": "global-merge2-norm",
    }
    for o, k in zip(ours, keras_names):
        if o.startswith("block"):
            blk, var = o.split(".")
            stem = next(v for key, v in pairs.items() if var.startswith(key))
            assert f"{stem}-{blk}" in k, (o, k)


@pytest.mark.parametrize("block", range(1, 7))
def test_port_matches_keras_every_block(keras_ref, port_out, block):
    np.testing.assert_allclose(
        port_out["local_hidden"][block].numpy(), keras_ref[f"seq-merge2-norm-block{block}"], atol=3e-5, rtol=0
    )
    np.testing.assert_allclose(
        port_out["global_hidden"][block].numpy(), keras_ref[f"global-merge2-norm-block{block}"], atol=3e-5, rtol=0
    )


def test_port_matches_keras_heads(keras_ref, port_out):
    assert port_out["global"].shape == (3, 512) and port_out["local"].shape == (3, 32, 128)
    np.testing.assert_allclose(port_out["output_seq"].numpy(), keras_ref["output-seq"], atol=1e-5, rtol=0)
    np.testing.assert_allclose(
        port_out["output_annotations"].numpy(), keras_ref["output-annotations"], atol=1e-5, rtol=0
    )


def test_wrong_weight_order_is_caught_by_shapes_or_values(keras_ref, port_out):
    m = ProteinBERT()
    w = random_weights(m, int(keras_ref["seed"]))
    with pytest.raises(ValueError, match="expected 145"):
        m.load_keras_weights(w[:-1])
    w[0], w[2] = w[2], w[0]
    with pytest.raises(ValueError, match="shape"):
        m.load_keras_weights(w)


def test_tokenize_upstream_layout():
    ids = tokenize(["ACz", "B"], seq_len=6)
    assert ids.tolist() == [[23, 0, 1, 22, 24, 25], [23, 22, 24, 25, 25, 25]]  # z -> Z, not in the alphabet -> <OTHER>
    with pytest.raises(ValueError, match="seq_len - 2"):
        tokenize(["ACDEF"], seq_len=6)

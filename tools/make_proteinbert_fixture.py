"""Build the reference Keras ProteinBERT on seeded random weights and dump a small test fixture.

Run in a SEPARATE virtualenv with TensorFlow and the upstream package (keep TF out of the main venv)::

    python -m venv /tmp/tfvenv
    /tmp/tfvenv/bin/pip install tensorflow-cpu protein-bert==1.0.1
    /tmp/tfvenv/bin/python tools/make_proteinbert_fixture.py tests/fixtures/proteinbert_keras_random.npz

The weights are NOT stored (64 MB): both this script and the test generate them from ``SEED`` with
the same numpy recipe (``weights_from_seed``), in Keras ``get_weights()`` order; the fixture stores
per-array sums to prove the two sides generated identical arrays. Stored: inputs (token ids and
annotations), the final local/global outputs, every block's ``seq-merge2-norm`` /
``global-merge2-norm`` output and the two heads, at ``SEQ_LEN`` = 32.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np

SEED = 1234
SEQ_LEN = 32
N_ANNOTATIONS = 8943
VOCAB = 26


def weights_from_seed(shapes, is_gamma, seed=SEED):
    """Same recipe as ``replib.models.proteinbert.weights_from_seed``."""
    rng = np.random.default_rng(seed)
    out = []
    for shape, gamma in zip(shapes, is_gamma):
        if len(shape) == 1:
            w = rng.normal(0.0, 0.1, size=shape) + (1.0 if gamma else 0.0)
        else:
            a = np.sqrt(3.0 / int(np.prod(shape[:-1])))
            w = rng.uniform(-a, a, size=shape)
        out.append(w.astype(np.float32))
    return out


def main(out_path):
    import tensorflow as tf
    from proteinbert.conv_and_global_attention_model import create_model
    from tensorflow import keras

    tf.random.set_seed(0)
    model = create_model(SEQ_LEN, VOCAB, N_ANNOTATIONS)
    variables = model.weights
    names = [getattr(v, "path", v.name) for v in variables]
    shapes = [tuple(v.shape) for v in variables]
    is_gamma = [n.split("/")[-1].split(":")[0] == "gamma" for n in names]
    weights = weights_from_seed(shapes, is_gamma)
    model.set_weights(weights)

    rng = np.random.default_rng(SEED + 1)
    # three sequences of different lengths, <START> seq <END> <PAD>..., ids as upstream tokenization
    start, end, pad = 23, 24, 25
    ids = np.full((3, SEQ_LEN), pad, dtype=np.int32)
    for i, n in enumerate([30, 17, 5]):
        ids[i, 0] = start
        ids[i, 1 : n + 1] = rng.integers(0, 23, size=n)
        ids[i, n + 1] = end
    ann = np.zeros((3, N_ANNOTATIONS), dtype=np.float32)
    ann[1, rng.choice(N_ANNOTATIONS, 40, replace=False)] = 1.0  # one row with annotations on

    layer_names = []
    for b in range(1, 7):
        layer_names += [f"seq-merge2-norm-block{b}", f"global-merge2-norm-block{b}"]
    outs = [model.get_layer(n).output for n in layer_names] + list(model.outputs)
    probe = keras.models.Model(inputs=model.inputs, outputs=outs)
    res = probe.predict([ids, ann], verbose=0)
    data = {
        "seed": np.int64(SEED),
        "seq_len": np.int64(SEQ_LEN),
        "input_ids": ids,
        "annotations": ann,
        "weight_sums": np.array([w.astype(np.float64).sum() for w in weights]),
        "weight_names": np.array(names),
        "tf_version": np.array(tf.__version__),
        "keras_version": np.array(keras.__version__),
    }
    for n, r in zip(layer_names, res[: len(layer_names)]):
        data[n] = r.astype(np.float32)
    data["output-seq"] = res[-2].astype(np.float32)
    data["output-annotations"] = res[-1].astype(np.float32)
    np.savez_compressed(out_path, **data)
    print(
        f"wrote {out_path}: {len(weights)} weight arrays, {sum(w.size for w in weights)} params, "
        f"TF {tf.__version__}, Keras {keras.__version__}"
    )


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/proteinbert_keras_random.npz")

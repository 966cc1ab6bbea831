"""The metrics without the heavy stack, and LID at extreme scales (issues 25 and 28, item 8)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from replib.metrics.lid import lid_mle

ROOT = Path(__file__).resolve().parents[1]
#: what the metrics must never need: the deep-learning stack and the book kit's tools
BLOCKED = ["torch", "transformers", "papermill", "jupytext", "selenium", "jupyter_book", "myst_nb", "sphinx"]

_CHILD = textwrap.dedent(
    """
    import json, sys
    BLOCKED = set(json.loads(sys.argv[1]))

    class Refuse:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ImportError(f"{name} is blocked in this test")
            return None

    sys.meta_path.insert(0, Refuse())
    import numpy as np
    import replib.metrics
    X = np.load(sys.argv[2])
    value = replib.metrics.isoscore(X)
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
    print(json.dumps({"isoscore": value, "loaded": loaded}))
    """
)


def test_metrics_import_and_compute_isoscore_with_the_heavy_stack_blocked(tmp_path):
    """``import replib.metrics`` and IsoScore in a process where importing torch, transformers, papermill,
    jupytext, selenium or jupyter-book raises: the value equals the IsoScore package's."""
    IsoScorePkg = pytest.importorskip("IsoScore.IsoScore", reason="IsoScore package (the oracle) not installed")
    X = np.random.default_rng(7).normal(size=(200, 6)) * np.linspace(0.5, 2.0, 6)
    np.save(tmp_path / "X.npy", X)
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps(BLOCKED), str(tmp_path / "X.npy")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["loaded"] == []
    assert got["isoscore"] == pytest.approx(float(IsoScorePkg.IsoScore(X)), abs=1e-6)


def test_the_block_is_real(tmp_path):
    """The same child with ``numpy`` blocked fails: the hook does block (the test above can fail)."""
    np.save(tmp_path / "X.npy", np.eye(3))
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps(["numpy"]), str(tmp_path / "X.npy")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    assert out.returncode != 0 and "numpy is blocked" in out.stderr


# ------------------------------------------------------------------------------------------ LID scale
@pytest.fixture(scope="module")
def cloud():
    """A 5-dimensional manifold in 12 dimensions, plus a little noise."""
    rng = np.random.default_rng(3)
    return rng.normal(size=(400, 5)) @ rng.normal(size=(5, 12)) + 0.01 * rng.normal(size=(400, 12))


@pytest.mark.parametrize("scale", [1e-30, 1e30, 1e-200, 1e200])
@pytest.mark.parametrize("backend", ["sklearn", "faiss", "torch"])
@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
@pytest.mark.parametrize("variant", ["cai", "levina_bickel"])
@pytest.mark.probe(
    "LID at scales 1e-30 and 1e+30; a constant point cloud",
    "the unscaled value; a clear error for the constant cloud",
)
def test_lid_is_scale_invariant_at_extreme_scales(cloud, scale, backend, metric, variant):
    if backend in ("faiss", "torch"):  # torch: float32 candidates, on the CPU here (the GPU path is the same code)
        pytest.importorskip(backend)
    ref = lid_mle(cloud, k=20, metric=metric, variant=variant, backend=backend)
    got = lid_mle(cloud * scale, k=20, metric=metric, variant=variant, backend=backend)
    assert got.n_nonfinite == 0
    np.testing.assert_allclose(got.pointwise, ref.pointwise, rtol=1e-9)


def test_lid_at_1e_minus_30_equals_scikit_dimension_on_the_unscaled_cloud(cloud):
    """Independent oracle: skdim's MLE pointwise dimension (Levina-Bickel) of the unscaled cloud."""
    skdim = pytest.importorskip("skdim")
    theirs = skdim.id.MLE().fit(cloud, n_neighbors=20).dimension_pw_
    ours = lid_mle(cloud * 1e-30, k=20, variant="levina_bickel", backend="auto").pointwise
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)


@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
@pytest.mark.parametrize("value", [0.0, 1.0, -3e-30])
def test_lid_of_a_constant_cloud_is_a_clear_error(metric, value):
    if metric == "cosine" and value == 0.0:
        with pytest.raises(ValueError, match="all-zero rows"):  # a zero row has no cosine
            lid_mle(np.full((50, 4), value), k=10, metric=metric)
        return
    with pytest.raises(ValueError, match="all 50 points are the same point"):
        lid_mle(np.full((50, 4), value), k=10, metric=metric)


def test_lid_of_parallel_rows_under_cosine_is_a_clear_error():
    X = np.outer(2.0 ** np.arange(30), [1.0, 2.0, 3.0])  # one direction, 30 lengths (exactly one unit row)
    with pytest.raises(ValueError, match="after unit-normalising"):
        lid_mle(X, k=10, metric="cosine")

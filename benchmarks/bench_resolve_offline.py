"""Time to failure of an uncached Hub model offline (issue 14: it used to take ~30 s of network retries).

Run: ``PYTHONPATH=. python benchmarks/bench_resolve_offline.py`` -- with ``HF_HUB_OFFLINE=1`` (no network call
is made; ``tests/test_models_resolve.py`` asserts that) and without it (the Hub is probed once, under a second).
Also times resolving the packaged MiniLM from a plain folder (sha256 of the weights included).
"""

import os
import shutil
import tempfile
import time

from replib.models import ModelUnavailableError, minilm_dir, resolve_model


def time_failure(spec: str, offline: bool) -> float:
    if offline:
        os.environ["HF_HUB_OFFLINE"] = "1"
    else:
        os.environ.pop("HF_HUB_OFFLINE", None)
    t0 = time.perf_counter()
    try:
        resolve_model(spec, cache_dir=tempfile.mkdtemp())
    except ModelUnavailableError as exc:
        dt = time.perf_counter() - t0
        print(f"{spec} (HF_HUB_OFFLINE={'1' if offline else 'unset'}): failed in {dt:.3f} s: {str(exc)[:100]}...")
        return dt
    raise SystemExit(f"{spec} unexpectedly loaded")


def main():
    for offline in (True, False):
        time_failure("someone/not-a-cached-model", offline)
        time_failure("bert-base-uncased", offline)
    folder = os.path.join(tempfile.mkdtemp(), "my-minilm")
    shutil.copytree(minilm_dir(), folder)
    t0 = time.perf_counter()
    lm = resolve_model(folder, device="cpu")
    print(
        f"{folder}: resolved in {time.perf_counter() - t0:.2f} s (recipe {lm.spec.recipe}, "
        f"sha256 {lm.weights_sha256[:12]}...)"
    )


if __name__ == "__main__":
    main()

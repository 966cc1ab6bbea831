"""The IsoScore chapter's parameters per profile (read through :func:`replib.config.chapter_config`).

The synthetic tests take seconds at every profile; ``smoke`` only uses coarser sweeps. The contextual part
embeds WikiText-2 with a tiny random BERT (``smoke``), the packaged all-MiniLM-L6-v2 on the test split
(``offline``) or the four models of the IsoScore authors' per-layer results on 4,400 lines of the train
split (``paper``, sized by the precision rule), whose values are then recorded per layer (``paper_layer_keys``).

Parts (:mod:`replib.parts`): one per model (its contextual layers, ``paper_<model>_layer*``) and ``rest`` (the
synthetic tests and the statistics over every model, from the embeddings the model parts cached).
"""

from __future__ import annotations

from ...chapter import Chapter
from ...models import ModelRef
from ...parts import Budget, model_parts, rest_part
from ...schema import closed_object

#: the four language models of the authors' released per-layer results, and their short names in record keys
PAPER_LMS = {"bert-base-uncased": "bert", "distilbert-base-uncased": "distilbert", "openai-gpt": "gpt", "gpt2": "gpt2"}

SCHEMA = closed_object(
    {
        "models": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        "sweep": {"type": "integer", "minimum": 2, "description": "points of the meatball and k-of-512 sweeps"},
        "n_rot": {"type": "integer", "minimum": 10, "description": "points of the rotation test's Gaussian"},
        "split": {"enum": ["train", "valid", "test"], "description": "WikiText-2 split embedded"},
        "n_lines": {"type": "integer", "minimum": 1},
        "window": {"type": "integer", "minimum": 8, "description": "tokens per window of the token stream"},
        "paper_layer_keys": {"type": "boolean", "description": "record every layer of the paper's four models"},
        "stream": {"type": "boolean", "description": "fold every token into per-layer accumulators (no stream held)"},
        "package_sample": {
            "type": "integer",
            "minimum": 2,
            "description": "tokens per layer of the first model kept for the package check when streaming",
        },
    }
)

# fmt: off
TABLE = {
    "smoke": dict(models=["tiny-bert"], sweep=6, n_rot=10_000, split="test", n_lines=120, window=64,
                  paper_layer_keys=False, stream=False, package_sample=20_000),
    "offline": dict(models=["all-MiniLM-L6-v2"], sweep=21, n_rot=10_000, split="test", n_lines=600, window=512,
                    paper_layer_keys=False, stream=False, package_sample=20_000),
    # n_lines: sized by the precision rule (replib.precision; size, spread and reason in book/sampling_plan.csv)
    "paper": dict(models=list(PAPER_LMS), sweep=21, n_rot=10_000, split="train", n_lines=4400, window=512,
                  paper_layer_keys=True, stream=True, package_sample=20_000),
}
# fmt: on


#: the chapter's steps (cells marked ``# step: NAME``)
STEPS = ("synthetic", "contextual")


def parts(profile: str, params: dict) -> list:
    """One part per model (WikiText-2 through it, every layer scored) and ``rest``."""
    labels = {m: ModelRef.parse(m).slug for m in params["models"]}
    each = model_parts(
        CHAPTER.name,
        params["models"],
        labels,
        fraction={"*": 0.8 / len(params["models"])},
        budget={"*": Budget(t4_hours=0.25, peak_rss_gb=10.0, cache_gb=9.0)},
        steps=("contextual",),
        records=lambda label: (f"paper_{label}_layer*",),
    )
    return [*each, rest_part(CHAPTER.name, each, Budget(t4_hours=0.5, peak_rss_gb=12.0, cache_gb=10.0))]


CHAPTER = Chapter(
    "isoscore",
    ("rudman2022isoscore",),
    TABLE,
    SCHEMA,
    STEPS,
    parts,
    rehearsal={"scale": ("n_lines",), "set": {"split": "test"}},
)

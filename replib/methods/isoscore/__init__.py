"""IsoScore (Rudman et al. 2022): the chapter's property tests and the per-layer scores of contextual models.

:mod:`.properties` holds the synthetic tests (agreement with the authors' package, rotation, mean shift
and scale, the fraction of dimensions used, the skewered meatball, fewer points than dimensions,
streaming), :mod:`.paper_checks` the spreads and per-layer values the checks of the paper's numbers need,
:mod:`.contextual` the per-layer scores of language models on WikiText-2 and :mod:`.config`
the sizes per profile :cite:`rudman2022isoscore`.
"""

from __future__ import annotations

from .config import CHAPTER, PAPER_LMS
from .contextual import (
    ContextualLayers,
    contextual_layers,
    contextual_records,
    paper_layer_records,
)
from .paper_checks import (
    contextual_layer_records,
    cosine_rank_records,
    paper_layer_spread_records,
    rotation_spread_records,
)
from .properties import (
    agreement_clouds,
    cosine_estimate_draws,
    deflation,
    fraction_of_dimensions,
    mean_and_scale_records,
    orientation_check,
    package_agreement,
    rotation_records,
    rotation_table,
    rotation_versions,
    skewered_meatball,
    streaming_difference,
)

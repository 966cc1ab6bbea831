"""Isotropy metrics. Inputs are point clouds of shape ``(n_samples, n_features)``."""

from .cosine import avg_pairwise_cosine
from .isoscore import effective_dimensions, isoscore, isoscore_from_covariance, isoscore_star
from .partition import PartitionIsotropy, partition_isotropy, rudman_partition_score, rudman_partition_score_gaussian
from .rogue import RogueDimensions, cosine_contributions, rogue_dimensions
from .streaming import CovarianceAccumulator, LayerAccumulator
from .types import s_inter, s_intra, type_codes, type_frequencies

"""S_inter and S_intra live in :mod:`replib.metrics.types` (metrics, not methods); re-exported here."""

from ...metrics.types import _check_xt, _per_type_cosines, _s_inter, s_inter, s_intra, type_codes, type_frequencies  # noqa: F401

"""Optimisers of acquisition functions on mixed spaces."""
from .mixed import AcquisitionResult, MixedAcquisitionOptimizer, SearchSpaceExhaustedError
from .trust_region import TrustRegion

__all__ = ["MixedAcquisitionOptimizer", "AcquisitionResult", "SearchSpaceExhaustedError", "TrustRegion"]

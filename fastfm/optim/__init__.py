"""Optimisers of acquisition functions on mixed spaces."""
from .mixed import AcquisitionResult, MixedAcquisitionOptimizer, SearchSpaceExhaustedError

__all__ = ["MixedAcquisitionOptimizer", "AcquisitionResult", "SearchSpaceExhaustedError"]

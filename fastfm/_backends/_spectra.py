"""What the backends derive from a space's ``PackedSpectra``, and the per-space cache for it (a leaf module:
the backend registry, the backends and the kernels import it)."""
import numpy as np

__all__ = ["terms_per_pair", "cached_per_spectra"]


def terms_per_variable(spectra):
    """Eigenvalue-group terms of each variable's factor in one FM pair: 2 for a complete graph, G_p otherwise."""
    return np.where(spectra.is_complete, 2, np.diff(spectra.group_offsets))


def terms_per_pair(spectra):
    """Eigenvalue-group terms one FM pair costs (every variable's factor), plus one."""
    return int(np.sum(terms_per_variable(spectra))) + 1


def cached_per_spectra(cache, spectra, build):
    """``build()``, kept in the WeakKeyDictionary ``cache`` under ``spectra`` (not kept when it cannot be a weak
    key).  Spaces cache their PackedSpectra, so what is derived from them is computed once per space."""
    try:
        return cache[spectra]
    except (KeyError, TypeError):
        pass
    value = build()
    try:
        cache[spectra] = value
    except TypeError:  # not weak-referenceable: just don't cache
        pass
    return value

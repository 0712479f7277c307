"""Search spaces: parameter types, graphs of discrete variables and their spectra."""
from .graphs import GraphSpectrum, complete_graph_spectrum, custom_graph_spectrum, path_graph_spectrum
from .parameters import Categorical, Graph, Integer, Ordinal, Parameter, Real
from .sets import Set
from .space import PackedSpectra, Space

__all__ = [
    "Space", "PackedSpectra", "Parameter", "Real", "Integer", "Ordinal", "Categorical", "Graph", "Set",
    "GraphSpectrum", "complete_graph_spectrum", "path_graph_spectrum", "custom_graph_spectrum",
]

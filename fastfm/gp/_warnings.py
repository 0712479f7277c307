"""Warnings of the GP, attributed to the first caller outside ``fastfm/gp/``.

A fixed ``stacklevel`` depends on how deep inside the package the warning is raised (the jitter notice of
the final factorisation, of the hyperparameter subset's, the GPU fallback of a likelihood evaluation), and
pointed into the package itself; the user's line calling ``fit`` is the one to show, as
``warnings.warn(..., skip_file_prefixes=...)`` does from Python 3.12 on.
"""
import os
import sys
import warnings

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def warn(message, category):
    """``warnings.warn(message, category)`` with the stack level of the first frame outside this package."""
    level, frame = 2, sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE):
        level, frame = level + 1, frame.f_back
    warnings.warn(message, category, stacklevel=level)

"""Deprecated alias, kept for one release: ``python -m fastfm.bench X ...`` runs ``fastfm time X ...``.

The timing commands live in ``fastfm.cli`` (``fastfm time kernels|sets|hierarchical|regression|gpu``)
and their seeded inputs in ``fastfm.benchmarks.workloads``.
"""
import sys
import warnings

from .cli import main as _cli_main

__all__ = ["main"]


def main(argv=None):
    """``fastfm time`` with ``argv`` (default: ``sys.argv[1:]``), after a FutureWarning naming the new command."""
    argv = sys.argv[1:] if argv is None else list(argv)
    # FutureWarning, not DeprecationWarning: it is meant for the person at the terminal, and Python shows it
    # by default wherever it is raised
    warnings.warn("`python -m fastfm.bench` is deprecated and will be removed in the next release; use "
                  f"`fastfm time {' '.join(argv)}`".rstrip() + " instead", FutureWarning, stacklevel=2)
    return _cli_main(["time", *argv])


if __name__ == "__main__":
    raise SystemExit(main())

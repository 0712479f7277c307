"""The ``fastfm`` command line: every runner and argparse tree of the project (nothing in the library imports it).

    fastfm bench func3c --kernel modlap,moddif,random --budget 200 --seeds 5 --plot out.png
    fastfm bench kmeansinit --kernel set,set-L3,vector,random,kmeans++ --budget 60
    fastfm bench deepbranch --kernel hierarchical,modlap,modlap-flat,random --budget 60
    fastfm info                      # version, backends, OpenMP, threads
    fastfm time kernels              # FM Gram and gradient reduction, cpp vs the NumPy reference
    fastfm time sets                 # set-kernel Gram (exact and K̂)
    fastfm time hierarchical         # conditional-space kernel
    fastfm time regression           # large-N GP regression, with sklearn and BoTorch as peers
    fastfm time gpu                  # cuda backend: parity, then timings (needs a CUDA GPU)

``bench`` runs BO on a problem of ``fastfm.benchmarks``; a kernel name ending in "-flat" runs on
``problem.space.flattened()`` (every parameter always active; inactive values are dropped before
evaluation).  ``time`` commands print the machine first; ``fastfm time COMMAND --help`` lists the options.
"""
import argparse
import sys

from . import gpu, kernels, regression, runs

__all__ = ["main"]


def _parser():
    # the docstring without its first line, which is for the reader of the code
    parser = argparse.ArgumentParser(prog="fastfm", description=__doc__.split("\n\n", 1)[1],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    runs.add_parser(commands)
    info = commands.add_parser("info", help="print version, backends, OpenMP and threads")
    info.set_defaults(run=_info)
    timing = commands.add_parser("time", help="time kernels, sets, hierarchical, regression or the gpu backend",
                                 description="Timings; each prints the machine first.")
    timers = timing.add_subparsers(dest="timer", required=True, metavar="{kernels,sets,hierarchical,regression,gpu}")
    kernels.add_parsers(timers)
    regression.add_parser(timers)
    gpu.add_parser(timers)
    return parser


def _info(args, parser, command):
    from .. import show_config

    show_config()
    return 0


def main(argv=None):
    """Run one ``fastfm`` command (``argv`` without the program name; default: ``sys.argv[1:]``) and return
    its exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = _parser()
    args = parser.parse_args(argv)
    return args.run(args, parser, " ".join(["fastfm", *argv]))

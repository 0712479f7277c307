"""The GP's linear-algebra solvers: the exact Cholesky solver and the matrix-free one (``cg``: PCG with the
pivoted-Cholesky preconditioner of ``preconditioner``, the iterations of ``_pcg``).
"""

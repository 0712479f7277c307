"""Plots of BO runs
================

Plots of BO runs (needs the extra: pip install fastfm[plot]).  Run: python examples/plot_convergence.py

Three seeds of ModLap against random search on Func3C, then the model of one run: which parameters it
found relevant, and its posterior along one continuous and one categorical parameter.  Writes
plot_convergence.png.
"""
import matplotlib

matplotlib.use("Agg")      # write a file; drop this line to show the figure in a window

import matplotlib.pyplot as plt  # noqa: E402

import fastfm as ff  # noqa: E402
import fastfm.plot as ffplot  # noqa: E402

problem = ff.benchmarks.get_problem("func3c")
runs = {kernel: [ff.minimize(problem, problem.space, n_iter=30, n_init=8, kernel=kernel, seed=seed,
                             progress=False) for seed in range(3)]
        for kernel in ("modlap", "random")}

fig, axes = plt.subplots(2, 3, figsize=(15, 8))
for kernel, results in runs.items():
    ffplot.convergence(results, ax=axes[0, 0], label=kernel)
axes[0, 0].legend()
result = runs["modlap"][0]
ffplot.evaluations_over_time(result, ax=axes[0, 1])
ffplot.parameter_importance(result, ax=axes[0, 2])
ffplot.slice_1d(result, problem.space, result.x, "x1", ax=axes[1, 0])
ffplot.slice_1d(result, problem.space, result.x, "h2", ax=axes[1, 1])
ffplot.slice_2d(result, problem.space, result.x, ("x1", "x2"), ax=axes[1, 2])
fig.tight_layout()
fig.savefig("plot_convergence.png", dpi=100)
print(result.to_dataframe().head())
print("wrote plot_convergence.png")

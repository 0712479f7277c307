"""Which kernel models the mixed regression set best: exact type-II ML on the same N training points
(the kernel's θ plus ``--restarts`` starts), then test RMSE / NLL on held-out points.  Compares the FM
kernels with the paper's product and additive baselines and with sums of them (the structure of
BoTorch's MixedSingleTaskGP: a sum kernel plus a product kernel).

    python asv_benchmarks/peers/regression_kernels.py --n 1000 --kernels modlap,prodlap,addlap,moddif,modlap+addlap,prodlap+addlap
"""
import argparse
import time


import fastfm as ff
from fastfm.benchmarks.regression import make_mixed_regression, score_predictions


def build(name, space):
    """A kernel from a name, or a sum of named kernels ("modlap+addlap")."""
    kernels = [ff.kernels.make_kernel(part, space) for part in name.split("+")]
    total = kernels[0]
    for kernel in kernels[1:]:
        total = total + kernel
    return total


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--n-test", type=int, default=5000)
    parser.add_argument("--restarts", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--kernels", default="modlap,prodlap,addlap,moddif,modlap+addlap,prodlap+addlap")
    args = parser.parse_args(argv)
    space, X, y, X_test, y_test = make_mixed_regression(args.n, args.n_test, seed=args.seed)
    print(f"N = {args.n}, {args.restarts + 1} L-BFGS-B starts, {args.n_test} test points, seed {args.seed}")
    print("| kernel | fit (s) | log ML | noise (standardised) | test RMSE | test NLL |")
    print("|---|---|---|---|---|---|")
    for name in args.kernels.split(","):
        start = time.perf_counter()
        gp = ff.GaussianProcessRegressor(build(name, space), n_restarts=args.restarts, random_state=args.seed,
                                         hyperparameter_subset=None).fit(X, y)
        seconds = time.perf_counter() - start
        rmse, nll = score_predictions(gp, X_test, y_test)
        print(f"| {name} | {seconds:.1f} | {gp.log_marginal_likelihood_value_:.1f} | {gp.noise_:.3g} | "
              f"{rmse:.4f} | {nll:.3f} |", flush=True)


if __name__ == "__main__":
    main()

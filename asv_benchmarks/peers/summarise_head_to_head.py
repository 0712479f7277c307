#!/usr/bin/env python
"""Markdown tables of the head-to-head runs written by ``head_to_head.py`` (issue 24 §5).

For each budget B (default 30, 60, 200; only those <= the largest budget in the file): rows are problems, columns
methods, each cell the mean ± standard error over seeds of the best value found in the first B evaluations, with
the number of seeds; the best (lowest) mean of a row is in bold.  A run contributes to budget B when it has at
least B evaluations (a run stopped by ``--timeout`` contributes to the budgets it reached).  For a problem-method
pair with several runs of one seed, the one with the most evaluations is used, and of equally long ones the last in
the file (a seed rerun at a newer commit supersedes its old run, which stays in the file as a record).

Then the median (and mean) wall seconds per suggestion (the method's time to choose the next point, objective
excluded) over the suggestions made with 50 to 100 observations (``--time-window``), pooled over seeds, per
problem and method, and over all problems.  The mean matters for methods that amortise their model over several
suggestions (SMAC refits its random forest and maximises the acquisition once per 8 suggestions by default, so
its median is the cost of the cheap ones).

Usage::

    python asv_benchmarks/peers/summarise_head_to_head.py asv_benchmarks/peers/results/head_to_head.jsonl
"""
import argparse
import functools
import json
import math
import os
import sys
from collections import OrderedDict, defaultdict

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "parallel"))
import _common  # noqa: E402  (mean_se: the mean ± s.e. of the other benchmark tables)

METHOD_ORDER = ("fastfm", "random", "tpe", "gpsampler", "smac", "hebo", "botorch")


@functools.lru_cache(maxsize=None)
def _best_known(problem_key):
    """The problem's best-known value where no optimum is (PestControl), else None: from ``fastfm.benchmarks`` when
    it imports (the rows record the optimum only).  Cached: each budget's table asks again, and building a problem
    can load its data (SVM, XGBoost)."""
    try:
        from fastfm.benchmarks import get_problem
        return getattr(get_problem(problem_key), "best_known", None)
    except (ImportError, ValueError):
        return None


def load(path):
    """(runs {(problem_key, method): {seed: record}}, skips {(problem_key, method): reason}, problem info)."""
    runs, skips, problems, failed = defaultdict(dict), {}, OrderedDict(), 0
    with open(path) as fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            r = json.loads(line)
            key = (r["problem_key"], r["method"])
            problems.setdefault(r["problem_key"], {"name": r.get("problem", r["problem_key"]),
                                                   "optimum": r.get("optimum")})
            if r["status"] == "skipped":
                skips[key] = r.get("reason") or "skipped"
            elif r["status"] in ("ok", "timeout") and r.get("best_so_far"):
                old = runs[key].get(r["seed"])
                if old is None or len(r["best_so_far"]) >= len(old["best_so_far"]):
                    runs[key][r["seed"]] = r
            else:
                failed += 1
    return runs, skips, problems, failed


def fmt(x):
    if x is None or not math.isfinite(x):
        return "-"
    a = abs(x)
    if a != 0 and (a >= 1e4 or a < 1e-3):
        return f"{x:.3e}"
    return f"{x:.4g}" if a >= 1 else f"{x:.4f}"


def best_table(runs, skips, problems, methods, budget):
    lines = [f"### Best value after {budget} evaluations (mean ± s.e. over seeds, n seeds; lower is better)", "",
             "| problem | optimum | " + " | ".join(methods) + " |",
             "| --- | --- | " + " | ".join("---" for _ in methods) + " |"]
    notes = OrderedDict()
    for pk, info in problems.items():
        cells, means = [], {}
        for m in methods:
            seeds = runs.get((pk, m), {})
            vals = [r["best_so_far"][budget - 1] for r in seeds.values() if len(r["best_so_far"]) >= budget]
            if vals:
                mean, se = _common.mean_se(vals)
                means[m] = mean
                cells.append([m, f"{fmt(mean)} ± {fmt(se)} ({len(vals)})"])
            elif seeds:
                cells.append([m, f"(runs end before {budget})"])
            elif (pk, m) in skips:
                mark = notes.setdefault(skips[(pk, m)], f"[{len(notes) + 1}]")
                cells.append([m, f"n/a {mark}"])
            else:
                cells.append([m, ""])
        if means:
            best = min(means.values())
            for c in cells:
                if c[0] in means and means[c[0]] == best:
                    c[1] = f"**{c[1]}**"
        opt = info.get("optimum")
        best_known = _best_known(pk) if opt is None else None
        shown = fmt(opt) if opt is not None else f"{fmt(best_known)} (best known)" if best_known is not None else "?"
        lines.append(f"| {info['name']} | {shown} | "
                     + " | ".join(c[1] for c in cells) + " |")
    if notes:
        lines.append("")
        for reason, mark in notes.items():
            lines.append(f"{mark} {reason}")
    return lines


def time_table(runs, problems, methods, lo, hi, include_tell):
    what = "suggestion + tell" if include_tell else "suggestion"
    lines = [f"### Seconds per {what} at {lo}-{hi} observations: median / mean (pooled over seeds; "
             "n suggestions)", "",
             "| problem | " + " | ".join(methods) + " |", "| --- | " + " | ".join("---" for _ in methods) + " |"]
    pooled = defaultdict(list)
    for pk, info in problems.items():
        cells = []
        for m in methods:
            ts = []
            for r in runs.get((pk, m), {}).values():
                s = np.asarray(r["suggest_seconds"], dtype=float)
                if include_tell and r.get("tell_seconds"):
                    s = s + np.asarray(r["tell_seconds"], dtype=float)[: len(s)]
                ts.extend(s[lo: hi + 1].tolist())   # suggestion i is made with i observations
            pooled[m].extend(ts)
            cells.append(f"{np.median(ts):.3g} / {np.mean(ts):.3g} ({len(ts)})" if ts else "")
        lines.append(f"| {info['name']} | " + " | ".join(cells) + " |")
    lines.append("| **all problems** | " + " | ".join(
        f"{np.median(pooled[m]):.3g} / {np.mean(pooled[m]):.3g} ({len(pooled[m])})" if pooled[m] else ""
        for m in methods) + " |")
    return lines


def context(path):
    """One line on the machines, versions and commits the runs came from."""
    machines, commits, threads, versions = set(), set(), set(), defaultdict(set)
    with open(path) as fh:
        for line in fh:
            if not line.strip():
                continue
            r = json.loads(line)
            if r["status"] not in ("ok", "timeout"):
                continue
            m = r.get("machine", {})
            machines.add(f"{m.get('cpu')} ×{m.get('cpu_count')} ({m.get('platform')})")
            commits.add(((r.get("fastfm_git") or {}).get("commit") or "?")[:10])   # None: run outside a git checkout
            threads.add(r.get("threads"))
            for k, v in (r.get("versions") or {}).items():
                versions[k].add(v)
    vs = ", ".join(f"{k} {'/'.join(sorted(v))}" for k, v in sorted(versions.items()))
    return [f"Machines: {'; '.join(sorted(machines))}.  fastfm commits: {', '.join(sorted(commits))}.  "
            f"Threads per run: {', '.join(str(t) for t in sorted(threads, key=str))}.", "", f"Versions: {vs}."]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("jsonl", help="the file head_to_head.py wrote")
    parser.add_argument("--budgets", default="30,60,200", help="comma-separated (default 30,60,200)")
    parser.add_argument("--methods", default=None, help="comma-separated columns, in order (default: all present)")
    parser.add_argument("--problems", default=None, help="comma-separated rows, in order (default: all present)")
    parser.add_argument("--time-window", default="50,100", help="LO,HI observations for the timing table")
    parser.add_argument("--include-tell", action="store_true", help="time = suggestion + tell")
    args = parser.parse_args(argv)

    runs, skips, problems, failed = load(args.jsonl)
    present = {m for _, m in list(runs) + list(skips)}
    methods = ([m.strip() for m in args.methods.split(",")] if args.methods
               else [m for m in METHOD_ORDER if m in present] + sorted(present - set(METHOD_ORDER)))
    if args.problems:
        keep = [p.strip().lower() for p in args.problems.split(",")]
        problems = OrderedDict((p, problems[p]) for p in keep if p in problems)
    max_budget = max((len(r["best_so_far"]) for seeds in runs.values() for r in seeds.values()), default=0)
    budgets = [b for b in (int(x) for x in args.budgets.split(",")) if b <= max_budget]
    if not budgets and max_budget:
        budgets = [max_budget]
    out = [f"Runs: {sum(len(s) for s in runs.values())} ({failed} failed records ignored), "
           f"{len(skips)} problem-method pairs skipped; largest budget {max_budget}.", ""]
    out += context(args.jsonl) + [""]
    for b in budgets:
        out += best_table(runs, skips, problems, methods, b) + [""]
    lo, hi = (int(x) for x in args.time_window.split(","))
    out += time_table(runs, problems, methods, lo, hi, args.include_tell)
    if max_budget <= lo:
        out += ["", f"(no run reached {lo + 1} evaluations: the timing table is empty; "
                    f"--time-window 10,{max_budget - 1} shows the model-based part of short runs)"]
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env bash
# Build the documentation site strictly: every Sphinx warning, and every example of the gallery that fails,
# is an error (non-zero exit).  Installs docs/requirements.txt into the current Python environment first.
#
#   bash .ci/docs.sh            # builds into a fresh temporary directory (printed at the end)
#   bash .ci/docs.sh OUTDIR     # builds into OUTDIR
#   PYTHON=/path/to/python bash .ci/docs.sh
#
# The site's source directory is the repository root (docs/site/conf.py: include_patterns = docs/** and
# BENCHMARKS.md); the gallery runs every script of examples/ (about a minute on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
if [ -n "${PYTHON:-}" ]; then
    python=$PYTHON
else
    python=python
    command -v python >/dev/null 2>&1 || python=python3
fi

echo "+ $python -m pip install -r docs/requirements.txt"
"$python" -m pip install --quiet -r docs/requirements.txt

# fastfm itself: the installed package, or this source tree with its extension built in place (conf.py
# falls back to the tree); with neither, install it (a C++ build: a few minutes on 2 cores).
installed() { (cd / && "$python" -c "import fastfm") >/dev/null 2>&1; }
built_in_place() { compgen -G "fastfm/_cpp*.so" >/dev/null || compgen -G "fastfm/_cpp*.pyd" >/dev/null; }
if ! installed && ! built_in_place; then
    echo "+ $python -m pip install .   (fastfm is neither installed nor built in place)"
    "$python" -m pip install --quiet .
fi

out=${1:-$(mktemp -d "${TMPDIR:-/tmp}/fastfm-docs.XXXXXX")}
doctrees=$(mktemp -d "${TMPDIR:-/tmp}/fastfm-doctrees.XXXXXX")
# written into the source tree by autosummary and sphinx-gallery (git-ignored): start clean, leave clean
generated=(docs/site/gallery docs/site/reference/generated)
cleanup() { rm -rf "${generated[@]}" "$doctrees"; }
cleanup
trap cleanup EXIT

start=$SECONDS
echo "+ $python -m sphinx -W --keep-going -b html -c docs/site . $out"
"$python" -m sphinx -W --keep-going -b html -d "$doctrees" -c docs/site "$root" "$out"
echo "docs: built in $((SECONDS - start)) s into $out (open $out/index.html)"

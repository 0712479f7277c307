"""Sphinx configuration of the fastfm documentation site.

Why Sphinx (pydata-sphinx-theme, numpydoc, sphinx-gallery, MyST) rather than MkDocs Material + mkdocstrings:
fastfm's docstrings are numpy-style, and numpydoc is the reference parser of that style (the one NumPy, SciPy
and scikit-learn build with), where mkdocstrings' griffe parser is a re-implementation; sphinx-gallery is the
original gallery that RUNS every example during the build and renders its printed output and figures, where
mkdocs-gallery is a less-used port of it.  Both tools have a strict mode (``sphinx-build -W --keep-going``
reports every warning of the run and then fails, like ``mkdocs --strict``), and whichever tool runs the
examples, they are most of the build time on 2 cores, so neither settles the choice.  Sphinx can also take the
repository root as its source directory and build just ``docs/**`` and ``BENCHMARKS.md``
(``include_patterns``), so the existing Markdown pages (docs/architecture.md, docs/errors.md,
docs/benchmarks/*.md, BENCHMARKS.md) become pages as they are, with every relative link between them resolved,
without moving or copying them; MkDocs needs its docs_dir to hold every page and cannot resolve the links that
leave it.  Build time on the 2-core machine: about 65 s, of which about 55 s run the examples and the rest is
Sphinx (autodoc, MyST, HTML).

Build (what .ci/docs.sh runs; the source directory is the repository root, this folder is the config):

    sphinx-build -W --keep-going -b html -c docs/site . /tmp/fastfm-docs
"""
import os
import sys
from pathlib import Path

CONF_DIR = Path(__file__).resolve().parent
REPO_ROOT = CONF_DIR.parent.parent
EXAMPLES_DIR = REPO_ROOT / "examples"

# The package the pages document and the gallery runs: the source tree when its extension was built in place
# (`python setup.py build_ext --inplace`), else the installed fastfm when there is one, else the tree on the NumPy
# backend.  `python -m sphinx` from the repository root (.ci/docs.sh) puts the tree first on sys.path, so without
# the in-place build its fastfm, extension-less, would shadow the installed one: the gallery then ran on the NumPy
# fallback, ~4x slower (.ci/run: 181 s for the site, ~100 s of it that).
_TREE_HAS_EXTENSION = any((REPO_ROOT / "fastfm").glob("_cpp*.so")) or any((REPO_ROOT / "fastfm").glob("_cpp*.pyd"))
_saved_path = list(sys.path)
if not _TREE_HAS_EXTENSION:
    sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != REPO_ROOT]
try:
    import fastfm
except ImportError:
    sys.path[:] = [str(REPO_ROOT)] + _saved_path
    import fastfm
else:
    sys.path[:] = _saved_path
print(f"fastfm {fastfm.__version__} from {Path(fastfm.__file__).parent} "
      f"(compiled extension: {'yes' if 'cpp' in fastfm.available_backends() else 'no, the NumPy backend'})")

os.environ.setdefault("MPLBACKEND", "Agg")

# -- Project -------------------------------------------------------------------------------------------------
project = "fastfm"
author = "the fastfm authors"
copyright = "the fastfm authors, BSD-3-Clause"
release = fastfm.__version__
version = ".".join(release.split(".")[:2])

# The source directory is the repository root (sphinx-build -c docs/site . OUT): only these files are pages.
root_doc = "docs/site/index"
include_patterns = ["docs/**", "BENCHMARKS.md"]
exclude_patterns = ["docs/site/_templates/**", "docs/site/_extra/**", "**/.ipynb_checkpoints"]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
templates_path = ["_templates"]

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
]

# -- Markdown (MyST): the existing pages link to headings by their GitHub anchors ------------------------------
myst_heading_anchors = 6
myst_enable_extensions = ["colon_fence", "deflist"]

# -- API reference: autosummary pages, numpydoc sections ------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = False
autodoc_default_options = {"member-order": "bysource"}
autodoc_typehints = "none"            # the numpy-style Parameters sections carry the types
numpydoc_show_class_members = False   # the class template lists the members (autodoc :members:)
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_validation_checks = set()    # render the sections; no style lint in the build
add_module_names = False

# -- Gallery: sphinx-gallery RUNS every script of examples/ during the build ----------------------------------
# Each script runs as __main__ with examples/ as the working directory.  On the 2-core machine each takes
# 1-15 s, so every one is executed except those below, which the gallery shows without output: a script
# that needs more than ~20 s, or packages that docs/requirements.txt does not install, goes here (with why)
# and in examples/GALLERY_HEADER.rst's list.
NOT_EXECUTED = {
    "botorch_modlap.py": "needs PyTorch, GPyTorch and BoTorch (fastfm[torch]), which the docs build does not install",
}
_not_run = "|".join(name.replace(".", r"\.") for name in NOT_EXECUTED)
_run_pattern = rf"/(?!(?:{_not_run})$)[^/]+\.py$" if NOT_EXECUTED else r"/[^/]+\.py$"
sphinx_gallery_conf = {
    "examples_dirs": [str(EXAMPLES_DIR.relative_to(REPO_ROOT))],
    "gallery_dirs": ["docs/site/gallery"],
    "filename_pattern": _run_pattern,
    "ignore_pattern": r"__init__\.py",
    "within_subsection_order": "FileNameSortKey",
    "download_all_examples": False,
    "write_computation_times": False,   # else sg_execution_times.rst lands in the repository root
    "abort_on_example_error": False,    # report every failing example (each one fails the build below)
    "only_warn_on_example_error": False,
    "image_scrapers": ("matplotlib",),
    "reset_modules": ("matplotlib",),
    "capture_repr": (),
    "show_memory": False,
    "plot_gallery": "True",
    "doc_module": ("fastfm",),
    "backreferences_dir": "docs/site/reference/generated/backreferences",
    "inspect_global_variables": False,
}

# -- HTML ------------------------------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"fastfm {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "header_links_before_dropdown": 6,
    "navbar_align": "left",
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
html_extra_path = ["_extra"]          # index.html at the site root: a redirect to docs/site/index.html
html_show_sourcelink = False
html_copy_source = False
html_last_updated_fmt = None


# -- Progress bars in the gallery ------------------------------------------------------------------------------
# minimize draws a tqdm bar that redraws on every evaluation; sphinx-gallery captures standard error, so the
# page of each example would show one line per redraw (40 for quickstart.py).  In this build the bar draws
# its first and its final line only (the final one has the best value); what the scripts compute is unchanged.
def _final_line_progress_bars():
    import tqdm.auto

    class _FinalLineTqdm(tqdm.auto.tqdm):
        def __init__(self, *args, **kwargs):
            kwargs.setdefault("mininterval", float("inf"))
            super().__init__(*args, **kwargs)

        def set_postfix_str(self, s="", refresh=True):
            super().set_postfix_str(s, refresh=False)

    tqdm.auto.tqdm = _FinalLineTqdm


_final_line_progress_bars()


# -- Files the examples write ----------------------------------------------------------------------------------
# sphinx-gallery runs the scripts with examples/ as the working directory, so a script that saves a file
# (plot_convergence.py writes plot_convergence.png) would leave it in the source tree: remove what the build
# added there.
_EXAMPLES_BEFORE = {p.name for p in EXAMPLES_DIR.iterdir()} if EXAMPLES_DIR.is_dir() else set()


def _remove_example_outputs(app, exception):
    if not EXAMPLES_DIR.is_dir():
        return
    for path in EXAMPLES_DIR.iterdir():
        if path.name not in _EXAMPLES_BEFORE and path.is_file() and path.suffix in {".png", ".jsonl", ".lock",
                                                                                   ".csv", ".json", ".svg"}:
            path.unlink()


def setup(app):
    app.connect("build-finished", _remove_example_outputs)

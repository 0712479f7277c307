"""Build script for fastfm's compiled extension ``fastfm._cpp``.

The extension is optional: if the compiler fails, the package still installs
and ``import fastfm`` falls back to the NumPy reference backend with a
warning.  OpenMP is used when the compiler accepts ``-fopenmp``; otherwise the
same sources build serially.
"""
import os
import shlex
import sys
import tempfile
from glob import glob

from setuptools import setup
from setuptools.command.build_ext import build_ext

try:
    from pybind11.setup_helpers import ParallelCompile, Pybind11Extension
except ImportError:  # pybind11 is a build requirement; this only helps `python setup.py --version`
    ParallelCompile = Pybind11Extension = None

# The extension is several translation units (csrc/module.cpp, csrc/py/*.cpp, csrc/dispatch/*.cpp):
# compile them in parallel, one job per core, or FASTFM_BUILD_JOBS jobs.  Every file is recompiled on
# each build (no naive_recompile: it compares only .o and .cpp times and misses header edits); for
# incremental developer builds use ccache: CC="ccache gcc" CXX="ccache g++".
if ParallelCompile is not None:
    ParallelCompile("FASTFM_BUILD_JOBS", default=0).install()


def _compiler_accepts(compiler, flags, link_flags, source="int main(void) { return 0; }\n"):
    """True when ``compiler`` compiles a tiny program with ``flags`` and links it with ``link_flags``."""
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "probe.cpp")
        with open(src, "w") as fh:
            fh.write(source)
        try:
            objects = compiler.compile([src], output_dir=tmp, extra_postargs=flags)
            # LDFLAGS: distutils adds it to the shared-library link but not to link_executable; without it
            # "-lomp" is not found where libomp sits outside the default paths (Homebrew on macOS, whose
            # instructions, like pyproject's [tool.cibuildwheel.macos], set LDFLAGS=-L<prefix>/lib)
            compiler.link_executable(objects, os.path.join(tmp, "probe"),
                                     extra_postargs=link_flags + shlex.split(os.environ.get("LDFLAGS", "")))
        except Exception:
            return False
    return True


_OPENMP_PROBE = "#include <omp.h>\nint main(void) { return omp_get_max_threads() > 0 ? 0 : 1; }\n"


class OptionalOpenMPBuildExt(build_ext):
    """Adds OpenMP when available and never lets a compiler failure abort the install."""

    def build_extensions(self):
        use_openmp = os.environ.get("FASTFM_NO_OPENMP", "") == ""
        openmp_flags = openmp_link_flags = []
        if use_openmp and self.compiler.compiler_type == "unix":
            # (compile, link) flags: GCC and LLVM clang; Apple clang, which has no OpenMP runtime of its own
            # and whose driver refuses -fopenmp, with libomp (Homebrew): the pragmas through the
            # preprocessor, and the runtime linked by name.  The extension links with what the probe linked.
            for flags, link_flags in ((["-fopenmp"], ["-fopenmp"]), (["-Xpreprocessor", "-fopenmp"], ["-lomp"])):
                if _compiler_accepts(self.compiler, flags, link_flags, _OPENMP_PROBE):
                    openmp_flags, openmp_link_flags = flags, link_flags
                    break
        elif use_openmp and self.compiler.compiler_type == "msvc":
            openmp_flags = openmp_link_flags = ["/openmp"]
        for ext in self.extensions:
            if openmp_flags:
                ext.extra_compile_args += openmp_flags
                ext.extra_link_args += openmp_link_flags
                ext.define_macros.append(("FASTFM_HAVE_OPENMP", "1"))
        if not openmp_flags:
            print("fastfm: OpenMP not available, building the extension serially", file=sys.stderr)
        super().build_extensions()

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as exc:  # the NumPy backend keeps the package usable
            print(
                f"fastfm: WARNING: building {ext.name} failed ({exc}); "
                "fastfm will use the NumPy reference backend",
                file=sys.stderr,
            )


ext_modules = []
if Pybind11Extension is not None and os.environ.get("FASTFM_NO_EXTENSION", "") == "":
    # -fno-math-errno: sqrt/exp never need to set errno here; with errno semantics GCC keeps a
    # scalar sqrt call inside otherwise vectorisable loops (the set kernel's Matérn sum ran ~8× slower)
    extra = ["-O3", "-fno-math-errno"] if sys.platform != "win32" else ["/O2"]
    ext_modules.append(
        Pybind11Extension(
            "fastfm._cpp",
            sorted(glob("csrc/**/*.cpp", recursive=True)),  # sorted: reproducible builds
            include_dirs=["csrc/include", "csrc"],
            cxx_std=17,
            extra_compile_args=extra,
        )
    )

setup(ext_modules=ext_modules, cmdclass={"build_ext": OptionalOpenMPBuildExt})

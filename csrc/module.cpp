// fastfm._cpp: the Python face of the C++ core (csrc/include/fastfm/*.hpp).
//
// The extension is split into translation units compiled in parallel (setup.py, ParallelCompile):
//   csrc/module.cpp       this file: PYBIND11_MODULE, SpectralTables, build_info, threads, lanes
//   csrc/py/*.cpp         the bindings per kernel family; boundary.cpp checks every array at the
//                         boundary (shape, dtype, state ranges) and raises ValueError naming the
//                         argument, converts to C-contiguous float64 / int64; the calls release the
//                         GIL around the parallel loops
//   csrc/dispatch/*.cpp   the hot entry points, one clone per ISA, without pybind11
// Signatures mirror the private functions of fastfm/_backends/numpy_backend.py (the reference);
// fastfm/_backends/cpp.py adapts the Python objects (PackedSpectra, Modulation) to them.
#include <cstdint>
#include <memory>
#include <string>

#include "dispatch/dispatch.hpp"
#include "fastfm/common.hpp"
#include "py/boundary.hpp"

using namespace fastfm_py;

namespace {

std::unique_ptr<Tables> make_tables(const py::object& n_states_obj, const py::object& eigvec_offsets_obj,
                                    const py::object& eigenvectors_obj, const py::object& group_offsets_obj,
                                    const py::object& group_values_obj, const py::object& group_sizes_obj,
                                    const py::object& is_complete_obj) {
    IndexArray n_states = index_array(n_states_obj, "n_states", {-1}, "(P,)");
    const py::ssize_t P = n_states.shape(0);
    const std::string offsets = "(" + std::to_string(P + 1) + ",)";
    IndexArray eigvec_offsets = index_array(eigvec_offsets_obj, "eigvec_offsets", {P + 1}, offsets);
    DoubleArray eigenvectors = float_array(eigenvectors_obj, "eigenvectors", {-1}, "(sum of n_states²,)");
    IndexArray group_offsets = index_array(group_offsets_obj, "group_offsets", {P + 1}, offsets);
    DoubleArray group_values = float_array(group_values_obj, "group_values", {-1}, "(n_groups,)");
    IndexArray group_sizes =
        index_array(group_sizes_obj, "group_sizes", {group_values.shape(0)}, "(" + std::to_string(group_values.shape(0)) + ",)");
    py::array_t<uint8_t, py::array::c_style | py::array::forcecast> is_complete =
        py::array_t<uint8_t, py::array::c_style | py::array::forcecast>::ensure(as_array(is_complete_obj, "is_complete"));
    if (!is_complete || is_complete.ndim() != 1 || is_complete.shape(0) != P)
        throw py::value_error("is_complete must have shape (" + std::to_string(P) + ",)");
    for (py::ssize_t p = 0; p <= P; ++p)
        if ((p > 0 && eigvec_offsets.data()[p] < eigvec_offsets.data()[p - 1]) ||
            (p > 0 && group_offsets.data()[p] < group_offsets.data()[p - 1]))
            throw py::value_error("spectra offsets must be non-decreasing");
    py::gil_scoped_release release;
    return std::make_unique<Tables>(static_cast<std::size_t>(P), n_states.data(), eigvec_offsets.data(),
                                    eigenvectors.data(), static_cast<std::size_t>(eigenvectors.shape(0)),
                                    group_offsets.data(), group_values.data(), group_sizes.data(),
                                    static_cast<std::size_t>(group_values.shape(0)), is_complete.data());
}

std::string compiler_name() {
#if defined(__clang__)
    return std::string("clang ") + __clang_version__;
#elif defined(__GNUC__)
    return std::string("gcc ") + __VERSION__;
#elif defined(_MSC_VER)
    return "msvc " + std::to_string(_MSC_VER);
#else
    return "unknown";
#endif
}

}  // namespace

PYBIND11_MODULE(_cpp, m) {
    m.doc() = "fastfm's compiled backend (C++17, OpenMP): FM kernel Grams and fused gradient reductions";

    py::class_<Tables>(m, "SpectralTables", py::module_local(), R"doc(
        The β-independent tables of a PackedSpectra (projectors, tridiagonal
        Laplacians), prepared once and reused by every call.

        Parameters are the PackedSpectra arrays: n_states, eigvec_offsets,
        eigenvectors, group_offsets, group_values, group_sizes, is_complete.
    )doc")
        .def(py::init(&make_tables), py::arg("n_states"), py::arg("eigvec_offsets"), py::arg("eigenvectors"),
             py::arg("group_offsets"), py::arg("group_values"), py::arg("group_sizes"), py::arg("is_complete"))
        .def_property_readonly("n_variables", &Tables::n_variables)
        .def_property_readonly(
            "paths",
            [](const Tables& t) {
                py::list out;
                for (std::size_t p = 0; p < t.n_variables(); ++p) out.append(path_name(t.variable(p).path));
                return out;
            },
            "How each variable's factor is evaluated: 'complete', 'tridiagonal' or 'general'.");

    // Registered after SpectralTables, so that the signatures read fastfm._cpp.SpectralTables; the
    // order of the calls keeps the module's attribute order of the single-file build.
    bind_fm(m);

    m.def(
        "_override_vector_lanes",
        [](const std::string& lanes) {
            if (lanes == "cpu")
                set_vector_lanes_override(0);
            else if (lanes == "wide")
                set_vector_lanes_override(1);
            else if (lanes == "narrow")
                set_vector_lanes_override(-1);
            else
                throw py::value_error("lanes must be 'cpu', 'wide' or 'narrow', got '" + lanes + "'");
        },
        py::arg("lanes"),
        "Tests only: run the vector kernels with 'wide' (8 doubles / 16 floats) or 'narrow' lanes, or the "
        "CPU's ('cpu'); the values are the same, the speed is not.");
    m.def(
        "build_info",
        [] {
            py::dict info;
            info["openmp"] = fastfm::openmp_enabled();
            info["max_threads"] = fastfm::max_threads();
            info["compiler"] = compiler_name();
            info["simd"] = fastfm_dispatch::dispatch_name() + "; running " + fastfm_dispatch::active_isa();
            return info;
        },
        "How the extension was built: openmp, max_threads, compiler, simd (ISA dispatch).");
    m.def(
        "set_num_threads",
        [](int n) {
            if (n < 1) throw py::value_error("num_threads must be >= 1, got " + std::to_string(n));
            fastfm::set_max_threads(n);
        },
        py::arg("n"), "Default number of OpenMP threads (calls may still pass num_threads).");
    m.def("get_num_threads", &fastfm::max_threads, "Default number of OpenMP threads.");

    bind_set(m);
    bind_hier(m);
    bind_matvec(m);
    bind_linalg(m);
    bind_optim(m);
}

// The pybind11 boundary shared by the binding files (csrc/py/*.cpp, csrc/module.cpp): array checks
// that raise ValueError naming the argument, conversion to C-contiguous float64 / int64, and the
// checked hyperparameters turned into a plan.  Defined once in boundary.cpp.
//
// Binding code never calls the template hot code of fastfm/*.hpp (gram_tile, reduction_tile, …)
// itself: it hands the drivers the entry points of csrc/dispatch/dispatch.hpp, compiled per ISA.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "dispatch/dispatch.hpp"
#include "fastfm/common.hpp"
#include "fastfm/fm.hpp"

namespace fastfm_py {

namespace py = pybind11;

using Tables = fastfm::SpectralTables<double>;
using DoubleArray = py::array_t<double, py::array::c_style | py::array::forcecast>;
using IndexArray = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;

// ---- Boundary checks ---------------------------------------------------------

std::string shape_of(const py::array& a);
py::array as_array(const py::object& obj, const char* name);
// float64, C-contiguous, of the given number of dimensions; -1 in `shape` = any.
DoubleArray float_array(const py::object& obj, const char* name, std::vector<py::ssize_t> shape,
                        const std::string& expected);
// int64 state indices; only integer dtypes are accepted (a float index would silently truncate).
IndexArray index_array(const py::object& obj, const char* name, std::vector<py::ssize_t> shape,
                       const std::string& expected);
// D: (n, P) states, D[i, p] in [0, n_states[p]).
IndexArray state_matrix(const py::object& obj, const char* name, const Tables& tables, py::ssize_t n_rows = -1);
DoubleArray parameter_vector(const py::object& obj, const char* name, const Tables& tables);
fastfm::Modulation<double> make_modulation(int kind, const py::object& coefficients, double exponent);
double checked_variance(double variance);

// Everything a call shares: checked hyperparameters turned into a plan.
struct Hyper {
    const Tables& tables;
    DoubleArray alphas, betas;
    fastfm::Modulation<double> modulation;
    double variance;
};

Hyper check_hyper(const Tables& tables, const py::object& alphas, const py::object& betas, double variance, int kind,
                  const py::object& coefficients, double exponent);

// The vector kernels' lane count, for tests: 0 = the CPU's (FMPlan::wide_vectors), 1 = eight doubles /
// sixteen floats, -1 = four doubles / eight floats (_override_vector_lanes).
void set_vector_lanes_override(int lanes);
fastfm::FMPlan<double> with_lanes(fastfm::FMPlan<double> plan);

// rational_forms: the call evaluates kernel values through kernel_row_chunk (Gram, K·V), which uses
// the rational factor forms (FMPlan::prepare_rational); the other paths skip their tables.
fastfm::FMPlan<double> make_plan(const Hyper& h, std::size_t n_continuous, bool rational_forms = false);

std::string path_name(fastfm::FactorPath path);

// The row points (C1, D1) and column points (C2, D2) of a Gram-like call, checked; C2 = D2 = None
// means the columns are the rows (the symmetric K(X1, X1)).
struct PointPair {
    DoubleArray C1, C2;
    IndexArray D1, D2;
    bool symmetric;
    py::ssize_t N, M, Dc;
};

PointPair point_pair(const py::object& C1_obj, const py::object& D1_obj, const py::object& C2_obj,
                     const py::object& D2_obj, const Tables& tables);

py::array_t<double> vector_from(const std::vector<double>& values, std::size_t begin, std::size_t count);

// The symmetric reduction over the Gram of (C, D); `set_weights(problem)` points the problem at its
// weights (a dense W, or low-rank factors) and runs without the GIL, so it must not touch Python objects.
// Used by fm_grad_reduction (py/fm.cpp) and fm_grad_reduction_low_rank (py/matvec.cpp).
template <typename SetWeights>
py::tuple symmetric_reduction(const DoubleArray& C, const IndexArray& D, const Tables& tables, const Hyper& h,
                              int num_threads, SetWeights set_weights) {
    const py::ssize_t N = C.shape(0), Dc = C.shape(1);
    std::vector<double> sums;
    {
        py::gil_scoped_release release;
        // The continuant (tridiagonal) path gives F only; the reduction needs ∂F too.
        const fastfm::FMPlan<double> plan = with_lanes(fastfm::FMPlan<double>(
            tables, h.alphas.data(), h.betas.data(), h.variance, h.modulation, static_cast<std::size_t>(Dc), false));
        const auto cols = fastfm::PointColumns<double>::from_rows(C.data(), D.data(), static_cast<std::size_t>(N),
                                                                   static_cast<std::size_t>(Dc), tables.n_variables());
        fastfm::ReductionProblem<double> pb;
        pb.plan = &plan;
        pb.rows_continuous = C.data();
        pb.rows_states = D.data();
        pb.cols = &cols;
        pb.N = static_cast<std::size_t>(N);
        pb.register_kernel = &fastfm_dispatch::complete_reduction_registers_f64;
        pb.fused_kernel = &fastfm_dispatch::complete_reduction_fused_f64;
        set_weights(pb);
        sums = fastfm::run_reduction(pb, num_threads, &fastfm_dispatch::reduction_tile_f64);
    }
    const std::size_t P = tables.n_variables(), dc = static_cast<std::size_t>(Dc);
    return py::make_tuple(vector_from(sums, 0, dc), vector_from(sums, dc, P), vector_from(sums, dc + P, P),
                          sums[dc + 2 * P]);
}

// ---- Registration, one function per binding file, called by PYBIND11_MODULE (module.cpp) ----
// Each runs after SpectralTables is registered, so that the signatures name fastfm._cpp.SpectralTables.
void bind_fm(py::module_& m);      // py/fm.cpp
void bind_set(py::module_& m);     // py/set.cpp
void bind_hier(py::module_& m);    // py/hier.cpp
void bind_matvec(py::module_& m);  // py/matvec.cpp
void bind_linalg(py::module_& m);  // py/linalg.cpp
void bind_optim(py::module_& m);   // py/optim.cpp

}  // namespace fastfm_py

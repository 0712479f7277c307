// fastfm._cpp: the Python face of the C++ core (csrc/include/fastfm/*.hpp).
//
// The only file that includes pybind11.  It checks every array at the
// boundary (shape, dtype, state ranges) and raises ValueError naming the
// argument, converts to C-contiguous float64 / int64, then releases the GIL
// around the parallel loops.  Signatures mirror the private functions of
// fastfm/_backends/numpy_backend.py (the reference); fastfm/_backends/cpp.py
// adapts the Python objects (PackedSpectra, Modulation) to them.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "fastfm/common.hpp"
#include "fastfm/fm.hpp"
#include "fastfm/set.hpp"
#include "fastfm/hier.hpp"
#include "fastfm/matvec.hpp"
#include "fastfm/matvec_single.hpp"

namespace py = pybind11;

using Tables = fastfm::SpectralTables<double>;
using DoubleArray = py::array_t<double, py::array::c_style | py::array::forcecast>;
using IndexArray = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;

// ----------------------------------------------------------------------------
// Run-time ISA dispatch of the hot tiles.  One portable binary (no
// -march=native): GCC emits x86-64-v4 (AVX-512), x86-64-v3 (AVX2 + FMA) and
// baseline clones and picks one at load time.  `flatten` inlines the whole
// tile, so the template code is compiled for each ISA, not called at the
// baseline one.  Measured on an AMD EPYC (Zen 4): v3 is ~3× the baseline, v4
// another 15–20% on the Gram (GCC's generic tuning keeps 256-bit vectors there).
// ----------------------------------------------------------------------------
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__GLIBC__) && \
    !defined(FASTFM_NO_MULTIVERSIONING)
#define FASTFM_HOT __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"), flatten))
#define FASTFM_DISPATCH_NAME "target_clones(x86-64-v4: AVX-512 | x86-64-v3: AVX2+FMA | default: SSE2)"
#else
#define FASTFM_HOT
#define FASTFM_DISPATCH_NAME "none (compiler default ISA)"
#endif

namespace fastfm_dispatch {

FASTFM_HOT void gram_tile_f64(const fastfm::GramProblem<double>& pb, fastfm::Workspace<double>& ws, std::size_t a0,
                              std::size_t a1) {
    fastfm::gram_tile(pb, ws, a0, a1);
}

FASTFM_HOT void reduction_tile_f64(const fastfm::ReductionProblem<double>& pb, fastfm::Workspace<double>& ws,
                                   std::size_t a0, std::size_t a1, std::size_t tile) {
    fastfm::reduction_tile(pb, ws, a0, a1, tile);
}

FASTFM_HOT bool complete_reduction_registers_f64(const fastfm::FMPlan<double>& plan, const int64_t* v,
                                                 const int32_t* states, std::size_t ld, const double* arg,
                                                 const double* wts, std::size_t count, double* omega, double* sums) {
    return fastfm::complete_reduction_registers_any(plan, v, states, ld, arg, wts, count, omega, sums);
}

FASTFM_HOT void complete_reduction_fused_f64(const fastfm::FMPlan<double>& plan, const int64_t* v,
                                             const int32_t* states, std::size_t ld,
                                             const fastfm::FusedChunk<double>& chunk, double* sums) {
    fastfm::complete_reduction_fused_any(plan, v, states, ld, chunk, sums);
}

FASTFM_HOT void cross_gradient_tile_f64(const fastfm::CrossGradientProblem<double>& pb,
                                        fastfm::Workspace<double>& ws, std::size_t a0, std::size_t a1) {
    fastfm::cross_gradient_tile(pb, ws, a0, a1);
}

FASTFM_HOT void neighbour_gram_f64(const fastfm::FMPlan<double>& plan, const double* c, const int64_t* v,
                                   const fastfm::PointColumns<double>& cols, const int64_t* var_index,
                                   const int64_t* new_state, std::size_t n_neighbours, double* K, int n_threads) {
    fastfm::neighbour_gram(plan, c, v, cols, var_index, new_state, n_neighbours, K, n_threads);
}

std::string active_isa() {
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__GLIBC__) && \
    !defined(FASTFM_NO_MULTIVERSIONING)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("x86-64-v4")) return "x86-64-v4 (AVX-512)";
    if (__builtin_cpu_supports("x86-64-v3")) return "x86-64-v3 (AVX2+FMA)";
    return "default (SSE2)";
#else
    return "default";
#endif
}

}  // namespace fastfm_dispatch

namespace {

// ----------------------------------------------------------------------------
// Boundary checks
// ----------------------------------------------------------------------------

std::string shape_of(const py::array& a) {
    std::ostringstream out;
    out << "(";
    for (py::ssize_t i = 0; i < a.ndim(); ++i) out << (i ? ", " : "") << a.shape(i);
    out << (a.ndim() == 1 ? ",)" : ")");
    return out.str();
}

py::array as_array(const py::object& obj, const char* name) {
    if (obj.is_none()) throw py::value_error(std::string(name) + " must be an array, got None");
    return py::array::ensure(obj);
}

// float64, C-contiguous, of the given number of dimensions; -1 in `shape` = any.
DoubleArray float_array(const py::object& obj, const char* name, std::vector<py::ssize_t> shape,
                        const std::string& expected) {
    py::array raw = as_array(obj, name);
    if (!raw) throw py::value_error(std::string(name) + " must be a numeric array");
    if (raw.dtype().kind() == 'c' || raw.dtype().kind() == 'O' || raw.dtype().kind() == 'U' ||
        raw.dtype().kind() == 'S')
        throw py::value_error(std::string(name) + " must hold real numbers, got dtype " +
                              std::string(py::str(raw.dtype())));
    bool ok = raw.ndim() == static_cast<py::ssize_t>(shape.size());
    for (std::size_t i = 0; ok && i < shape.size(); ++i) ok = shape[i] < 0 || raw.shape(i) == shape[i];
    if (!ok)
        throw py::value_error(std::string(name) + " must have shape " + expected + ", got " + shape_of(raw));
    return DoubleArray::ensure(raw);
}

// int64 state indices; only integer dtypes are accepted (a float index would silently truncate).
IndexArray index_array(const py::object& obj, const char* name, std::vector<py::ssize_t> shape,
                       const std::string& expected) {
    py::array raw = as_array(obj, name);
    if (!raw) throw py::value_error(std::string(name) + " must be an integer array");
    const char kind = raw.dtype().kind();
    if (kind != 'i' && kind != 'u' && !(raw.size() == 0))
        throw py::value_error(std::string(name) + " must hold integer state indices, got dtype " +
                              std::string(py::str(raw.dtype())));
    bool ok = raw.ndim() == static_cast<py::ssize_t>(shape.size());
    for (std::size_t i = 0; ok && i < shape.size(); ++i) ok = shape[i] < 0 || raw.shape(i) == shape[i];
    if (!ok)
        throw py::value_error(std::string(name) + " must have shape " + expected + ", got " + shape_of(raw));
    return IndexArray::ensure(raw);
}

// D: (n, P) states, D[i, p] in [0, n_states[p]).
IndexArray state_matrix(const py::object& obj, const char* name, const Tables& tables, py::ssize_t n_rows = -1) {
    const auto P = static_cast<py::ssize_t>(tables.n_variables());
    const std::string expected = "(" + (n_rows < 0 ? std::string("n_points") : std::to_string(n_rows)) + ", " +
                                 std::to_string(P) + ") for " + std::to_string(P) + " discrete variables";
    IndexArray D = index_array(obj, name, {n_rows, P}, expected);
    const int64_t* d = D.data();
    const py::ssize_t n = D.shape(0);
    for (py::ssize_t i = 0; i < n; ++i)
        for (py::ssize_t p = 0; p < P; ++p) {
            const int64_t state = d[i * P + p];
            if (state < 0 || state >= tables.n_states(static_cast<std::size_t>(p)))
                throw py::value_error(std::string(name) + "[" + std::to_string(i) + ", " + std::to_string(p) +
                                      "] = " + std::to_string(state) + " is not a state of discrete variable " +
                                      std::to_string(p) + " (valid: 0.." +
                                      std::to_string(tables.n_states(static_cast<std::size_t>(p)) - 1) + ")");
        }
    return D;
}

DoubleArray parameter_vector(const py::object& obj, const char* name, const Tables& tables) {
    const auto P = static_cast<py::ssize_t>(tables.n_variables());
    DoubleArray x = float_array(obj, name, {P}, "(" + std::to_string(P) + ",), one per discrete variable");
    for (py::ssize_t p = 0; p < P; ++p)
        if (!std::isfinite(x.data()[p]) || x.data()[p] < 0)
            throw py::value_error(std::string(name) + "[" + std::to_string(p) + "] = " + std::to_string(x.data()[p]) +
                                  " must be finite and >= 0");
    return x;
}

fastfm::Modulation<double> make_modulation(int kind, const py::object& coefficients, double exponent) {
    fastfm::Modulation<double> modulation;
    modulation.kind = kind;
    DoubleArray a = float_array(coefficients, "coefficients", {-1}, "(n_terms,)");
    modulation.coefficients.assign(a.data(), a.data() + a.shape(0));
    modulation.exponent = exponent;
    modulation.validate();  // std::invalid_argument -> ValueError
    return modulation;
}

double checked_variance(double variance) {
    if (!std::isfinite(variance)) throw py::value_error("variance must be finite, got " + std::to_string(variance));
    return variance;
}

// Everything a call shares: checked hyperparameters turned into a plan.
struct Hyper {
    const Tables& tables;
    DoubleArray alphas, betas;
    fastfm::Modulation<double> modulation;
    double variance;
};

Hyper check_hyper(const Tables& tables, const py::object& alphas, const py::object& betas, double variance, int kind,
                  const py::object& coefficients, double exponent) {
    return Hyper{tables, parameter_vector(alphas, "alphas", tables), parameter_vector(betas, "betas", tables),
                 make_modulation(kind, coefficients, exponent), checked_variance(variance)};
}

// The vector kernels' lane count, for tests: 0 = the CPU's (FMPlan::wide_vectors), 1 = eight doubles /
// sixteen floats, -1 = four doubles / eight floats.  Both instantiations are compiled into every ISA
// clone and give the same values on any x86-64 CPU (the wide one slower where its vectors are not
// registers), so a machine without AVX-512 can test the code AVX-512 machines run, and the converse.
int g_vector_lanes_override = 0;

fastfm::FMPlan<double> with_lanes(fastfm::FMPlan<double> plan) {
    if (g_vector_lanes_override != 0) plan.wide_vectors = g_vector_lanes_override > 0;
    return plan;
}

// rational_forms: the call evaluates kernel values through kernel_row_chunk (Gram, K·V), which uses
// the rational factor forms (FMPlan::prepare_rational); the other paths skip their tables.
fastfm::FMPlan<double> make_plan(const Hyper& h, std::size_t n_continuous, bool rational_forms = false) {
    fastfm::FMPlan<double> plan =
        with_lanes(fastfm::FMPlan<double>(h.tables, h.alphas.data(), h.betas.data(), h.variance, h.modulation,
                                          n_continuous));
    if (rational_forms) plan.prepare_rational();
    return plan;
}

std::string path_name(fastfm::FactorPath path) {
    switch (path) {
        case fastfm::FactorPath::complete: return "complete";
        case fastfm::FactorPath::tridiagonal: return "tridiagonal";
        default: return "general";
    }
}

// Which factors of the Gram path have the rational form (fm.hpp, prepare_rational_factor) at these
// hyperparameters, and whether the plan uses it: a test and diagnostics hook.
py::dict fm_gram_rational_forms(const Tables& tables, const py::object& alphas, const py::object& betas,
                                double variance, int kind, const py::object& coefficients, double exponent) {
    const Hyper h = check_hyper(tables, alphas, betas, variance, kind, coefficients, exponent);
    const fastfm::FMPlan<double> plan = make_plan(h, 0, true);
    py::list factors;
    for (const auto& var : plan.variables) factors.append(path_name(var.rational));
    py::dict out;
    out["factors"] = factors;
    out["rational"] = plan.rational;
    return out;
}

// ----------------------------------------------------------------------------
// Entry points (same order of arguments as numpy_backend)
// ----------------------------------------------------------------------------

// The row points (C1, D1) and column points (C2, D2) of a Gram-like call, checked; C2 = D2 = None
// means the columns are the rows (the symmetric K(X1, X1)).
struct PointPair {
    DoubleArray C1, C2;
    IndexArray D1, D2;
    bool symmetric;
    py::ssize_t N, M, Dc;
};

PointPair point_pair(const py::object& C1_obj, const py::object& D1_obj, const py::object& C2_obj,
                     const py::object& D2_obj, const Tables& tables) {
    if (C2_obj.is_none() != D2_obj.is_none())
        throw py::value_error("C2 and D2 must both be arrays (cross) or both be None (symmetric, the columns are the rows)");
    const bool symmetric = C2_obj.is_none();
    DoubleArray C1 = float_array(C1_obj, "C1", {-1, -1}, "(N, n_continuous)");
    const py::ssize_t N = C1.shape(0), Dc = C1.shape(1);
    IndexArray D1 = state_matrix(D1_obj, "D1", tables, N);
    DoubleArray C2 = symmetric ? C1 : float_array(C2_obj, "C2", {-1, Dc}, "(M, " + std::to_string(Dc) + ")");
    IndexArray D2 = symmetric ? D1 : state_matrix(D2_obj, "D2", tables, C2.shape(0));
    const py::ssize_t M = C2.shape(0);
    return {std::move(C1), std::move(C2), std::move(D1), std::move(D2), symmetric, N, M, Dc};
}

py::array_t<double> fm_gram(const py::object& C1_obj, const py::object& D1_obj, const py::object& C2_obj,
                            const py::object& D2_obj, const Tables& tables, const py::object& alphas,
                            const py::object& betas, double variance, int kind, const py::object& coefficients,
                            double exponent, int num_threads) {
    const PointPair pts = point_pair(C1_obj, D1_obj, C2_obj, D2_obj, tables);
    const bool symmetric = pts.symmetric;
    const DoubleArray &C1 = pts.C1, &C2 = pts.C2;
    const IndexArray &D1 = pts.D1, &D2 = pts.D2;
    const py::ssize_t N = pts.N, M = pts.M, Dc = pts.Dc;
    const Hyper h = check_hyper(tables, alphas, betas, variance, kind, coefficients, exponent);
    py::array_t<double> K({N, M});
    {
        py::gil_scoped_release release;
        const fastfm::FMPlan<double> plan = make_plan(h, static_cast<std::size_t>(Dc), true);
        const auto cols = fastfm::PointColumns<double>::from_rows(C2.data(), D2.data(), static_cast<std::size_t>(M),
                                                                   static_cast<std::size_t>(Dc), tables.n_variables());
        fastfm::GramProblem<double> pb;
        pb.plan = &plan;
        pb.rows_continuous = C1.data();
        pb.rows_states = D1.data();
        pb.cols = &cols;
        pb.n_rows = static_cast<std::size_t>(N);
        pb.symmetric = symmetric;
        pb.K = K.mutable_data();
        fastfm::run_gram(pb, num_threads, &fastfm_dispatch::gram_tile_f64);
    }
    return K;
}

py::array_t<double> fm_gram_from_argument(const py::object& R_obj, const py::object& D1_obj,
                                          const py::object& D2_obj, const Tables& tables, const py::object& alphas,
                                          const py::object& betas, double variance, int kind,
                                          const py::object& coefficients, double exponent, int num_threads) {
    IndexArray D1 = state_matrix(D1_obj, "D1", tables);
    IndexArray D2 = D2_obj.is_none() ? D1 : state_matrix(D2_obj, "D2", tables);
    const py::ssize_t N = D1.shape(0), M = D2.shape(0);
    DoubleArray R = float_array(R_obj, "R", {N, M}, "(" + std::to_string(N) + ", " + std::to_string(M) + ")");
    const Hyper h = check_hyper(tables, alphas, betas, variance, kind, coefficients, exponent);
    py::array_t<double> K({N, M});
    {
        py::gil_scoped_release release;
        const fastfm::FMPlan<double> plan = make_plan(h, 0, true);
        const auto cols = fastfm::PointColumns<double>::from_rows(nullptr, D2.data(), static_cast<std::size_t>(M), 0,
                                                                   tables.n_variables());
        fastfm::GramProblem<double> pb;
        pb.plan = &plan;
        pb.rows_states = D1.data();
        pb.cols = &cols;
        pb.R = R.data();
        pb.n_rows = static_cast<std::size_t>(N);
        pb.K = K.mutable_data();
        fastfm::run_gram(pb, num_threads, &fastfm_dispatch::gram_tile_f64);
    }
    return K;
}

py::array_t<double> vector_from(const std::vector<double>& values, std::size_t begin, std::size_t count) {
    py::array_t<double> out(static_cast<py::ssize_t>(count));
    for (std::size_t i = 0; i < count; ++i) out.mutable_data()[i] = values[begin + i];
    return out;
}

// The symmetric reduction over the Gram of (C, D); `set_weights(problem)` points the problem at its
// weights (a dense W, or low-rank factors) and runs without the GIL, so it must not touch Python objects.
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

py::tuple fm_grad_reduction(const py::object& C_obj, const py::object& D_obj, const py::object& W_obj,
                            const Tables& tables, const py::object& alphas, const py::object& betas, double variance,
                            int kind, const py::object& coefficients, double exponent, int num_threads,
                            bool symmetric_weights) {
    DoubleArray C = float_array(C_obj, "C", {-1, -1}, "(N, n_continuous)");
    const py::ssize_t N = C.shape(0);
    IndexArray D = state_matrix(D_obj, "D", tables, N);
    DoubleArray W = float_array(W_obj, "W", {N, N}, "(" + std::to_string(N) + ", " + std::to_string(N) + ")");
    const Hyper h = check_hyper(tables, alphas, betas, variance, kind, coefficients, exponent);
    const double* w = W.data();
    return symmetric_reduction(C, D, tables, h, num_threads, [w, symmetric_weights](fastfm::ReductionProblem<double>& pb) {
        pb.W = w;
        pb.symmetric_weights = symmetric_weights;
    });
}

py::tuple fm_reduction_from_argument(const py::object& R_obj, const py::object& D_obj, const py::object& W_obj,
                                     const Tables& tables, const py::object& alphas, const py::object& betas,
                                     double variance, int kind, const py::object& coefficients, double exponent,
                                     int num_threads) {
    IndexArray D = state_matrix(D_obj, "D", tables);
    const py::ssize_t N = D.shape(0);
    const std::string square = "(" + std::to_string(N) + ", " + std::to_string(N) + ")";
    DoubleArray R = float_array(R_obj, "R", {N, N}, square);
    DoubleArray W = float_array(W_obj, "W", {N, N}, square);
    const Hyper h = check_hyper(tables, alphas, betas, variance, kind, coefficients, exponent);
    py::array_t<double> omega({N, N});
    std::vector<double> sums;
    {
        py::gil_scoped_release release;
        const fastfm::FMPlan<double> plan = with_lanes(
            fastfm::FMPlan<double>(tables, h.alphas.data(), h.betas.data(), h.variance, h.modulation, 0, false));
        const auto cols = fastfm::PointColumns<double>::from_rows(nullptr, D.data(), static_cast<std::size_t>(N), 0,
                                                                   tables.n_variables());
        fastfm::ReductionProblem<double> pb;
        pb.plan = &plan;
        pb.rows_states = D.data();
        pb.cols = &cols;
        pb.R = R.data();
        pb.W = W.data();
        pb.N = static_cast<std::size_t>(N);
        pb.omega = omega.mutable_data();
        pb.register_kernel = &fastfm_dispatch::complete_reduction_registers_f64;
        sums = fastfm::run_reduction(pb, num_threads, &fastfm_dispatch::reduction_tile_f64);
    }
    const std::size_t P = tables.n_variables();
    return py::make_tuple(vector_from(sums, 0, P), vector_from(sums, P, P), sums[2 * P], omega);
}

py::array_t<double> fm_neighbour_gram(const py::object& c_obj, const py::object& v_obj, const py::object& C_obj,
                                      const py::object& D_obj, const py::object& var_index_obj,
                                      const py::object& new_state_obj, const Tables& tables,
                                      const py::object& alphas, const py::object& betas, double variance, int kind,
                                      const py::object& coefficients, double exponent, int num_threads) {
    const auto P = static_cast<py::ssize_t>(tables.n_variables());
    DoubleArray C = float_array(C_obj, "C", {-1, -1}, "(N, n_continuous)");
    const py::ssize_t N = C.shape(0), Dc = C.shape(1);
    DoubleArray c = float_array(c_obj, "c", {Dc}, "(" + std::to_string(Dc) + ",)");
    IndexArray D = state_matrix(D_obj, "D", tables, N);
    IndexArray v = index_array(v_obj, "v", {P}, "(" + std::to_string(P) + ",)");
    for (py::ssize_t p = 0; p < P; ++p)
        if (v.data()[p] < 0 || v.data()[p] >= tables.n_states(static_cast<std::size_t>(p)))
            throw py::value_error("v[" + std::to_string(p) + "] = " + std::to_string(v.data()[p]) +
                                  " is not a state of discrete variable " + std::to_string(p) + " (valid: 0.." +
                                  std::to_string(tables.n_states(static_cast<std::size_t>(p)) - 1) + ")");
    IndexArray var_index = index_array(var_index_obj, "var_index", {-1}, "(M,)");
    const py::ssize_t M = var_index.shape(0);
    IndexArray new_state = index_array(new_state_obj, "new_state", {M}, "(" + std::to_string(M) + ",), like var_index");
    for (py::ssize_t m = 0; m < M; ++m) {
        const int64_t p = var_index.data()[m];
        if (p < 0 || p >= P)
            throw py::value_error("var_index[" + std::to_string(m) + "] = " + std::to_string(p) +
                                  " is not a discrete variable index (valid: 0.." + std::to_string(P - 1) + ")");
        const int64_t u = new_state.data()[m];
        if (u < 0 || u >= tables.n_states(static_cast<std::size_t>(p)))
            throw py::value_error("new_state[" + std::to_string(m) + "] = " + std::to_string(u) +
                                  " is not a state of discrete variable " + std::to_string(p) + " (valid: 0.." +
                                  std::to_string(tables.n_states(static_cast<std::size_t>(p)) - 1) + ")");
    }
    const Hyper h = check_hyper(tables, alphas, betas, variance, kind, coefficients, exponent);
    py::array_t<double> K({M, N});
    {
        py::gil_scoped_release release;
        const fastfm::FMPlan<double> plan = make_plan(h, static_cast<std::size_t>(Dc));
        const auto cols = fastfm::PointColumns<double>::from_rows(C.data(), D.data(), static_cast<std::size_t>(N),
                                                                   static_cast<std::size_t>(Dc), tables.n_variables());
        fastfm_dispatch::neighbour_gram_f64(plan, c.data(), v.data(), cols, var_index.data(), new_state.data(),
                                            static_cast<std::size_t>(M), K.mutable_data(), num_threads);
    }
    return K;
}

py::tuple fm_cross_gradient(const py::object& C1_obj, const py::object& D1_obj, const py::object& C2_obj,
                            const py::object& D2_obj, const Tables& tables, const py::object& alphas,
                            const py::object& betas, double variance, int kind, const py::object& coefficients,
                            double exponent, int num_threads) {
    DoubleArray C1 = float_array(C1_obj, "C1", {-1, -1}, "(M, n_continuous)");
    const py::ssize_t M = C1.shape(0), Dc = C1.shape(1);
    IndexArray D1 = state_matrix(D1_obj, "D1", tables, M);
    DoubleArray C2 = float_array(C2_obj, "C2", {-1, Dc}, "(N, " + std::to_string(Dc) + ")");
    const py::ssize_t N = C2.shape(0);
    IndexArray D2 = state_matrix(D2_obj, "D2", tables, N);
    const Hyper h = check_hyper(tables, alphas, betas, variance, kind, coefficients, exponent);
    py::array_t<double> K({M, N});
    py::array_t<double> dK({M, N, Dc});
    {
        py::gil_scoped_release release;
        const fastfm::FMPlan<double> plan = with_lanes(fastfm::FMPlan<double>(
            tables, h.alphas.data(), h.betas.data(), h.variance, h.modulation, static_cast<std::size_t>(Dc), false));
        const auto cols = fastfm::PointColumns<double>::from_rows(C2.data(), D2.data(), static_cast<std::size_t>(N),
                                                                   static_cast<std::size_t>(Dc), tables.n_variables());
        fastfm::CrossGradientProblem<double> pb;
        pb.plan = &plan;
        pb.rows_continuous = C1.data();
        pb.rows_states = D1.data();
        pb.cols = &cols;
        pb.n_rows = static_cast<std::size_t>(M);
        pb.K = K.mutable_data();
        pb.dK = dK.mutable_data();
        fastfm::run_cross_gradient(pb, num_threads, &fastfm_dispatch::cross_gradient_tile_f64);
    }
    return py::make_tuple(K, dK);
}

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

// ============================================================================
// Set kernels (SPEC §4): set_gram, set_grad_reduction.  Begin.
// ============================================================================
namespace fastfm_dispatch {

template <fastfm::MaternOrder Nu>
void set_gram_row_impl(const fastfm::ScaledSets<double>& A, const fastfm::ScaledSets<double>& B, std::size_t a,
                       std::size_t b_begin, fastfm::SetWorkspace<double>& ws, double* row) {
    fastfm::set_gram_row<double, Nu>(A, B, a, b_begin, ws, row);
}

FASTFM_HOT void set_gram_row_f64(int nu_times_two, const fastfm::ScaledSets<double>& A,
                                 const fastfm::ScaledSets<double>& B, std::size_t a, std::size_t b_begin,
                                 fastfm::SetWorkspace<double>& ws, double* row) {
    switch (nu_times_two) {
        case 1: set_gram_row_impl<fastfm::MaternOrder::Half>(A, B, a, b_begin, ws, row); break;
        case 3: set_gram_row_impl<fastfm::MaternOrder::ThreeHalves>(A, B, a, b_begin, ws, row); break;
        default: set_gram_row_impl<fastfm::MaternOrder::FiveHalves>(A, B, a, b_begin, ws, row); break;
    }
}

FASTFM_HOT void set_reduction_row_f64(int nu_times_two, const fastfm::ScaledSets<double>& A, const double* W,
                                      std::size_t a, fastfm::SetWorkspace<double>& ws) {
    switch (nu_times_two) {
        case 1: fastfm::set_reduction_row<double, fastfm::MaternOrder::Half>(A, W, a, ws); break;
        case 3: fastfm::set_reduction_row<double, fastfm::MaternOrder::ThreeHalves>(A, W, a, ws); break;
        default: fastfm::set_reduction_row<double, fastfm::MaternOrder::FiveHalves>(A, W, a, ws); break;
    }
}

}  // namespace fastfm_dispatch

namespace set_bindings {

// sets: (N, m, d) float64, m ≥ 1, d ≥ 1.
DoubleArray sets_array(const py::object& obj, const char* name) {
    DoubleArray X = float_array(obj, name, {-1, -1, -1}, "(n_sets, n_points, dim)");
    if (X.shape(1) < 1 || X.shape(2) < 1)
        throw py::value_error(std::string(name) + " must have at least one point per set and one dimension, got " +
                              shape_of(X));
    return X;
}

DoubleArray length_scale_array(const py::object& obj, py::ssize_t d) {
    DoubleArray ls = float_array(obj, "length_scale", {d}, "(" + std::to_string(d) + ",)");
    for (py::ssize_t k = 0; k < d; ++k)
        if (!(ls.data()[k] > 0.0) || !std::isfinite(ls.data()[k]))
            throw py::value_error("length_scale[" + std::to_string(k) + "] = " + std::to_string(ls.data()[k]) +
                                  " must be positive and finite");
    return ls;
}

int nu_code(double nu) {
    if (nu == 0.5) return 1;
    if (nu == 1.5) return 3;
    if (nu == 2.5) return 5;
    throw py::value_error("nu must be 0.5, 1.5 or 2.5, got " + std::to_string(nu));
}

py::array_t<double> set_gram(const py::object& A_obj, const py::object& B_obj, const py::object& ls_obj, double nu,
                             int num_threads) {
    DoubleArray A = sets_array(A_obj, "A");
    const bool symmetric = B_obj.is_none();
    DoubleArray B = symmetric ? A : sets_array(B_obj, "B");
    if (B.shape(2) != A.shape(2))
        throw py::value_error("A and B must hold points of the same dimension, got A " + shape_of(A) + " and B " +
                              shape_of(B));
    DoubleArray ls = length_scale_array(ls_obj, A.shape(2));
    const int code = nu_code(nu);
    const auto NA = static_cast<std::size_t>(A.shape(0)), NB = static_cast<std::size_t>(B.shape(0));
    py::array_t<double> K({A.shape(0), B.shape(0)});
    double* out = K.mutable_data();
    {
        py::gil_scoped_release release;
        const fastfm::ScaledSets<double> SA(A.data(), NA, static_cast<std::size_t>(A.shape(1)),
                                            static_cast<std::size_t>(A.shape(2)), ls.data());
        const fastfm::ScaledSets<double> SB = symmetric ? SA
                                                        : fastfm::ScaledSets<double>(
                                                              B.data(), NB, static_cast<std::size_t>(B.shape(1)),
                                                              static_cast<std::size_t>(B.shape(2)), ls.data());
        fastfm::set_gram(SA, SB, symmetric, out, num_threads,
                         [&](fastfm::SetWorkspace<double>& ws, std::size_t a, std::size_t b_begin, double* row) {
                             fastfm_dispatch::set_gram_row_f64(code, SA, SB, a, b_begin, ws, row);
                         });
    }
    return K;
}

// (g (d,), Σ_ab W_ab K_ab): one pass gives both (set.hpp, set_grad_reduction).
std::pair<py::array_t<double>, double> set_grad_reduction_and_weighted_gram(const py::object& A_obj,
                                                                           const py::object& W_obj,
                                                                           const py::object& ls_obj, double nu,
                                                                           int num_threads) {
    DoubleArray A = sets_array(A_obj, "A");
    const py::ssize_t N = A.shape(0);
    DoubleArray W = float_array(W_obj, "W", {N, N}, "(" + std::to_string(N) + ", " + std::to_string(N) + ")");
    DoubleArray ls = length_scale_array(ls_obj, A.shape(2));
    const int code = nu_code(nu);
    py::array_t<double> g(A.shape(2) + 1);
    double* out = g.mutable_data();
    {
        py::gil_scoped_release release;
        const fastfm::ScaledSets<double> SA(A.data(), static_cast<std::size_t>(N), static_cast<std::size_t>(A.shape(1)),
                                            static_cast<std::size_t>(A.shape(2)), ls.data());
        const double* w = W.data();
        fastfm::set_grad_reduction(SA, out, num_threads, [&](fastfm::SetWorkspace<double>& ws, std::size_t a) {
            fastfm_dispatch::set_reduction_row_f64(code, SA, w, a, ws);
        });
    }
    const double weighted_gram = out[A.shape(2)];
    return {py::array_t<double>(A.shape(2), out), weighted_gram};
}

py::array_t<double> set_grad_reduction(const py::object& A_obj, const py::object& W_obj, const py::object& ls_obj,
                                       double nu, int num_threads) {
    return set_grad_reduction_and_weighted_gram(A_obj, W_obj, ls_obj, nu, num_threads).first;
}

}  // namespace set_bindings
// ============================================================================
// Set kernels.  End (module definitions: see the end of PYBIND11_MODULE).
// ============================================================================

// ============================================================================
// >>> Large-N GP regression: matrix-free K·V products (fastfm/gp_large.py)
// ============================================================================
namespace fastfm_dispatch {

FASTFM_HOT void matvec_tile_f64(const fastfm::MatvecProblem<double>& pb, fastfm::MatvecWorkspace<double>& ws,
                                std::size_t a0, std::size_t a1) {
    fastfm::matvec_tile(pb, ws, a0, a1);
}

// Vector blocks of the single-precision tile: 16 lanes × 4 where sixteen floats are a register (AVX-512),
// else 8 lanes × FASTFM_SINGLE_NARROW_BLOCKS: on AVX2 four blocks (some spilled from its 16 registers)
// measured 9 % faster than two (K·v at N = 20,000: 0.49 against 0.54 s, 2026-11-24).
#ifndef FASTFM_SINGLE_NARROW_BLOCKS
#define FASTFM_SINGLE_NARROW_BLOCKS 4
#endif

FASTFM_HOT void single_matvec_tile_f32(const fastfm::SingleMatvecProblem<float>& pb,
                                       fastfm::SingleMatvecWorkspace<float>& ws, std::size_t a0, std::size_t a1) {
#if defined(__GNUC__) && !defined(__clang__)
    if (pb.gram.plan->wide_vectors)
        fastfm::single_matvec_tile<float, 16, 4>(pb, ws, a0, a1);
    else
        fastfm::single_matvec_tile<float, 8, FASTFM_SINGLE_NARROW_BLOCKS>(pb, ws, a0, a1);
#else
    fastfm::matvec_tile<double>(pb, ws, a0, a1);  // no vector types: the double path
#endif
}

}  // namespace fastfm_dispatch

namespace {

// K(X1, X2) V (fm_gram_matvec).  Single: kernel values in single precision (matvec_single.hpp,
// fm_gram_matvec_single); None where the hyperparameters have no single-precision form (SinglePlan::from),
// so that the caller uses double.
template <bool Single>
py::object gram_matvec(const py::object& C1_obj, const py::object& D1_obj, const py::object& C2_obj,
                       const py::object& D2_obj, const py::object& V_obj, const Tables& tables,
                       const py::object& alphas, const py::object& betas, double variance, int kind,
                       const py::object& coefficients, double exponent, int num_threads) {
    const PointPair pts = point_pair(C1_obj, D1_obj, C2_obj, D2_obj, tables);
    const bool symmetric = pts.symmetric;
    const DoubleArray &C1 = pts.C1, &C2 = pts.C2;
    const IndexArray &D1 = pts.D1, &D2 = pts.D2;
    const py::ssize_t N = pts.N, M = pts.M, Dc = pts.Dc;
    DoubleArray V = float_array(V_obj, "V", {M, -1}, "(" + std::to_string(M) + ", n_vectors)");
    const py::ssize_t r = V.shape(1);
    const Hyper h = check_hyper(tables, alphas, betas, variance, kind, coefficients, exponent);
    py::array_t<double> out({N, r});
    bool computed = true;
    {
        py::gil_scoped_release release;
        const fastfm::FMPlan<double> plan = make_plan(h, static_cast<std::size_t>(Dc), true);
        const auto cols = fastfm::PointColumns<double>::from_rows(C2.data(), D2.data(), static_cast<std::size_t>(M),
                                                                   static_cast<std::size_t>(Dc), tables.n_variables());
        // V (M, r) -> Vt (r, M): the tile's inner loops then run along contiguous columns
        std::vector<double> Vt(static_cast<std::size_t>(M * r)), out_t(static_cast<std::size_t>(N * r));
        const double* v = V.data();
        for (py::ssize_t j = 0; j < M; ++j)
            for (py::ssize_t c = 0; c < r; ++c) Vt[c * M + j] = v[j * r + c];
        fastfm::SingleMatvecProblem<float> pb;
        pb.gram.plan = &plan;
        pb.gram.rows_continuous = C1.data();
        pb.gram.rows_states = D1.data();
        pb.gram.cols = &cols;
        pb.gram.n_rows = static_cast<std::size_t>(N);
        pb.gram.symmetric = symmetric;
        pb.Vt = Vt.data();
        pb.rank = static_cast<std::size_t>(r);
        fastfm::SinglePlan<float> single_plan;
        if (!Single) {
            fastfm::run_matvec<double>(static_cast<const fastfm::MatvecProblem<double>&>(pb), out_t.data(),
                                       num_threads, &fastfm_dispatch::matvec_tile_f64);
        } else if (fastfm::SinglePlan<float>::from(plan, single_plan)) {
            const fastfm::SingleColumns<float> single_cols(cols);
            pb.single_plan = &single_plan;
            pb.single_cols = &single_cols;
            fastfm::run_matvec<double, fastfm::SingleMatvecProblem<float>, fastfm::SingleMatvecWorkspace<float>>(
                pb, out_t.data(), num_threads, &fastfm_dispatch::single_matvec_tile_f32);
        } else {
            computed = false;
        }
        if (computed) {
            double* o = out.mutable_data();
            for (py::ssize_t a = 0; a < N; ++a)
                for (py::ssize_t c = 0; c < r; ++c) o[a * r + c] = out_t[c * N + a];
        }
    }
    if (!computed) return py::none();
    return std::move(out);
}

py::tuple fm_grad_reduction_low_rank(const py::object& C_obj, const py::object& D_obj, const py::object& U_obj,
                                     const py::object& Z_obj, const Tables& tables, const py::object& alphas,
                                     const py::object& betas, double variance, int kind,
                                     const py::object& coefficients, double exponent, int num_threads) {
    DoubleArray C = float_array(C_obj, "C", {-1, -1}, "(N, n_continuous)");
    const py::ssize_t N = C.shape(0);
    IndexArray D = state_matrix(D_obj, "D", tables, N);
    DoubleArray U = float_array(U_obj, "U", {N, -1}, "(" + std::to_string(N) + ", rank)");
    const py::ssize_t r = U.shape(1);
    DoubleArray Z = float_array(Z_obj, "Z", {N, r}, "(" + std::to_string(N) + ", " + std::to_string(r) + ") like U");
    const Hyper h = check_hyper(tables, alphas, betas, variance, kind, coefficients, exponent);
    // transposed (rank, N): the tile reads each factor column along contiguous points
    std::vector<double> U_t(static_cast<std::size_t>(N * r)), Z_t(static_cast<std::size_t>(N * r));
    for (py::ssize_t a = 0; a < N; ++a)
        for (py::ssize_t c = 0; c < r; ++c) {
            U_t[c * N + a] = U.data()[a * r + c];
            Z_t[c * N + a] = Z.data()[a * r + c];
        }
    return symmetric_reduction(C, D, tables, h, num_threads, [&](fastfm::ReductionProblem<double>& pb) {
        pb.U_t = U_t.data();
        pb.Z_t = Z_t.data();
        pb.low_rank = static_cast<std::size_t>(r);
    });
}

}  // namespace
// ============================================================================
// <<< Large-N GP regression
// ============================================================================


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

    m.def("fm_gram", &fm_gram, py::arg("C1"), py::arg("D1"), py::arg("C2"), py::arg("D2"), py::arg("tables"),
          py::arg("alphas"), py::arg("betas"), py::arg("variance"), py::arg("kind"), py::arg("coefficients"),
          py::arg("exponent"), py::arg("num_threads") = 0,
          "FM Gram matrix, shape (N, M), or (N, N) when C2 = D2 = None (computed once per pair and mirrored).");
    m.def("fm_gram_rational_forms", &fm_gram_rational_forms, py::arg("tables"), py::arg("alphas"), py::arg("betas"),
          py::arg("variance"), py::arg("kind"), py::arg("coefficients"), py::arg("exponent"),
          "{'factors': per variable 'complete', 'tridiagonal' or 'general' (no rational form), 'rational': bool}: "
          "the factors that the Gram and K·V paths evaluate in rational form at these hyperparameters.");
    m.def("fm_gram_from_argument", &fm_gram_from_argument, py::arg("R"), py::arg("D1"), py::arg("D2"),
          py::arg("tables"), py::arg("alphas"), py::arg("betas"), py::arg("variance"), py::arg("kind"),
          py::arg("coefficients"), py::arg("exponent"), py::arg("num_threads") = 0,
          "K_ab = σ² Π_p F_p(v_a, v_b, α_p R_ab), shape (N, M).");
    m.def("fm_grad_reduction", &fm_grad_reduction, py::arg("C"), py::arg("D"), py::arg("W"), py::arg("tables"),
          py::arg("alphas"), py::arg("betas"), py::arg("variance"), py::arg("kind"), py::arg("coefficients"),
          py::arg("exponent"), py::arg("num_threads") = 0, py::arg("symmetric_weights") = false,
          "(g_lengthscale (Dc,), g_alpha (P,), g_beta (P,), g_variance): Σ_ab W_ab ∂K_ab/∂log ψ. "
          "symmetric_weights=True promises W = Wᵀ and reads only W's upper triangle.");
    m.def("fm_reduction_from_argument", &fm_reduction_from_argument, py::arg("R"), py::arg("D"), py::arg("W"),
          py::arg("tables"), py::arg("alphas"), py::arg("betas"), py::arg("variance"), py::arg("kind"),
          py::arg("coefficients"), py::arg("exponent"), py::arg("num_threads") = 0,
          "(g_alpha, g_beta, g_variance, omega (N, N)) given the continuous argument R.");
    m.def("fm_neighbour_gram", &fm_neighbour_gram, py::arg("c"), py::arg("v"), py::arg("C"), py::arg("D"),
          py::arg("var_index"), py::arg("new_state"), py::arg("tables"), py::arg("alphas"), py::arg("betas"),
          py::arg("variance"), py::arg("kind"), py::arg("coefficients"), py::arg("exponent"),
          py::arg("num_threads") = 0, "Rows k(x_m, X) of graph neighbours x_m of one point, shape (M, N).");
    m.def("fm_cross_gradient", &fm_cross_gradient, py::arg("C1"), py::arg("D1"), py::arg("C2"), py::arg("D2"),
          py::arg("tables"), py::arg("alphas"), py::arg("betas"), py::arg("variance"), py::arg("kind"),
          py::arg("coefficients"), py::arg("exponent"), py::arg("num_threads") = 0,
          "(K (M, N), dK (M, N, Dc)) with dK[m, n, d] = ∂K[m, n]/∂C1[m, d].");

    m.def(
        "_override_vector_lanes",
        [](const std::string& lanes) {
            if (lanes == "cpu")
                g_vector_lanes_override = 0;
            else if (lanes == "wide")
                g_vector_lanes_override = 1;
            else if (lanes == "narrow")
                g_vector_lanes_override = -1;
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
            info["simd"] = std::string(FASTFM_DISPATCH_NAME) + "; running " + fastfm_dispatch::active_isa();
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

    // ---- Set kernels (SPEC §4).  Begin. ---------------------------------------------
    m.def("set_gram", &set_bindings::set_gram, py::arg("A"), py::arg("B"), py::arg("length_scale"),
          py::arg("nu") = 2.5, py::arg("num_threads") = 0,
          "Set Gram K[a, b] = 1/(m m') Σ_ij k_ν(‖(A[a,i] − B[b,j])/ℓ‖), unit-amplitude Matérn; "
          "A (NA, m, d), B (NB, m', d) or None (symmetric: pairs computed once).");
    m.def("set_grad_reduction", &set_bindings::set_grad_reduction, py::arg("A"), py::arg("W"),
          py::arg("length_scale"), py::arg("nu") = 2.5, py::arg("num_threads") = 0,
          "g (d,): g_k = Σ_ab W_ab ∂K_ab/∂log ℓ_k for K = set_gram(A, None, ℓ, ν).");
    m.def("set_grad_reduction_and_weighted_gram", &set_bindings::set_grad_reduction_and_weighted_gram,
          py::arg("A"), py::arg("W"), py::arg("length_scale"), py::arg("nu") = 2.5, py::arg("num_threads") = 0,
          "(g (d,), Σ_ab W_ab K_ab) from one pass over the pairs.");
    // ---- Set kernels.  End. ---------------------------------------------------------
    // ========================================================================
    // Hierarchical (conditional-space) kernel, SPEC §3 — csrc/include/fastfm/hier.hpp.
    // Signatures mirror numpy_backend.hier_gram / hier_grad_reduction.
    // ========================================================================
    using MaskArray = py::array_t<uint8_t, py::array::c_style | py::array::forcecast>;
    struct HierInputs {
        DoubleArray V;
        MaskArray M;
    };
    // V (n, n_dims) float64 and M (n, n_dims) activity (0/1), shapes checked.
    auto hier_inputs = [](const py::object& V_obj, const py::object& M_obj, const char* V_name, const char* M_name,
                          py::ssize_t n_dims) {
        const std::string expected = "(n_points, " + (n_dims < 0 ? std::string("n_dims") : std::to_string(n_dims)) + ")";
        DoubleArray V = float_array(V_obj, V_name, {-1, n_dims}, expected);
        py::array raw = as_array(M_obj, M_name);
        if (!raw || raw.ndim() != 2 || raw.shape(0) != V.shape(0) || raw.shape(1) != V.shape(1))
            throw py::value_error(std::string(M_name) + " must have the shape of " + V_name + ", " + shape_of(V) +
                                  ", got " + (raw ? shape_of(raw) : std::string("a non-array")));
        MaskArray M = MaskArray::ensure(raw);
        for (py::ssize_t k = 0; k < M.size(); ++k)
            if (M.data()[k] > 1)
                throw py::value_error(std::string(M_name) + " must hold 0 (inactive) or 1 (active) entries");
        return HierInputs{V, M};
    };
    // The per-dimension hyperparameters and scalars, checked; returns the problem without points.
    auto hier_problem = [](py::ssize_t n_dims, const py::object& is_real_obj, const py::object& omega_obj,
                           const py::object& rho_pi_obj, double lengthscale, double variance, int profile,
                           MaskArray& is_real, DoubleArray& rho_pi) {
        const std::string per_dim = "(" + std::to_string(n_dims) + ",), one per dimension";
        is_real = MaskArray::ensure(as_array(is_real_obj, "is_real"));
        if (!is_real || is_real.ndim() != 1 || is_real.shape(0) != n_dims)
            throw py::value_error("is_real must have shape " + per_dim);
        DoubleArray omega = float_array(omega_obj, "omega", {n_dims}, per_dim);
        rho_pi = float_array(rho_pi_obj, "rho_pi", {n_dims}, per_dim);
        for (py::ssize_t i = 0; i < n_dims; ++i)
            if (!std::isfinite(omega.data()[i]) || omega.data()[i] < 0 || !std::isfinite(rho_pi.data()[i]))
                throw py::value_error("omega[" + std::to_string(i) + "] = " + std::to_string(omega.data()[i]) +
                                      " and rho_pi must be finite, omega >= 0");
        if (!(lengthscale > 0) || !std::isfinite(lengthscale))
            throw py::value_error("lengthscale must be finite and > 0, got " + std::to_string(lengthscale));
        if (profile != fastfm::kHierRBF && profile != fastfm::kHierMatern52)
            throw py::value_error("profile must be 0 (RBF) or 1 (Matern 5/2), got " + std::to_string(profile));
        fastfm::HierProblem<double> pb;
        pb.is_real = is_real.data();
        pb.omega2.resize(static_cast<std::size_t>(n_dims));
        for (py::ssize_t i = 0; i < n_dims; ++i) pb.omega2[i] = omega.data()[i] * omega.data()[i];
        pb.inv_lengthscale2 = 1.0 / (lengthscale * lengthscale);
        pb.variance = checked_variance(variance);
        pb.profile = profile;
        return pb;
    };

    m.def(
        "hier_gram",
        [hier_inputs, hier_problem](const py::object& V1_obj, const py::object& M1_obj, const py::object& V2_obj,
                                    const py::object& M2_obj, const py::object& is_real_obj,
                                    const py::object& omega_obj, const py::object& rho_pi_obj, double lengthscale,
                                    double variance, int profile, int num_threads) {
            HierInputs in1 = hier_inputs(V1_obj, M1_obj, "V1", "M1", -1);
            const py::ssize_t N = in1.V.shape(0), n_dims = in1.V.shape(1);
            const bool symmetric = V2_obj.is_none();
            if (symmetric != M2_obj.is_none()) throw py::value_error("V2 and M2 must both be None or both arrays");
            HierInputs in2 = symmetric ? in1 : hier_inputs(V2_obj, M2_obj, "V2", "M2", n_dims);
            const py::ssize_t M = in2.V.shape(0);
            MaskArray is_real;
            DoubleArray rho_pi;
            fastfm::HierProblem<double> pb =
                hier_problem(n_dims, is_real_obj, omega_obj, rho_pi_obj, lengthscale, variance, profile, is_real, rho_pi);
            py::array_t<double> K({N, M});
            {
                py::gil_scoped_release release;
                const auto n = static_cast<std::size_t>(n_dims);
                const auto p1 = fastfm::HierPoints<double>::build(in1.V.data(), in1.M.data(),
                                                                  static_cast<std::size_t>(N), n, is_real.data(),
                                                                  rho_pi.data());
                const auto p2 = symmetric ? fastfm::HierPoints<double>()
                                          : fastfm::HierPoints<double>::build(in2.V.data(), in2.M.data(),
                                                                              static_cast<std::size_t>(M), n,
                                                                              is_real.data(), rho_pi.data());
                pb.p1 = &p1;
                pb.p2 = symmetric ? &p1 : &p2;
                fastfm::hier_gram(pb, K.mutable_data(), num_threads);
            }
            return K;
        },
        py::arg("V1"), py::arg("M1"), py::arg("V2"), py::arg("M2"), py::arg("is_real"), py::arg("omega"),
        py::arg("rho_pi"), py::arg("lengthscale"), py::arg("variance"), py::arg("profile"),
        py::arg("num_threads") = 0,
        "Hierarchical-kernel Gram, shape (N, M), or (N, N) when V2 = M2 = None (each pair once, mirrored).");
    m.def(
        "hier_grad_reduction",
        [hier_inputs, hier_problem](const py::object& V_obj, const py::object& M_obj, const py::object& W_obj,
                                    const py::object& is_real_obj, const py::object& omega_obj,
                                    const py::object& rho_pi_obj, double lengthscale, double variance, int profile,
                                    int num_threads) {
            HierInputs in = hier_inputs(V_obj, M_obj, "V", "M", -1);
            const py::ssize_t N = in.V.shape(0), n_dims = in.V.shape(1);
            DoubleArray W = float_array(W_obj, "W", {N, N}, "(" + std::to_string(N) + ", " + std::to_string(N) + ")");
            MaskArray is_real;
            DoubleArray rho_pi;
            fastfm::HierProblem<double> pb =
                hier_problem(n_dims, is_real_obj, omega_obj, rho_pi_obj, lengthscale, variance, profile, is_real, rho_pi);
            py::array_t<double> t(n_dims), u(n_dims);
            double g_variance = 0.0;
            {
                py::gil_scoped_release release;
                const auto points = fastfm::HierPoints<double>::build(in.V.data(), in.M.data(),
                                                                      static_cast<std::size_t>(N),
                                                                      static_cast<std::size_t>(n_dims),
                                                                      is_real.data(), rho_pi.data());
                pb.p1 = pb.p2 = &points;
                fastfm::hier_grad_reduction(pb, W.data(), t.mutable_data(), u.mutable_data(), &g_variance,
                                            num_threads);
            }
            return py::make_tuple(t, u, g_variance);
        },
        py::arg("V"), py::arg("M"), py::arg("W"), py::arg("is_real"), py::arg("omega"), py::arg("rho_pi"),
        py::arg("lengthscale"), py::arg("variance"), py::arg("profile"), py::arg("num_threads") = 0,
        "(t (n_dims,), u (n_dims,), g_variance): the sums of numpy_backend.hier_grad_reduction.");
    // ===================== end of the hierarchical kernel section =====================

    // >>> Large-N GP regression (fastfm/gp_large.py)
    m.def("fm_gram_matvec", &gram_matvec<false>, py::arg("C1"), py::arg("D1"), py::arg("C2"), py::arg("D2"),
          py::arg("V"), py::arg("tables"), py::arg("alphas"), py::arg("betas"), py::arg("variance"), py::arg("kind"),
          py::arg("coefficients"), py::arg("exponent"), py::arg("num_threads") = 0,
          "K(X1, X2) V, shape (N, r), without storing K; C2 = D2 = None for the symmetric K(X1, X1).");
    m.def("fm_gram_matvec_single", &gram_matvec<true>, py::arg("C1"), py::arg("D1"), py::arg("C2"),
          py::arg("D2"), py::arg("V"), py::arg("tables"), py::arg("alphas"), py::arg("betas"), py::arg("variance"),
          py::arg("kind"), py::arg("coefficients"), py::arg("exponent"), py::arg("num_threads") = 0,
          "fm_gram_matvec with kernel values in single precision (products in double), or None where these "
          "hyperparameters have no single-precision form.");
    m.def("fm_grad_reduction_low_rank", &fm_grad_reduction_low_rank, py::arg("C"), py::arg("D"), py::arg("U"),
          py::arg("Z"), py::arg("tables"), py::arg("alphas"), py::arg("betas"), py::arg("variance"), py::arg("kind"),
          py::arg("coefficients"), py::arg("exponent"), py::arg("num_threads") = 0,
          "fm_grad_reduction with W = U Zᵀ (U, Z of shape (N, r)), W never formed.");
    // <<< Large-N GP regression
}

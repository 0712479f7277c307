// Bindings of the FM kernel: Gram, gradient reductions, graph-neighbour Gram, cross gradient.
// Signatures mirror the private functions of fastfm/_backends/numpy_backend.py (same order of
// arguments); fastfm/_backends/cpp.py adapts the Python objects to them.  The hot work runs in the
// entry points of csrc/dispatch/ (one clone per ISA), reached through the drivers of fm.hpp.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "py/boundary.hpp"

namespace fastfm_py {

namespace {

// r_a = Σ_b (W_ab + W_ba) K_ab, or 2 Σ_b W_ab K_ab when W is symmetric (N × N arrays).  Each row's sum runs over b
// in order, as one loop per row would, but four rows at a time: one row's sum is a chain of dependent additions,
// four are independent chains that hide the adder's latency (one row at a time, the symmetric case took half of
// fm_grad_reduction_sum's own time on the NAS-like space).
template <bool SymmetricWeights, std::size_t Rows>
void weight_share_rows(const double* W, const double* K, std::size_t n, std::size_t a, double* r) {
    double sums[Rows] = {};
    for (std::size_t b = 0; b < n; ++b)
        for (std::size_t i = 0; i < Rows; ++i) {
            const std::size_t ab = (a + i) * n + b;
            sums[i] += (SymmetricWeights ? W[ab] : W[ab] + W[b * n + a + i]) * K[ab];
        }
    for (std::size_t i = 0; i < Rows; ++i) r[a + i] = SymmetricWeights ? sums[i] * 2.0 : sums[i];
}

template <bool SymmetricWeights>
void weight_share_sums(const double* W, const double* K, std::size_t n, double* r) {
    constexpr std::size_t kRows = 4;
    std::size_t a = 0;
    for (; a + kRows <= n; a += kRows) weight_share_rows<SymmetricWeights, kRows>(W, K, n, a, r);
    for (; a < n; ++a) weight_share_rows<SymmetricWeights, 1>(W, K, n, a, r);
}

void weight_share_sums(const double* W, const double* K, std::size_t n, bool symmetric_weights, double* r) {
    if (symmetric_weights)
        weight_share_sums<true>(W, K, n, r);
    else
        weight_share_sums<false>(W, K, n, r);
}

// β block += Σ_a r_a G_a: a unit-diagonal part's weights' share, G = ∂log w/∂log β (n × P, row-major).
void add_weight_share(const std::vector<double>& r, const double* G, std::size_t P, double* beta) {
    for (std::size_t a = 0; a < r.size(); ++a)
        for (std::size_t p = 0; p < P; ++p) beta[p] += r[a] * G[a * P + p];
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

// fm_grad_reduction of the unit-diagonal kernel's unscaled K with the weights W ∘ wwᵀ (formed pair by pair), and
// per point r_a = Σ_b (W_ab + W_ba) w_a w_b K_ab from the Gram's chunks (fastfm::run_weighted_row_sums): with
// G = ∂log w/∂log β the caller adds r @ G to the β block (fm._unit_diagonal_reduction), and no N × N array but W
// is held.
py::tuple fm_unit_diagonal_reduction(const py::object& C_obj, const py::object& D_obj, const py::object& W_obj,
                                     const py::object& w_obj, const Tables& tables, const py::object& alphas,
                                     const py::object& betas, double variance, int kind,
                                     const py::object& coefficients, double exponent, int num_threads,
                                     bool symmetric_weights) {
    DoubleArray C = float_array(C_obj, "C", {-1, -1}, "(N, n_continuous)");
    const py::ssize_t N = C.shape(0);
    IndexArray D = state_matrix(D_obj, "D", tables, N);
    DoubleArray W = float_array(W_obj, "W", {N, N}, "(" + std::to_string(N) + ", " + std::to_string(N) + ")");
    DoubleArray row_weights = float_array(w_obj, "w", {N}, "(" + std::to_string(N) + ",)");
    const Hyper h = check_hyper(tables, alphas, betas, variance, kind, coefficients, exponent);
    const double* weights = W.data();
    const double* rw = row_weights.data();
    py::tuple sums = symmetric_reduction(C, D, tables, h, num_threads,
                                         [weights, rw, symmetric_weights](fastfm::ReductionProblem<double>& pb) {
        pb.W = weights;
        pb.row_weights = rw;
        pb.symmetric_weights = symmetric_weights;
    });
    py::array_t<double> per_point(N);
    {
        py::gil_scoped_release release;
        const std::size_t n = static_cast<std::size_t>(N), dc = static_cast<std::size_t>(C.shape(1));
        const fastfm::FMPlan<double> plan = make_plan(h, dc, true);   // the Gram's plan, as fm_gram's
        const std::vector<double> r =
            fastfm::run_weighted_row_sums(plan, C.data(), D.data(), n, weights, rw, symmetric_weights, num_threads,
                                          &fastfm_dispatch::gram_tile_f64);
        std::copy(r.begin(), r.end(), per_point.mutable_data());
    }
    return py::make_tuple(sums[0], sums[1], sums[2], sums[3], per_point);
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

// ---- A sum of FM kernels on the same points (fm_gram_sum, fm_grad_reduction_sum) ----
// Part k is an FM kernel on the continuous columns C scaled by its own lengthscales and on discrete
// columns of its own (states[k], tables[k]), with its α, β (concatenated over the parts, tables[k]'s
// count each) and variance.  AdditiveFM is such a sum (the product, one term per discrete variable):
// one call for all of its parts saves each part's Python bookkeeping and call overhead, ~12 µs of a
// part's ~30 µs at 100 points (docs/benchmarks/suggestion.md, "AdditiveFM's parts in one call").
struct PartSum {
    DoubleArray C, lengthscales, alphas, betas, variances;
    std::vector<IndexArray> states;
    std::vector<const Tables*> tables;
    std::vector<std::size_t> offsets;  // part k's α and β start at offsets[k]
    fastfm::Modulation<double> modulation;
    py::ssize_t N = 0, Dc = 0;
    std::size_t n_parts = 0;

    // `points` (n × Dc) / lengthscales[k], as numpy's C / θ (the same division, so the same bits as the part's
    // own call); by default the points C
    std::vector<double> scaled(std::size_t k, const double* points = nullptr, py::ssize_t n = -1) const {
        if (points == nullptr) points = C.data(), n = N;
        std::vector<double> out(static_cast<std::size_t>(n * Dc));
        const double* ls = lengthscales.data() + k * static_cast<std::size_t>(Dc);
        for (py::ssize_t a = 0; a < n; ++a)
            for (py::ssize_t d = 0; d < Dc; ++d) out[a * Dc + d] = points[a * Dc + d] / ls[d];
        return out;
    }
    // the Gram takes the rational forms and the continuant path; the reduction neither (symmetric_reduction)
    fastfm::FMPlan<double> plan(std::size_t k, bool rational_forms) const {
        fastfm::FMPlan<double> plan = with_lanes(fastfm::FMPlan<double>(
            *tables[k], alphas.data() + offsets[k], betas.data() + offsets[k], variances.data()[k], modulation,
            static_cast<std::size_t>(Dc), /*allow_tridiagonal=*/rational_forms));
        if (rational_forms) plan.prepare_rational();
        return plan;
    }
};

PartSum check_part_sum(const py::object& C_obj, const py::object& lengthscales_obj, const py::list& states_obj,
                       const py::list& tables_obj, const py::object& alphas_obj, const py::object& betas_obj,
                       const py::object& variances_obj, int kind, const py::object& coefficients, double exponent) {
    PartSum s;
    s.C = float_array(C_obj, "C", {-1, -1}, "(N, n_continuous)");
    s.N = s.C.shape(0);
    s.Dc = s.C.shape(1);
    s.n_parts = py::len(tables_obj);
    const auto n_parts = static_cast<py::ssize_t>(s.n_parts);
    if (s.n_parts == 0) throw py::value_error("tables must name at least one part, got an empty list");
    if (py::len(states_obj) != s.n_parts)
        throw py::value_error("states must hold one state matrix per part (" + std::to_string(s.n_parts) +
                              "), got " + std::to_string(py::len(states_obj)));
    s.lengthscales = float_array(lengthscales_obj, "lengthscales", {n_parts, s.Dc},
                                 "(" + std::to_string(n_parts) + ", " + std::to_string(s.Dc) + ")");
    for (py::ssize_t i = 0; i < s.lengthscales.size(); ++i)
        if (!(std::isfinite(s.lengthscales.data()[i]) && s.lengthscales.data()[i] > 0))
            throw py::value_error("lengthscales must be positive and finite, got " +
                                  std::to_string(s.lengthscales.data()[i]));
    std::size_t total = 0;
    for (std::size_t k = 0; k < s.n_parts; ++k) {
        s.tables.push_back(&tables_obj[k].cast<const Tables&>());
        const std::string name = "states[" + std::to_string(k) + "]";
        s.states.push_back(state_matrix(states_obj[k], name.c_str(), *s.tables[k], s.N));
        s.offsets.push_back(total);
        total += s.tables[k]->n_variables();
    }
    const std::string per_variable = "(" + std::to_string(total) + ",), the parts' variables concatenated";
    s.alphas = float_array(alphas_obj, "alphas", {static_cast<py::ssize_t>(total)}, per_variable);
    s.betas = float_array(betas_obj, "betas", {static_cast<py::ssize_t>(total)}, per_variable);
    for (std::size_t i = 0; i < total; ++i)
        if (!(std::isfinite(s.alphas.data()[i]) && s.alphas.data()[i] >= 0 && std::isfinite(s.betas.data()[i]) &&
              s.betas.data()[i] >= 0))
            throw py::value_error("alphas and betas must be finite and >= 0, got alphas[" + std::to_string(i) +
                                  "] = " + std::to_string(s.alphas.data()[i]) + ", betas[" + std::to_string(i) +
                                  "] = " + std::to_string(s.betas.data()[i]));
    s.variances = float_array(variances_obj, "variances", {n_parts}, "(" + std::to_string(n_parts) + ",)");
    for (std::size_t k = 0; k < s.n_parts; ++k) checked_variance(s.variances.data()[k]);
    s.modulation = make_modulation(kind, coefficients, exponent);
    return s;
}

// `out` given to a part sum: written in place, so no conversion (a converted copy would leave the caller's array
// unchanged); a writable C-contiguous float64 array of the shape.
py::array_t<double> in_place_output(const py::object& out_obj, const char* name,
                                    const std::vector<py::ssize_t>& shape) {
    py::array raw = as_array(out_obj, name);
    bool ok = raw.dtype().is(py::dtype::of<double>()) && raw.ndim() == static_cast<py::ssize_t>(shape.size()) &&
              (raw.flags() & py::array::c_style) && raw.writeable();
    std::string expected = "(";
    for (std::size_t i = 0; i < shape.size(); ++i) {
        ok = ok && raw.shape(static_cast<py::ssize_t>(i)) == shape[i];
        expected += (i ? ", " : "") + std::to_string(shape[i]);
    }
    if (!ok)
        throw py::value_error(std::string(name) + " must be a writable C-contiguous float64 array of shape " +
                              expected + "), got dtype " + std::string(py::str(raw.dtype())) + " and shape " +
                              shape_of(raw));
    return py::reinterpret_borrow<py::array_t<double>>(raw);
}

// The entries of a per-part argument: `list_obj` None (every part's entry None) or a list with one entry per part,
// each None or the part's value (`what` names the accepted entries in the error for a list of another length).
std::vector<py::object> part_entries(const py::object& list_obj, const char* name, std::size_t n_parts,
                                     const char* what) {
    std::vector<py::object> entries(n_parts, py::none());
    if (list_obj.is_none()) return entries;
    const py::list list = list_obj.cast<py::list>();
    if (py::len(list) != n_parts)
        throw py::value_error(std::string(name) + " must hold one entry per part (" + std::to_string(n_parts) +
                              "), " + what + ", got " + std::to_string(py::len(list)));
    for (std::size_t k = 0; k < n_parts; ++k) entries[k] = list[k];
    return entries;
}

// The parts' unit-diagonal weights (FMKernel._unit_weights) on the rows or on the columns, from the entries of
// a `weights` argument (part_entries: None, not scaled, or a float array of shape (n,)); a part without weights
// gets an empty array.
std::vector<DoubleArray> part_weights(const std::vector<py::object>& entries, const char* name, py::ssize_t n) {
    const std::size_t n_parts = entries.size();
    std::vector<DoubleArray> out(n_parts);
    for (std::size_t k = 0; k < n_parts; ++k) {
        if (entries[k].is_none()) continue;
        const std::string entry = std::string(name) + "[" + std::to_string(k) + "]";
        out[k] = float_array(entries[k], entry.c_str(), {n}, "(" + std::to_string(n) + ",)");
    }
    return out;
}

// Σ_k K_k (N × N), added part by part in order into `out` (or into a new array, part 0 written there): the
// same sums, in the same order, as the parts' Grams added by numpy.  Returns (K, diagonals (n_parts, N)).  With
// `weights` (one entry per part, None or its unit-diagonal row weights w, shape (N,)), part k with weights is
// w_a K_k,ab w_b (numpy's K * w[:, None] * w[None, :], the same products in the same order) and the call returns
// (K, diagonals, part_grams): part_grams[k] that scaled Gram (a new N × N array) where part k has weights, else
// None, for fm_grad_reduction_sum's β share; its diagonal is the scaled one.
py::tuple fm_gram_sum(const py::object& C_obj, const py::object& lengthscales_obj, const py::list& states_obj,
                      const py::list& tables_obj, const py::object& alphas_obj, const py::object& betas_obj,
                      const py::object& variances_obj, int kind, const py::object& coefficients, double exponent,
                      int num_threads, const py::object& out_obj, const py::object& weights_obj, bool keep_grams,
                      const py::object& grams_out_obj, const py::object& workspace_obj) {
    const PartSum s = check_part_sum(C_obj, lengthscales_obj, states_obj, tables_obj, alphas_obj, betas_obj,
                                     variances_obj, kind, coefficients, exponent);
    const py::ssize_t N = s.N;
    const std::vector<py::object> weight_entries = part_entries(weights_obj, "weights", s.n_parts, "None or an array");
    const std::vector<py::object> gram_entries = part_entries(grams_out_obj, "grams_out", s.n_parts,
                                                              "None or an array");
    const std::vector<DoubleArray> weights = part_weights(weight_entries, "weights", N);
    std::vector<bool> has_weights(s.n_parts);
    for (std::size_t k = 0; k < s.n_parts; ++k) has_weights[k] = !weight_entries[k].is_none();
    const bool fresh = out_obj.is_none();
    py::array_t<double> K = fresh ? py::array_t<double>({N, N}) : in_place_output(out_obj, "out", {N, N});
    py::array_t<double> diagonals({static_cast<py::ssize_t>(s.n_parts), N});
    // the kept Grams: the caller's grams_out[k] (the previous call's, reused) or new arrays, with the GIL held.  A
    // likelihood evaluation at 200 points on the NAS-like space (ten ordinals) allocated ten of them and the scratch,
    // their pages faulted in anew at every call: 9.4 ms an evaluation against 8.3 ms with them reused
    // (docs/benchmarks/suggestion.md, "The likelihood's arrays reused")
    std::vector<py::array_t<double>> part_grams(s.n_parts);
    for (std::size_t k = 0; k < s.n_parts; ++k) {
        if (!(has_weights[k] && keep_grams)) continue;
        if (gram_entries[k].is_none()) {
            part_grams[k] = py::array_t<double>({N, N});
            continue;
        }
        const std::string entry = "grams_out[" + std::to_string(k) + "]";
        part_grams[k] = in_place_output(gram_entries[k], entry.c_str(), {N, N});
        if (part_grams[k].data() == K.data())
            throw py::value_error(entry + " must not be the array out: the parts' sum would overwrite it");
    }
    // the scratch of the parts that are neither kept nor written into K directly: the caller's or a new one
    const bool given_workspace = !workspace_obj.is_none();
    py::array_t<double> workspace;
    if (given_workspace) {
        workspace = in_place_output(workspace_obj, "workspace", {N, N});
        bool shared = workspace.data() == K.data();
        for (std::size_t k = 0; k < s.n_parts; ++k)
            shared = shared || (has_weights[k] && keep_grams && workspace.data() == part_grams[k].data());
        if (shared)
            throw py::value_error("workspace must not be out or one of grams_out: it is overwritten part by part");
    }
    {
        py::gil_scoped_release release;
        double* k_out = K.mutable_data();
        double* diag = diagonals.mutable_data();
        const std::size_t n = static_cast<std::size_t>(N), dc = static_cast<std::size_t>(s.Dc);
        std::unique_ptr<double[]> owned_scratch;   // every entry is written before it is read: no zero fill
        double* scratch = given_workspace ? workspace.mutable_data() : nullptr;
        for (std::size_t k = 0; k < s.n_parts; ++k) {
            const bool weighted = has_weights[k];
            const bool kept = weighted && keep_grams;
            const bool direct = fresh && k == 0 && !weighted;
            if (!direct && !kept && !scratch) {
                owned_scratch.reset(new double[n * n]);
                scratch = owned_scratch.get();
            }
            double* target = kept ? part_grams[k].mutable_data() : direct ? k_out : scratch;
            const std::vector<double> C = s.scaled(k);
            const fastfm::FMPlan<double> plan = s.plan(k, true);
            const auto cols = fastfm::PointColumns<double>::from_rows(C.data(), s.states[k].data(), n, dc,
                                                                       s.tables[k]->n_variables());
            fastfm::GramProblem<double> pb;
            pb.plan = &plan;
            pb.rows_continuous = C.data();
            pb.rows_states = s.states[k].data();
            pb.cols = &cols;
            pb.n_rows = n;
            pb.symmetric = true;
            pb.K = target;
            fastfm::run_gram(pb, num_threads, &fastfm_dispatch::gram_tile_f64);
            // the row weights, the diagonal and the sum row by row, while the row is in L1 (three passes over the
            // N × N arrays before; the same time at 200 points, docs/benchmarks/suggestion.md, "The bindings' passes
            // over N × N arrays")
            const double* w = weighted ? weights[k].data() : nullptr;
            for (std::size_t a = 0; a < n; ++a) {
                double* row = target + a * n;
                if (weighted)
                    for (std::size_t b = 0; b < n; ++b) row[b] = row[b] * w[a] * w[b];
                diag[k * n + a] = row[a];
                double* sum_row = k_out + a * n;
                if (fresh && k == 0 && weighted)
                    std::copy(row, row + n, sum_row);
                else if (!direct)
                    for (std::size_t b = 0; b < n; ++b) sum_row[b] += row[b];
            }
        }
    }
    if (weights_obj.is_none()) return py::make_tuple(K, diagonals);
    py::list grams;
    for (std::size_t k = 0; k < s.n_parts; ++k) {
        if (has_weights[k] && keep_grams) grams.append(part_grams[k]);
        else grams.append(py::none());
    }
    return py::make_tuple(K, diagonals, grams);
}

// Every part's Σ_ab W_ab ∂K_ab/∂log ψ, concatenated: per part [log θ (Dc) | log α (P_k) | log β (P_k) |
// log σ²], the layout of fm_grad_reduction's four outputs.
//
// `scalings` (None, or one entry per part, None or a tuple (w (N,), G (N, P_k), K̃ (N, N))): part k with a
// scaling is the unit-diagonal kernel K̃_ab = w_a K_ab w_b (fm_gram_sum's part_grams[k]) whose row weights move with
// β, G_ap = ∂log w_a/∂log β_p.  Its sums are those of K̃: the backend's with the weights W_ab w_a w_b (numpy's
// W * w[:, None] * w[None, :]), plus the weights' own share in the β block, Σ_ab W_ab K̃_ab (G_ap + G_bp)
// (fm._unit_diagonal_reduction, the reference backend's definition).
py::array_t<double> fm_grad_reduction_sum(const py::object& C_obj, const py::object& lengthscales_obj,
                                          const py::list& states_obj, const py::object& W_obj,
                                          const py::list& tables_obj, const py::object& alphas_obj,
                                          const py::object& betas_obj, const py::object& variances_obj, int kind,
                                          const py::object& coefficients, double exponent, int num_threads,
                                          bool symmetric_weights, const py::object& scalings_obj,
                                          const py::object& workspace_obj) {
    const PartSum s = check_part_sum(C_obj, lengthscales_obj, states_obj, tables_obj, alphas_obj, betas_obj,
                                     variances_obj, kind, coefficients, exponent);
    const py::ssize_t N = s.N;
    DoubleArray W = float_array(W_obj, "W", {N, N}, "(" + std::to_string(N) + ", " + std::to_string(N) + ")");
    const std::size_t dc = static_cast<std::size_t>(s.Dc), n = static_cast<std::size_t>(N);
    const std::vector<py::object> scalings = part_entries(scalings_obj, "scalings", s.n_parts, "None or (w, G, K)");
    std::vector<bool> scaled(s.n_parts);
    std::vector<DoubleArray> row_weights(s.n_parts), log_derivatives(s.n_parts), part_grams(s.n_parts);
    for (std::size_t k = 0; k < s.n_parts; ++k) {
        scaled[k] = !scalings[k].is_none();
        if (!scaled[k]) continue;
        const std::string entry = "scalings[" + std::to_string(k) + "]";
        const py::tuple scaling = scalings[k].cast<py::tuple>();
        if (py::len(scaling) != 3)
            throw py::value_error(entry + " must be a tuple (w, G, K), got " + std::to_string(py::len(scaling)) +
                                  " entries");
        const auto P = static_cast<py::ssize_t>(s.tables[k]->n_variables());
        const std::string n_text = std::to_string(N);
        row_weights[k] = float_array(scaling[0], (entry + "[0] (w)").c_str(), {N}, "(" + n_text + ",)");
        log_derivatives[k] = float_array(scaling[1], (entry + "[1] (G)").c_str(), {N, P},
                                         "(" + n_text + ", " + std::to_string(P) + ")");
        if (!scaling[2].is_none())   // None: not kept, the weights' share is computed from the Gram's chunks
            part_grams[k] = float_array(scaling[2], (entry + "[2] (K)").c_str(), {N, N},
                                        "(" + n_text + ", " + n_text + ")");
    }
    std::size_t size = 0;
    for (std::size_t k = 0; k < s.n_parts; ++k) size += dc + 2 * s.tables[k]->n_variables() + 1;
    py::array_t<double> out(static_cast<py::ssize_t>(size));
    const bool given_workspace = !workspace_obj.is_none();   // W ∘ wwᵀ of a scaled part: in the caller's array
    py::array_t<double> workspace;
    if (given_workspace) {
        workspace = in_place_output(workspace_obj, "workspace", {N, N});
        if (workspace.data() == W.data()) throw py::value_error("workspace must not be W: it is read while written");
    }
    {
        py::gil_scoped_release release;
        double* flat = out.mutable_data();
        std::unique_ptr<double[]> owned_weights;
        double* scaled_weights = given_workspace ? workspace.mutable_data() : nullptr;
        std::vector<double> per_point(n);
        for (std::size_t k = 0; k < s.n_parts; ++k) {
            const std::size_t P = s.tables[k]->n_variables();
            const double* weights = W.data();
            const bool kept = scaled[k] && part_grams[k].size() > 0;
            const std::vector<double> C = s.scaled(k);
            // the continuant (tridiagonal) path gives F only; the reduction needs ∂F too (symmetric_reduction)
            const fastfm::FMPlan<double> plan = s.plan(k, false);
            // W ∘ wwᵀ of a scaled part pair by pair in the tile ((W_ab w_a) w_b), or in a copy.  A kept part (its
            // Gram at hand, N ≤ 724) took a copy, an N × N pass written and read again, ten of them in an AdditiveFM
            // likelihood at 200 points on the NAS-like space (docs/benchmarks/suggestion.md, "The bindings' passes
            // over N × N arrays"); it now goes pair by pair where that gives the copy's bits: with symmetric weights
            // (the copy's products; W_ab + W_ba from two products may be contracted into a fused multiply-add) and
            // without the fused kernel (which takes W's rows as they are).
            const bool pair_weights =
                scaled[k] && (!kept || (symmetric_weights && !fastfm::fused_reduction_applies(plan)));
            if (scaled[k] && !pair_weights) {
                if (!scaled_weights) {
                    owned_weights.reset(new double[n * n]);
                    scaled_weights = owned_weights.get();
                }
                const double* w = row_weights[k].data();
                for (std::size_t a = 0; a < n; ++a)
                    for (std::size_t b = 0; b < n; ++b)
                        scaled_weights[a * n + b] = W.data()[a * n + b] * w[a] * w[b];
                weights = scaled_weights;
            }
            const auto cols = fastfm::PointColumns<double>::from_rows(C.data(), s.states[k].data(), n, dc, P);
            fastfm::ReductionProblem<double> pb;
            pb.plan = &plan;
            pb.rows_continuous = C.data();
            pb.rows_states = s.states[k].data();
            pb.cols = &cols;
            pb.N = n;
            pb.register_kernel = &fastfm_dispatch::complete_reduction_registers_f64;
            pb.fused_kernel = &fastfm_dispatch::complete_reduction_fused_f64;
            pb.W = weights;
            pb.row_weights = pair_weights ? row_weights[k].data() : nullptr;
            pb.symmetric_weights = symmetric_weights;
            const std::vector<double> sums =
                fastfm::run_reduction(pb, num_threads, &fastfm_dispatch::reduction_tile_f64);
            const std::size_t count = dc + 2 * P + 1;
            for (std::size_t i = 0; i < count; ++i) flat[i] = sums[i];
            if (scaled[k] && !kept) {
                // the share from the Gram's chunks, no N × N array (fastfm::run_weighted_row_sums)
                const fastfm::FMPlan<double> gram_plan = s.plan(k, true);
                const std::vector<double> r = fastfm::run_weighted_row_sums(
                    gram_plan, C.data(), s.states[k].data(), n, W.data(), row_weights[k].data(), symmetric_weights,
                    num_threads, &fastfm_dispatch::gram_tile_f64);
                add_weight_share(r, log_derivatives[k].data(), P, flat + dc + P);
            } else if (scaled[k]) {
                // Σ_ab W_ab K̃_ab (G_a + G_b) = Σ_a G_a r_a with r_a = Σ_b (W_ab + W_ba) K̃_ab (2 Σ_b W_ab K̃_ab when W
                // is symmetric)
                weight_share_sums(W.data(), part_grams[k].data(), n, symmetric_weights, per_point.data());
                add_weight_share(per_point, log_derivatives[k].data(), P, flat + dc + P);
            }
            flat += count;
        }
    }
    return out;
}

// The rows of a cross call of a part sum (fm_cross_gradient_sum, fm_cross_gram_sum): C1 (M × Dc), each part's states
// states1[k] (M × its variables) and the parts' weights on the rows (weights1, M) and on the columns (weights2, N),
// checked against the part sum `s` of the columns.
struct CrossRows {
    DoubleArray C1;
    std::vector<IndexArray> states1;
    std::vector<DoubleArray> weights1, weights2;
    py::ssize_t M = 0;
};

CrossRows check_cross_rows(const PartSum& s, const py::object& C1_obj, const py::list& states1_obj,
                           const py::object& weights1_obj, const py::object& weights2_obj) {
    CrossRows r;
    r.C1 = float_array(C1_obj, "C1", {-1, s.Dc}, "(M, " + std::to_string(s.Dc) + ")");
    r.M = r.C1.shape(0);
    if (py::len(states1_obj) != s.n_parts)
        throw py::value_error("states1 must hold one state matrix per part (" + std::to_string(s.n_parts) +
                              "), got " + std::to_string(py::len(states1_obj)));
    for (std::size_t k = 0; k < s.n_parts; ++k) {
        const std::string name = "states1[" + std::to_string(k) + "]";
        r.states1.push_back(state_matrix(states1_obj[k], name.c_str(), *s.tables[k], r.M));
    }
    r.weights1 = part_weights(part_entries(weights1_obj, "weights1", s.n_parts, "None or an array"), "weights1", r.M);
    r.weights2 = part_weights(part_entries(weights2_obj, "weights2", s.n_parts, "None or an array"), "weights2", s.N);
    for (std::size_t k = 0; k < s.n_parts; ++k)
        if ((r.weights1[k].size() > 0) != (r.weights2[k].size() > 0) && r.M > 0 && s.N > 0)
            throw py::value_error("part " + std::to_string(k) + " has weights on one side only: weights1[k] and "
                                  "weights2[k] must both be arrays or both be None");
    return r;
}

// K (M × N) = Σ_k K_k(X1, X2), each part's Gram as fm_gram gives it on C1 / lengthscales[k] and C2 / lengthscales[k]
// (its plan with the rational forms), a part with unit-diagonal weights multiplied by its row weight and then its
// column weight (FMKernel._scale_by_weights), added part by part in order: the same sums, in the same order, as
// numpy's.  Every part of a tile of rows is computed in one parallel region: part by part, AdditiveFM's 21 calls of
// the acquisition screen on the NAS-like space were 21 regions, each waiting a scheduler slice for its second thread
// when other processes held the cores (docs/benchmarks/suggestion.md, "On a machine whose cores are busy").
py::array_t<double> fm_cross_gram_sum(const py::object& C1_obj, const py::list& states1_obj, const py::object& C2_obj,
                                      const py::list& states2_obj, const py::object& lengthscales_obj,
                                      const py::list& tables_obj, const py::object& alphas_obj,
                                      const py::object& betas_obj, const py::object& variances_obj, int kind,
                                      const py::object& coefficients, double exponent, int num_threads,
                                      const py::object& weights1_obj, const py::object& weights2_obj) {
    const PartSum s = check_part_sum(C2_obj, lengthscales_obj, states2_obj, tables_obj, alphas_obj, betas_obj,
                                     variances_obj, kind, coefficients, exponent);
    const CrossRows r = check_cross_rows(s, C1_obj, states1_obj, weights1_obj, weights2_obj);
    const py::ssize_t M = r.M, N = s.N;
    py::array_t<double> K({M, N});
    {
        py::gil_scoped_release release;
        const std::size_t m = static_cast<std::size_t>(M), n = static_cast<std::size_t>(N);
        const std::size_t dc = static_cast<std::size_t>(s.Dc);
        // per part: its scaled rows and columns, plan and column layout, built once before the parallel region
        std::vector<std::vector<double>> rows(s.n_parts), columns(s.n_parts);
        std::vector<fastfm::FMPlan<double>> plans;
        std::vector<fastfm::PointColumns<double>> cols;
        std::vector<fastfm::GramProblem<double>> problems(s.n_parts);
        plans.reserve(s.n_parts);
        cols.reserve(s.n_parts);
        // parts 1.. (each tile writes and then adds its own rows; every entry written before it is read)
        std::unique_ptr<double[]> scratch(s.n_parts > 1 ? new double[m * n] : nullptr);
        double* k_out = K.mutable_data();
        for (std::size_t k = 0; k < s.n_parts; ++k) {
            rows[k] = s.scaled(k, r.C1.data(), M);
            columns[k] = s.scaled(k);
            plans.push_back(s.plan(k, true));
            cols.push_back(fastfm::PointColumns<double>::from_rows(columns[k].data(), s.states[k].data(), n, dc,
                                                                  s.tables[k]->n_variables()));
        }
        for (std::size_t k = 0; k < s.n_parts; ++k) {
            fastfm::GramProblem<double>& pb = problems[k];
            pb.plan = &plans[k];
            pb.rows_continuous = rows[k].data();
            pb.rows_states = r.states1[k].data();
            pb.cols = &cols[k];
            pb.n_rows = m;
            pb.symmetric = false;
            pb.K = k == 0 ? k_out : scratch.get();
        }
        fastfm::for_each_row_tile(
            m, fastfm::tile_rows_for(n, false), num_threads,
            [&] {
                std::vector<fastfm::Workspace<double>> workspaces;
                for (std::size_t k = 0; k < s.n_parts; ++k)
                    workspaces.emplace_back(plans[k].n_variables(), plans[k].max_states);
                return workspaces;
            },
            [&](std::vector<fastfm::Workspace<double>>& workspaces, std::size_t a0, std::size_t a1, std::size_t) {
                for (std::size_t k = 0; k < s.n_parts; ++k) {
                    fastfm_dispatch::gram_tile_f64(problems[k], workspaces[k], a0, a1);
                    const bool weighted = r.weights1[k].size() > 0 && n > 0;
                    const double* w1 = weighted ? r.weights1[k].data() : nullptr;
                    const double* w2 = weighted ? r.weights2[k].data() : nullptr;
                    const double* part = problems[k].K;
                    for (std::size_t a = a0; a < a1; ++a)
                        for (std::size_t b = 0; b < n; ++b) {
                            const std::size_t i = a * n + b;
                            double value = part[i];
                            if (weighted) value = value * w1[a] * w2[b];   // (K w1) w2, numpy's order
                            if (k == 0) k_out[i] = value;
                            else k_out[i] += value;
                        }
                }
            });
    }
    return K;
}

// K (M × N) = Σ_k K_k(X1, X2) and dK (M × N × Dc) = Σ_k ∂K_k/∂C1, each part's derivative in its scaled coordinates
// divided by its lengthscales and, for a part with unit-diagonal weights, multiplied by its row weight and then its
// column weight (FMKernel._gram_and_input_gradient), added part by part in order into (out_K, out_dK) when given (in
// place), else into part 0's: the same sums, in the same order, as numpy's.  The columns (C2, states2) are
// PartSum's points; the rows C1 (M × Dc) and states1[k] (M × its variables) are checked here.
py::tuple fm_cross_gradient_sum(const py::object& C1_obj, const py::list& states1_obj, const py::object& C2_obj,
                                const py::list& states2_obj, const py::object& lengthscales_obj,
                                const py::list& tables_obj, const py::object& alphas_obj, const py::object& betas_obj,
                                const py::object& variances_obj, int kind, const py::object& coefficients,
                                double exponent, int num_threads, const py::object& out_K_obj,
                                const py::object& out_dK_obj, const py::object& weights1_obj,
                                const py::object& weights2_obj) {
    const PartSum s = check_part_sum(C2_obj, lengthscales_obj, states2_obj, tables_obj, alphas_obj, betas_obj,
                                     variances_obj, kind, coefficients, exponent);
    const py::ssize_t N = s.N, Dc = s.Dc;
    const CrossRows r = check_cross_rows(s, C1_obj, states1_obj, weights1_obj, weights2_obj);
    const DoubleArray& C1 = r.C1;
    const std::vector<IndexArray>& states1 = r.states1;
    const std::vector<DoubleArray>&weights1 = r.weights1, &weights2 = r.weights2;
    const py::ssize_t M = r.M;
    if (out_K_obj.is_none() != out_dK_obj.is_none())
        throw py::value_error("out_K and out_dK must both be arrays (added into) or both be None");
    const bool fresh = out_K_obj.is_none();
    py::array_t<double> K = fresh ? py::array_t<double>({M, N}) : in_place_output(out_K_obj, "out_K", {M, N});
    py::array_t<double> dK =
        fresh ? py::array_t<double>({M, N, Dc}) : in_place_output(out_dK_obj, "out_dK", {M, N, Dc});
    {
        py::gil_scoped_release release;
        const std::size_t m = static_cast<std::size_t>(M), n = static_cast<std::size_t>(N);
        const std::size_t dc = static_cast<std::size_t>(Dc);
        double* k_out = K.mutable_data();
        double* dk_out = dK.mutable_data();
        std::unique_ptr<double[]> k_scratch, dk_scratch;   // every entry is written before it is read
        for (std::size_t k = 0; k < s.n_parts; ++k) {
            const bool direct = fresh && k == 0;
            if (!direct && !k_scratch) {
                k_scratch.reset(new double[m * n]);
                dk_scratch.reset(new double[m * n * dc]);
            }
            const std::vector<double> rows = s.scaled(k, C1.data(), M), columns = s.scaled(k);
            const fastfm::FMPlan<double> plan = s.plan(k, false);   // fm_cross_gradient's plan
            const auto cols = fastfm::PointColumns<double>::from_rows(columns.data(), s.states[k].data(), n, dc,
                                                                       s.tables[k]->n_variables());
            double* part_K = direct ? k_out : k_scratch.get();
            double* part_dK = direct ? dk_out : dk_scratch.get();
            fastfm::CrossGradientProblem<double> pb;
            pb.plan = &plan;
            pb.rows_continuous = rows.data();
            pb.rows_states = states1[k].data();
            pb.cols = &cols;
            pb.n_rows = m;
            pb.K = part_K;
            pb.dK = part_dK;
            fastfm::run_cross_gradient(pb, num_threads, &fastfm_dispatch::cross_gradient_tile_f64);
            const double* ls = s.lengthscales.data() + k * dc;
            const bool weighted = weights1[k].size() > 0 && M > 0 && N > 0;
            const double* w1 = weighted ? weights1[k].data() : nullptr;
            const double* w2 = weighted ? weights2[k].data() : nullptr;
            // (K w1) w2 and ((dK / ls) w1) w2, numpy's order (fm._scale_in_place after the division)
            for (std::size_t a = 0; a < m; ++a)
                for (std::size_t b = 0; b < n; ++b) {
                    const std::size_t i = a * n + b;
                    double value = part_K[i];
                    if (weighted) value = value * w1[a] * w2[b];
                    if (direct) part_K[i] = value;
                    else k_out[i] += value;
                    for (std::size_t d = 0; d < dc; ++d) {
                        double slope = part_dK[i * dc + d] / ls[d];
                        if (weighted) slope = slope * w1[a] * w2[b];
                        if (direct) part_dK[i * dc + d] = slope;
                        else dk_out[i * dc + d] += slope;
                    }
                }
        }
    }
    return py::make_tuple(K, dK);
}

}  // namespace

void bind_fm(py::module_& m) {
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
    m.def("fm_unit_diagonal_reduction", &fm_unit_diagonal_reduction, py::arg("C"), py::arg("D"), py::arg("W"),
          py::arg("w"), py::arg("tables"), py::arg("alphas"), py::arg("betas"), py::arg("variance"), py::arg("kind"),
          py::arg("coefficients"), py::arg("exponent"), py::arg("num_threads") = 0,
          py::arg("symmetric_weights") = false,
          "(g_lengthscale, g_alpha, g_beta, g_variance, r (N,)): fm_grad_reduction with the weights W_ab w_a w_b "
          "(formed pair by pair) and r_a = sum_b (W_ab + W_ba) w_a w_b K_ab from the Gram recomputed a chunk at a "
          "time: a unit-diagonal kernel's reduction without an N x N copy of W or K.");
    m.def("fm_gram_sum", &fm_gram_sum, py::arg("C"), py::arg("lengthscales"), py::arg("states"), py::arg("tables"),
          py::arg("alphas"), py::arg("betas"), py::arg("variances"), py::arg("kind"), py::arg("coefficients"),
          py::arg("exponent"), py::arg("num_threads") = 0, py::arg("out") = py::none(),
          py::arg("weights") = py::none(), py::arg("keep_grams") = true, py::arg("grams_out") = py::none(),
          py::arg("workspace") = py::none(),
          "(K (N, N), diagonals (n_parts, N)): the sum of FM Grams of parts on the same points, part k on C / "
          "lengthscales[k] and states[k] (tables[k]), added in order into out (in place) or a new array.  With "
          "weights (per part None or its unit-diagonal row weights w (N,)), a weighted part is w_a K_ab w_b and the "
          "call returns (K, diagonals, part_grams): each weighted part's scaled Gram (None for the others), or "
          "with keep_grams=False None for every part (no N x N array kept per weighted part).  grams_out (per part "
          "None or a writable (N, N) array, not out) receives a kept Gram in place of a new array; workspace (N, N), "
          "overwritten, is the scratch of the parts not written into K directly.");
    m.def("fm_grad_reduction_sum", &fm_grad_reduction_sum, py::arg("C"), py::arg("lengthscales"), py::arg("states"),
          py::arg("W"), py::arg("tables"), py::arg("alphas"), py::arg("betas"), py::arg("variances"), py::arg("kind"),
          py::arg("coefficients"), py::arg("exponent"), py::arg("num_threads") = 0,
          py::arg("symmetric_weights") = false, py::arg("scalings") = py::none(), py::arg("workspace") = py::none(),
          "Per part of fm_gram_sum, [g_lengthscale (Dc) | g_alpha (P_k) | g_beta (P_k) | g_variance], concatenated; "
          "a part with a scaling (w (N,), G = dlog w/dlog beta (N, P_k), its scaled Gram (N, N) or None) is "
          "differentiated as w_a K_ab w_b, its row weights' share included in the beta block (from the Gram's "
          "chunks, recomputed, where the Gram is None).  workspace (N, N), not W, overwritten: the scratch of the "
          "weights W_ab w_a w_b.");
    m.def("fm_cross_gram_sum", &fm_cross_gram_sum, py::arg("C1"), py::arg("states1"), py::arg("C2"),
          py::arg("states2"), py::arg("lengthscales"), py::arg("tables"), py::arg("alphas"), py::arg("betas"),
          py::arg("variances"), py::arg("kind"), py::arg("coefficients"), py::arg("exponent"),
          py::arg("num_threads") = 0, py::arg("weights1") = py::none(), py::arg("weights2") = py::none(),
          "K (M, N): the sum of the parts' FM Grams between the rows (C1, states1[k]) and the columns (C2, "
          "states2[k]), each as fm_gram gives it on the points divided by lengthscales[k], a part with weights "
          "(weights1[k] on the rows, weights2[k] on the columns) scaled by them, added in order.");
    m.def("fm_cross_gradient_sum", &fm_cross_gradient_sum, py::arg("C1"), py::arg("states1"), py::arg("C2"),
          py::arg("states2"), py::arg("lengthscales"), py::arg("tables"), py::arg("alphas"), py::arg("betas"),
          py::arg("variances"), py::arg("kind"), py::arg("coefficients"), py::arg("exponent"),
          py::arg("num_threads") = 0, py::arg("out_K") = py::none(), py::arg("out_dK") = py::none(),
          py::arg("weights1") = py::none(), py::arg("weights2") = py::none(),
          "(K (M, N), dK (M, N, Dc)): fm_cross_gradient of the parts of fm_gram_sum, dK in C1's units (each part's "
          "divided by its lengthscales), a part with weights (weights1[k] on the rows, weights2[k] on the columns) "
          "scaled by them, added in order into out_K and out_dK (in place) or new arrays.");
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
}

}  // namespace fastfm_py

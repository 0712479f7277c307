// Bindings of the large-N GP regression (fastfm/gp_large.py): matrix-free K·V products in double and
// single precision, and the gradient reduction with a low-rank weight matrix.  The tiles run in the
// entry points of csrc/dispatch/matvec.cpp and csrc/dispatch/fm_*.cpp.
#include <string>
#include <utility>
#include <vector>

#include "py/boundary.hpp"

namespace fastfm_py {

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

void bind_matvec(py::module_& m) {
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
}

}  // namespace fastfm_py

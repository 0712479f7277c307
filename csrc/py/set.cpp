// Bindings of the set kernels (SPEC §4, set.hpp): set_gram, set_grad_reduction,
// set_grad_reduction_and_weighted_gram, set_gram_gradient, set_cross_gradient, set_diag,
// set_diag_gradient.  Each row runs in an entry point of csrc/dispatch/set.cpp.
#include <string>
#include <tuple>
#include <utility>

#include "py/boundary.hpp"

namespace fastfm_py {

namespace {

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

// (K (N, N), dK (N, N, d)), dK[a, b, k] = ∂K[a, b]/∂log ℓ_k (set.hpp, set_gram_gradient).
std::pair<py::array_t<double>, py::array_t<double>> set_gram_gradient(const py::object& A_obj,
                                                                      const py::object& ls_obj, double nu,
                                                                      int num_threads) {
    DoubleArray A = sets_array(A_obj, "A");
    DoubleArray ls = length_scale_array(ls_obj, A.shape(2));
    const int code = nu_code(nu);
    py::array_t<double> K({A.shape(0), A.shape(0)});
    py::array_t<double> dK({A.shape(0), A.shape(0), A.shape(2)});
    double* K_out = K.mutable_data();
    double* dK_out = dK.mutable_data();
    {
        py::gil_scoped_release release;
        const fastfm::ScaledSets<double> SA(A.data(), static_cast<std::size_t>(A.shape(0)),
                                            static_cast<std::size_t>(A.shape(1)),
                                            static_cast<std::size_t>(A.shape(2)), ls.data());
        fastfm::set_gram_gradient(SA, K_out, dK_out, num_threads,
                                  [&](fastfm::SetWorkspace<double>& ws, std::size_t a, double* K_row, double* dK_row) {
                                      fastfm_dispatch::set_gram_gradient_row_f64(code, SA, a, ws, K_row, dK_row);
                                  });
    }
    return {K, dK};
}

// (K (NA, NB), dK (NA, NB, m, d)), dK[a, b, i, k] = ∂K[a, b]/∂A[a, i, k] (set.hpp, set_cross_gradient).
std::pair<py::array_t<double>, py::array_t<double>> set_cross_gradient(const py::object& A_obj,
                                                                       const py::object& B_obj,
                                                                       const py::object& ls_obj, double nu,
                                                                       int num_threads) {
    DoubleArray A = sets_array(A_obj, "A");
    DoubleArray B = sets_array(B_obj, "B");
    if (B.shape(2) != A.shape(2))
        throw py::value_error("A and B must hold points of the same dimension, got A " + shape_of(A) + " and B " +
                              shape_of(B));
    DoubleArray ls = length_scale_array(ls_obj, A.shape(2));
    const int code = nu_code(nu);
    py::array_t<double> K({A.shape(0), B.shape(0)});
    py::array_t<double> dK({A.shape(0), B.shape(0), A.shape(1), A.shape(2)});
    double* K_out = K.mutable_data();
    double* dK_out = dK.mutable_data();
    {
        py::gil_scoped_release release;
        const double* length_scale = ls.data();
        const fastfm::ScaledSets<double> SA(A.data(), static_cast<std::size_t>(A.shape(0)),
                                            static_cast<std::size_t>(A.shape(1)),
                                            static_cast<std::size_t>(A.shape(2)), length_scale);
        const fastfm::ScaledSets<double> SB(B.data(), static_cast<std::size_t>(B.shape(0)),
                                            static_cast<std::size_t>(B.shape(1)),
                                            static_cast<std::size_t>(B.shape(2)), length_scale);
        fastfm::set_cross_gradient(SA, SB, K_out, dK_out, num_threads,
                                   [&](fastfm::SetWorkspace<double>& ws, std::size_t a, double* K_row,
                                       double* dK_row) {
                                       fastfm_dispatch::set_cross_gradient_row_f64(code, SA, SB, length_scale, a,
                                                                                   ws, K_row, dK_row);
                                   });
    }
    return {K, dK};
}

// diag (N,) and, with_gradient, d_loglength (N, d) and d_points (N, m, d) (set.hpp, set_diag).
void set_diag_into(const DoubleArray& A, const DoubleArray& ls, int code, int num_threads, double* diag,
                   double* d_loglength, double* d_points) {
    py::gil_scoped_release release;
    const double* length_scale = ls.data();
    const fastfm::ScaledSets<double> SA(A.data(), static_cast<std::size_t>(A.shape(0)),
                                        static_cast<std::size_t>(A.shape(1)), static_cast<std::size_t>(A.shape(2)),
                                        length_scale);
    fastfm::set_diag(SA, diag, d_loglength, d_points, num_threads,
                     [&](fastfm::SetWorkspace<double>& ws, std::size_t a, double* diag_a, double* d_loglength_a,
                         double* d_points_a) {
                         fastfm_dispatch::set_diag_row_f64(code, SA, length_scale, a, ws, diag_a, d_loglength_a,
                                                           d_points_a);
                     });
}

py::array_t<double> set_diag(const py::object& A_obj, const py::object& ls_obj, double nu, int num_threads) {
    DoubleArray A = sets_array(A_obj, "A");
    DoubleArray ls = length_scale_array(ls_obj, A.shape(2));
    const int code = nu_code(nu);
    py::array_t<double> diag(A.shape(0));
    set_diag_into(A, ls, code, num_threads, diag.mutable_data(), nullptr, nullptr);
    return diag;
}

std::tuple<py::array_t<double>, py::array_t<double>, py::array_t<double>> set_diag_gradient(
    const py::object& A_obj, const py::object& ls_obj, double nu, int num_threads) {
    DoubleArray A = sets_array(A_obj, "A");
    DoubleArray ls = length_scale_array(ls_obj, A.shape(2));
    const int code = nu_code(nu);
    py::array_t<double> diag(A.shape(0));
    py::array_t<double> d_loglength({A.shape(0), A.shape(2)});
    py::array_t<double> d_points({A.shape(0), A.shape(1), A.shape(2)});
    set_diag_into(A, ls, code, num_threads, diag.mutable_data(), d_loglength.mutable_data(),
                  d_points.mutable_data());
    return {diag, d_loglength, d_points};
}

}  // namespace

void bind_set(py::module_& m) {
    m.def("set_gram", &set_gram, py::arg("A"), py::arg("B"), py::arg("length_scale"),
          py::arg("nu") = 2.5, py::arg("num_threads") = 0,
          "Set Gram K[a, b] = 1/(m m') Σ_ij k_ν(‖(A[a,i] − B[b,j])/ℓ‖), unit-amplitude Matérn; "
          "A (NA, m, d), B (NB, m', d) or None (symmetric: pairs computed once).");
    m.def("set_grad_reduction", &set_grad_reduction, py::arg("A"), py::arg("W"),
          py::arg("length_scale"), py::arg("nu") = 2.5, py::arg("num_threads") = 0,
          "g (d,): g_k = Σ_ab W_ab ∂K_ab/∂log ℓ_k for K = set_gram(A, None, ℓ, ν).");
    m.def("set_grad_reduction_and_weighted_gram", &set_grad_reduction_and_weighted_gram,
          py::arg("A"), py::arg("W"), py::arg("length_scale"), py::arg("nu") = 2.5, py::arg("num_threads") = 0,
          "(g (d,), Σ_ab W_ab K_ab) from one pass over the pairs.");
    m.def("set_gram_gradient", &set_gram_gradient, py::arg("A"), py::arg("length_scale"), py::arg("nu") = 2.5,
          py::arg("num_threads") = 0,
          "(K (N, N), dK (N, N, d)) with dK[a, b, k] = ∂K[a, b]/∂log ℓ_k for K = set_gram(A, None, ℓ, ν): one pass "
          "over the point pairs gives both.");
    m.def("set_cross_gradient", &set_cross_gradient, py::arg("A"), py::arg("B"), py::arg("length_scale"),
          py::arg("nu") = 2.5, py::arg("num_threads") = 0,
          "(K (NA, NB), dK (NA, NB, m, d)) with dK[a, b, i, k] = ∂K[a, b]/∂A[a, i, k] for K = set_gram(A, B, ℓ, ν); "
          "A (NA, m, d), B (NB, m', d).");
    m.def("set_diag", &set_diag, py::arg("A"), py::arg("length_scale"), py::arg("nu") = 2.5,
          py::arg("num_threads") = 0, "K_set(A[a], A[a]) for every set, shape (N,).");
    m.def("set_diag_gradient", &set_diag_gradient, py::arg("A"), py::arg("length_scale"), py::arg("nu") = 2.5,
          py::arg("num_threads") = 0,
          "(diag (N,), ∂diag/∂log ℓ (N, d), ∂diag_a/∂A[a, i, k] (N, m, d)).");
}

}  // namespace fastfm_py

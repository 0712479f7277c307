// Bindings of the set kernels (SPEC §4, set.hpp): set_gram, set_grad_reduction,
// set_grad_reduction_and_weighted_gram.  Each row runs in an entry point of csrc/dispatch/set.cpp.
#include <string>
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
}

}  // namespace fastfm_py

// Bindings of the hierarchical (conditional-space) kernel, SPEC §3 — csrc/include/fastfm/hier.hpp.
// Signatures mirror numpy_backend.hier_gram / hier_grad_reduction.  hier.hpp's loops are compiled
// here at the baseline ISA (no dispatch entry point), as they always were.
#include <cmath>
#include <string>

#include "fastfm/hier.hpp"
#include "py/boundary.hpp"

namespace fastfm_py {

namespace {

using MaskArray = py::array_t<uint8_t, py::array::c_style | py::array::forcecast>;

struct HierInputs {
    DoubleArray V;
    MaskArray M;
};

// V (n, n_dims) float64 and M (n, n_dims) activity (0/1), shapes checked.
HierInputs hier_inputs(const py::object& V_obj, const py::object& M_obj, const char* V_name, const char* M_name,
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
}

// The per-dimension hyperparameters and scalars, checked; returns the problem without points.
fastfm::HierProblem<double> hier_problem(py::ssize_t n_dims, const py::object& is_real_obj,
                                         const py::object& omega_obj, const py::object& rho_pi_obj,
                                         double lengthscale, double variance, int profile, MaskArray& is_real,
                                         DoubleArray& rho_pi) {
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
}

py::array_t<double> hier_gram(const py::object& V1_obj, const py::object& M1_obj, const py::object& V2_obj,
                              const py::object& M2_obj, const py::object& is_real_obj, const py::object& omega_obj,
                              const py::object& rho_pi_obj, double lengthscale, double variance, int profile,
                              int num_threads) {
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
        const auto p1 = fastfm::HierPoints<double>::build(in1.V.data(), in1.M.data(), static_cast<std::size_t>(N), n,
                                                          is_real.data(), rho_pi.data());
        const auto p2 = symmetric ? fastfm::HierPoints<double>()
                                  : fastfm::HierPoints<double>::build(in2.V.data(), in2.M.data(),
                                                                      static_cast<std::size_t>(M), n, is_real.data(),
                                                                      rho_pi.data());
        pb.p1 = &p1;
        pb.p2 = symmetric ? &p1 : &p2;
        fastfm::hier_gram(pb, K.mutable_data(), num_threads);
    }
    return K;
}

// auto: make_tuple's typed return (typing::Tuple<array_t, array_t, double>) gives the docstring signature
// "-> tuple[NDArray[float64], NDArray[float64], float]", as the lambda of the single-file build did.
auto hier_grad_reduction(const py::object& V_obj, const py::object& M_obj, const py::object& W_obj,
                         const py::object& is_real_obj, const py::object& omega_obj, const py::object& rho_pi_obj,
                         double lengthscale, double variance, int profile, int num_threads) {
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
        const auto points = fastfm::HierPoints<double>::build(in.V.data(), in.M.data(), static_cast<std::size_t>(N),
                                                              static_cast<std::size_t>(n_dims), is_real.data(),
                                                              rho_pi.data());
        pb.p1 = pb.p2 = &points;
        fastfm::hier_grad_reduction(pb, W.data(), t.mutable_data(), u.mutable_data(), &g_variance, num_threads);
    }
    return py::make_tuple(t, u, g_variance);
}

}  // namespace

void bind_hier(py::module_& m) {
    m.def("hier_gram", &hier_gram, py::arg("V1"), py::arg("M1"), py::arg("V2"), py::arg("M2"), py::arg("is_real"),
          py::arg("omega"), py::arg("rho_pi"), py::arg("lengthscale"), py::arg("variance"), py::arg("profile"),
          py::arg("num_threads") = 0,
          "Hierarchical-kernel Gram, shape (N, M), or (N, N) when V2 = M2 = None (each pair once, mirrored).");
    m.def("hier_grad_reduction", &hier_grad_reduction, py::arg("V"), py::arg("M"), py::arg("W"), py::arg("is_real"),
          py::arg("omega"), py::arg("rho_pi"), py::arg("lengthscale"), py::arg("variance"), py::arg("profile"),
          py::arg("num_threads") = 0,
          "(t (n_dims,), u (n_dims,), g_variance): the sums of numpy_backend.hier_grad_reduction.");
}

}  // namespace fastfm_py

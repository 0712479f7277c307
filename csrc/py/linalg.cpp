// Binding of the GP likelihood's gradient weights (linalg.hpp): likelihood_weights.  The work runs in the
// entry point of csrc/dispatch/linalg.cpp.
#include <string>

#include "py/boundary.hpp"

namespace fastfm_py {

namespace {

#if defined(__GNUC__)
// W = ½(ααᵀ − K⁻¹) written over the factor in place; returns tr(W).  factor_rows: the C-ordered (N, N) view
// of a Fortran-ordered buffer whose lower triangle is L (dpotrf's), i.e. U = Lᵀ in its upper triangle.
double likelihood_weights(const py::object& factor_obj, const py::object& alpha_obj) {
    py::array factor = as_array(factor_obj, "factor_rows");
    if (!factor.dtype().is(py::dtype::of<double>()) || factor.ndim() != 2 || factor.shape(0) != factor.shape(1))
        throw py::value_error("factor_rows must be a square float64 array, got " + shape_of(factor) + " of " +
                              std::string(py::str(factor.dtype())));
    if (!(factor.flags() & py::array::c_style) || !factor.writeable())
        throw py::value_error("factor_rows must be C-contiguous and writeable (it is overwritten by W)");
    const py::ssize_t N = factor.shape(0);
    DoubleArray alpha = float_array(alpha_obj, "alpha", {N}, "(" + std::to_string(N) + ",)");
    double* w = static_cast<double*>(factor.mutable_data());
    bool ok;
    {
        py::gil_scoped_release release;
        ok = fastfm_dispatch::likelihood_weights_f64(w, static_cast<std::size_t>(N), alpha.data(), w);
    }
    if (!ok) throw py::value_error("factor_rows has a zero or non-finite diagonal entry: not a Cholesky factor");
    double trace = 0.0;
    for (py::ssize_t i = 0; i < N; ++i) trace += w[i * N + i];
    return trace;
}
#endif

}  // namespace

void bind_linalg(py::module_& m) {
#if defined(__GNUC__)
    m.def("likelihood_weights", &likelihood_weights, py::arg("factor_rows"), py::arg("alpha"),
          "W = ½(ααᵀ − K⁻¹) over the factor in place (GPML Eq. 5.9's weights); returns tr(W).\n\n"
          "factor_rows: the C-ordered (N, N) view of dpotrf's lower Cholesky factor L of K (U = Lᵀ in its upper\n"
          "triangle; the other triangle is not read), overwritten by the symmetric W.  alpha: K⁻¹y, shape (N,).");
#else
    (void)m;   // built without GCC vector extensions: the GP uses LAPACK's dpotri (fastfm/gp/_linalg.py)
#endif
}

}  // namespace fastfm_py

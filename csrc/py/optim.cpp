// Binding of the acquisition search's batched quasi-Newton bookkeeping (fastfm/batched_lbfgs.hpp): the state
// machine fastfm/optim/batched_lbfgs.py drives, asking Python for the function values of each round of trials.
#include <string>

#include "fastfm/batched_lbfgs.hpp"
#include "py/boundary.hpp"

namespace fastfm_py {

namespace {

using State = fastfm::BatchedLBFGS<double>;

std::string rows_by(py::ssize_t rows, py::ssize_t n) {
    return "(" + std::to_string(rows) + ", " + std::to_string(n) + ")";
}

State* make_state(const py::object& X_obj, const py::object& F_obj, const py::object& G_obj,
                  const py::object& lower_obj, const py::object& upper_obj, long maxiter) {
    DoubleArray X = float_array(X_obj, "X", {-1, -1}, "(n_starts, n)");
    const py::ssize_t k = X.shape(0), n = X.shape(1);
    if (n < 1) throw py::value_error("X must have at least one column, got shape " + shape_of(X));
    DoubleArray F = float_array(F_obj, "F", {k}, "(" + std::to_string(k) + ",)");
    DoubleArray G = float_array(G_obj, "G", {k, n}, rows_by(k, n));
    DoubleArray lower = float_array(lower_obj, "lower", {k, n}, rows_by(k, n));
    DoubleArray upper = float_array(upper_obj, "upper", {k, n}, rows_by(k, n));
    if (maxiter < 0) throw py::value_error("maxiter must be >= 0, got maxiter=" + std::to_string(maxiter));
    return new State(static_cast<std::size_t>(k), static_cast<std::size_t>(n), X.data(), F.data(), G.data(),
                     lower.data(), upper.data(), maxiter);
}

// (starts (k,), points (k, n)) of the next round of trials, or None once every run has stopped
py::object next_trials(State& state) {
    if (!state.next_trials()) return py::none();
    const auto& starts = state.trial_starts();
    const auto& points = state.trial_points();
    const py::ssize_t k = static_cast<py::ssize_t>(starts.size()), n = static_cast<py::ssize_t>(state.n());
    IndexArray starts_out(k);
    std::copy(starts.begin(), starts.end(), starts_out.mutable_data());
    DoubleArray points_out({k, n});
    std::copy(points.begin(), points.end(), points_out.mutable_data());
    return py::make_tuple(starts_out, points_out);
}

void tell(State& state, const py::object& f_obj, const py::object& g_obj) {
    const py::ssize_t k = static_cast<py::ssize_t>(state.trial_starts().size());
    const py::ssize_t n = static_cast<py::ssize_t>(state.n());
    if (k == 0) throw py::value_error("tell: no trials are pending (call next_trials first)");
    DoubleArray f = float_array(f_obj, "values", {k}, "(" + std::to_string(k) + ",)");
    DoubleArray g = float_array(g_obj, "gradients", {k, n}, rows_by(k, n));
    state.tell(f.data(), g.data());
}

}  // namespace

void bind_optim(py::module_& m) {
    py::class_<State>(m, "BatchedLBFGS",
                      "The bookkeeping of fastfm.optim.batched_lbfgs.minimize_batched, compiled: independent\n"
                      "projected L-BFGS runs from the rows of X whose evaluations the caller makes in rounds\n"
                      "(next_trials, tell); the same runs as the NumPy module's, bit for bit.")
        .def(py::init(&make_state), py::arg("X"), py::arg("F"), py::arg("G"), py::arg("lower"), py::arg("upper"),
             py::arg("maxiter"),
             "X (n_starts, n) inside the box [lower, upper] (arrays of X's shape), F (n_starts,) and G the first\n"
             "evaluation of every start; maxiter: accepted steps per start at most.")
        .def("next_trials", &next_trials,
             "(starts (k,) int64, points (k, n)) to evaluate next, or None once every run has stopped.")
        .def("tell", &tell, py::arg("values"), py::arg("gradients"),
             "The values (k,) and gradients (k, n) at the last trials.")
        .def_property_readonly("X", [](const State& s) {
            DoubleArray out({static_cast<py::ssize_t>(s.n_starts()), static_cast<py::ssize_t>(s.n())});
            std::copy(s.X().begin(), s.X().end(), out.mutable_data());
            return out;
        })
        .def_property_readonly("F", [](const State& s) {
            DoubleArray out(static_cast<py::ssize_t>(s.n_starts()));
            std::copy(s.F().begin(), s.F().end(), out.mutable_data());
            return out;
        });
}

}  // namespace fastfm_py

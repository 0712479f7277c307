// Boundary checks and plan construction shared by the binding files (declared in boundary.hpp).
#include "py/boundary.hpp"

#include <cmath>
#include <sstream>
#include <utility>

namespace fastfm_py {

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

IndexArray state_matrix(const py::object& obj, const char* name, const Tables& tables, py::ssize_t n_rows) {
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

Hyper check_hyper(const Tables& tables, const py::object& alphas, const py::object& betas, double variance, int kind,
                  const py::object& coefficients, double exponent) {
    return Hyper{tables, parameter_vector(alphas, "alphas", tables), parameter_vector(betas, "betas", tables),
                 make_modulation(kind, coefficients, exponent), checked_variance(variance)};
}

// Both lane instantiations are compiled into every ISA clone and give the same values on any x86-64
// CPU (the wide one slower where its vectors are not registers), so a machine without AVX-512 can
// test the code AVX-512 machines run, and the converse.  One definition for the whole module.
namespace {
int g_vector_lanes_override = 0;
}  // namespace

void set_vector_lanes_override(int lanes) { g_vector_lanes_override = lanes; }

fastfm::FMPlan<double> with_lanes(fastfm::FMPlan<double> plan) {
    if (g_vector_lanes_override != 0) plan.wide_vectors = g_vector_lanes_override > 0;
    return plan;
}

fastfm::FMPlan<double> make_plan(const Hyper& h, std::size_t n_continuous, bool rational_forms) {
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

py::array_t<double> vector_from(const std::vector<double>& values, std::size_t begin, std::size_t count) {
    py::array_t<double> out(static_cast<py::ssize_t>(count));
    for (std::size_t i = 0; i < count; ++i) out.mutable_data()[i] = values[begin + i];
    return out;
}

}  // namespace fastfm_py

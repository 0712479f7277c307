// Frequency modulated (FM) kernels: Gram matrices, fused gradient reductions,
// neighbour rows and input gradients (SPEC §2, Oh et al. UAI 2021, Eq. 5):
//
//     k((c,v),(c',v')) = σ² Π_p F_p,   F_p = Σ_g f(μ_g, α_p r | β_p) P_g[v_p, v'_p],   r = d(c,c')^t
//
// with P_g the eigenprojector of the distinct Laplacian eigenvalue μ_g of
// variable p's graph.  fastfm/_backends/numpy_backend.py is the definition;
// everything here must match it to ~1e-12 relative.
//
// Pure C++17 templates over the scalar type T; no Python.  The functions
// named *_tile are the hot loops: the bindings wrap their double
// instantiations in run-time ISA dispatch (target_clones) and hand them to
// the parallel drivers at the bottom of this file.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "fastfm/common.hpp"

namespace fastfm {

// ----------------------------------------------------------------------------
// Modulating functions (fastfm/_backends/modulation.py)
// ----------------------------------------------------------------------------

enum ModulationKind : int {
    kLaplaceFamily = 0,  // f = Σ_n a_n (1 + βλ + s)^(-n)       (paper Prop. 1; ModLap is a = (1,))
    kDiffusion = 1,      // f = exp(-(1 + s) βλ)                 (ModDif)
};

template <typename T>
struct Modulation {
    int kind = kLaplaceFamily;
    std::vector<T> coefficients{T(1)};  // a_1..a_N (Laplace family only)
    T exponent = T(2);                  // t in (0, 2]: r = d^t

    void validate() const {
        if (kind != kLaplaceFamily && kind != kDiffusion)
            throw std::invalid_argument("modulation kind must be 0 (Laplace family) or 1 (diffusion), got " +
                                        std::to_string(kind));
        if (kind == kLaplaceFamily) {
            if (coefficients.empty()) throw std::invalid_argument("coefficients must not be empty");
            T total = 0;
            for (std::size_t i = 0; i < coefficients.size(); ++i) {
                const T a = coefficients[i];
                if (!std::isfinite(a) || a < 0)
                    throw std::invalid_argument("coefficients[" + std::to_string(i) + "] = " + std::to_string(a) +
                                                " must be finite and >= 0");
                total += a;
            }
            if (!(total > 0)) throw std::invalid_argument("coefficients must not all be zero");
        }
        if (!(exponent > 0 && exponent <= 2))
            throw std::invalid_argument("exponent must lie in (0, 2], got " + std::to_string(exponent));
    }
};

// ----------------------------------------------------------------------------
// Graph spectra, prepared once per PackedSpectra (independent of α, β)
// ----------------------------------------------------------------------------

// How a variable's factor is evaluated.
//  complete:    two groups {0, μ_1}, P_0 = 11ᵀ/n, P_1 = I − 11ᵀ/n (SPEC §2 "facts"):
//               F = f(0)/n + f(μ_1)(δ_vv' − 1/n), O(1) per pair.
//  tridiagonal: path-like graphs (L tridiagonal).  For a single-term Laplace
//               modulation F is a resolvent entry, [((1+s)I + βL)^(-1)]_vv'
//               times a_1, evaluated by continuants (one division, not n).
//  general:     F = Σ_g f(μ_g) P_g[v, v'] with tabulated projectors.
enum class FactorPath : int { general = 0, complete = 1, tridiagonal = 2 };

// Projector tables hold n²·G numbers per variable; above this many entries
// (a path graph with ~160+ states) the weights are rebuilt from eigenvectors.
constexpr std::size_t kMaxProjectorEntries = std::size_t(1) << 22;
// Detecting a tridiagonal Laplacian costs O(n³) once per spectra.
constexpr int kMaxTridiagonalDetectStates = 512;

// Zeros after every projector table (see mixed_reduction_vectors).
constexpr std::size_t kProjectorPadding = 8;

// Tridiagonal graphs up to this many states take the rational path: one numerator table row is one
// vector of eight doubles (two of four without AVX-512), so a column state selects its coefficient with
// one permute (two and a blend).  Also the largest projector table the vector reduction permutes.
constexpr int kRationalTableStates = 8;

// ----------------------------------------------------------------------------
// Vector lanes of the kernels written with GCC vector types
// ----------------------------------------------------------------------------
// True where eight doubles are one register (AVX-512), i.e. where the x86-64-v4 clones of csrc/dispatch/
// run: the vector kernels then take kWideLanes, else kNarrowLanes (FMPlan::wide_vectors).
inline bool wide_vector_registers() {
#if defined(__AVX512F__)
    return true;
#elif defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__GLIBC__) && \
    !defined(FASTFM_NO_MULTIVERSIONING)
    static const bool wide = [] {
        __builtin_cpu_init();
        return __builtin_cpu_supports("x86-64-v4") != 0;
    }();
    return wide;
#else
    return false;
#endif
}

// Lanes of the vector kernels (GCC vector types): eight where 8 × T is a register (float, or AVX-512),
// else 256 bits' worth.  GCC keeps a vector type wider than the widest register in memory and lowers every
// operation on it piece by piece through the stack: with eight doubles on an AVX2-only CPU the Gram, K·V
// and reduction kernels ran 3-16× slower than with four (docs/benchmarks/kernels.md, "Vector lanes without AVX-512").
template <typename T>
constexpr int kNarrowLanes = 32 / static_cast<int>(sizeof(T));
constexpr int kWideLanes = 8;

#if defined(__GNUC__)
// W elements of type E as one GCC vector.  (A typedef with a vector_size that depends on a template
// parameter inside a function template loses the attribute when the element type does not depend on
// one, e.g. int32_t: the struct makes it dependent.)
template <typename E, int W>
struct LaneVector {
    typedef E type __attribute__((vector_size(W * sizeof(E))));
};
#endif

#if defined(__GNUC__) && !defined(__clang__)
template <typename T, int Lanes = kRationalTableStates>
struct RationalLanes {
    static constexpr int W = Lanes;
    typedef T lanes __attribute__((vector_size(W * sizeof(T))));
    typedef typename std::conditional<sizeof(T) == 8, int64_t, int32_t>::type index_int;
    typedef index_int index_lanes __attribute__((vector_size(W * sizeof(index_int))));
};

// The lanes' entries of one kRationalTableStates-wide table row: row[index[l]] in lane l.
template <typename T, int W>
inline typename RationalLanes<T, W>::lanes table_lanes(const T* FASTFM_RESTRICT row,
                                                       const typename RationalLanes<T, W>::index_lanes& index) {
    typedef typename RationalLanes<T, W>::lanes lanes;
    static_assert(W == kRationalTableStates || 2 * W == kRationalTableStates, "a row is one or two vectors");
    lanes low;
    std::memcpy(&low, row, sizeof low);
    if constexpr (W == kRationalTableStates) {
        return __builtin_shuffle(low, index);
    } else {
        lanes high;
        std::memcpy(&high, row + W, sizeof high);
        return __builtin_shuffle(low, high, index);
    }
}
#endif

template <typename T>
struct VariableSpectrum {
    int n_states = 0;
    int n_groups = 0;
    FactorPath path = FactorPath::general;
    std::vector<T> group_values;  // μ_g, ascending
    std::vector<int> group_starts;  // eigenvector columns group_starts[g]..group_starts[g+1]-1
    // projectors[(v * n_groups + g) * n_states + w] = P_g[v, w]: for a fixed
    // row state v and group g the column states w are contiguous (gathered).
    // Empty for large graphs, which use the eigenvectors instead.
    std::vector<T> projectors;
    std::vector<T> eigenvectors;             // U[v, i] at v*n + i
    std::vector<T> eigenvectors_transposed;  // U[w, i] at i*n + w
    // Tridiagonal graphs only: L[k, k], and the coupling −L[k, k+1] > 0.
    std::vector<T> laplacian_diagonal;
    std::vector<T> laplacian_coupling;
    // L is invariant under k -> n−1−k (every path graph): the trailing
    // continuants are then the leading ones reversed and need no second recurrence.
    bool mirror_symmetric = false;

    bool has_projectors() const { return !projectors.empty(); }

    // P_g[v, w] for any storage.
    T projector_entry(int v, int g, int w) const {
        if (has_projectors()) return projectors[(static_cast<std::size_t>(v) * n_groups + g) * n_states + w];
        T sum = 0;
        for (int i = group_starts[g]; i < group_starts[g + 1]; ++i)
            sum += eigenvectors[static_cast<std::size_t>(v) * n_states + i] *
                   eigenvectors[static_cast<std::size_t>(w) * n_states + i];
        return sum;
    }
};

template <typename T>
class SpectralTables {
   public:
    // Arrays in the layout of fastfm.space.PackedSpectra.  Throws
    // std::invalid_argument when the offsets and sizes are inconsistent.
    SpectralTables(std::size_t n_variables, const int64_t* n_states, const int64_t* eigvec_offsets,
                   const T* eigenvectors, std::size_t n_eigenvector_entries, const int64_t* group_offsets,
                   const T* group_values, const int64_t* group_sizes, std::size_t n_groups_total,
                   const uint8_t* is_complete) {
        if (eigvec_offsets[0] != 0 || group_offsets[0] != 0)
            throw std::invalid_argument("spectra offsets must start at 0");
        if (static_cast<std::size_t>(eigvec_offsets[n_variables]) != n_eigenvector_entries)
            throw std::invalid_argument("spectra.eigvec_offsets[-1] = " + std::to_string(eigvec_offsets[n_variables]) +
                                        " does not match len(eigenvectors) = " +
                                        std::to_string(n_eigenvector_entries));
        if (static_cast<std::size_t>(group_offsets[n_variables]) != n_groups_total)
            throw std::invalid_argument("spectra.group_offsets[-1] = " + std::to_string(group_offsets[n_variables]) +
                                        " does not match len(group_values) = " + std::to_string(n_groups_total));
        variables_.resize(n_variables);
        for (std::size_t p = 0; p < n_variables; ++p) {
            const int64_t n = n_states[p];
            const std::string where = " of discrete variable " + std::to_string(p);
            if (n < 1 || n > (int64_t(1) << 20))
                throw std::invalid_argument("spectra.n_states[" + std::to_string(p) + "] = " + std::to_string(n) +
                                            " must be a positive number of states");
            if (eigvec_offsets[p + 1] - eigvec_offsets[p] != n * n)
                throw std::invalid_argument("spectra.eigvec_offsets" + where + " span " +
                                            std::to_string(eigvec_offsets[p + 1] - eigvec_offsets[p]) +
                                            " entries, expected n_states² = " + std::to_string(n * n));
            const int64_t g0 = group_offsets[p], g1 = group_offsets[p + 1];
            if (g1 <= g0 || g1 - g0 > n)
                throw std::invalid_argument("spectra.group_offsets" + where + " give " + std::to_string(g1 - g0) +
                                            " groups for " + std::to_string(n) + " states");
            int64_t total = 0;
            for (int64_t g = g0; g < g1; ++g) {
                if (group_sizes[g] < 1)
                    throw std::invalid_argument("spectra.group_sizes[" + std::to_string(g) + "] must be >= 1");
                total += group_sizes[g];
            }
            if (total != n)
                throw std::invalid_argument("spectra.group_sizes" + where + " sum to " + std::to_string(total) +
                                            ", expected n_states = " + std::to_string(n));
            prepare_variable(variables_[p], static_cast<int>(n), eigenvectors + eigvec_offsets[p], group_values + g0,
                             group_sizes + g0, static_cast<int>(g1 - g0), is_complete[p] != 0);
        }
    }

    std::size_t n_variables() const { return variables_.size(); }
    const VariableSpectrum<T>& variable(std::size_t p) const { return variables_[p]; }
    int n_states(std::size_t p) const { return variables_[p].n_states; }
    int max_states() const {
        int m = 1;
        for (const auto& v : variables_) m = std::max(m, v.n_states);
        return m;
    }

   private:
    static void prepare_variable(VariableSpectrum<T>& var, int n, const T* U, const T* values, const int64_t* sizes,
                                 int n_groups, bool is_complete) {
        var.n_states = n;
        var.n_groups = n_groups;
        var.group_values.assign(values, values + n_groups);
        var.group_starts.assign(1, 0);
        for (int g = 0; g < n_groups; ++g) var.group_starts.push_back(var.group_starts.back() + static_cast<int>(sizes[g]));
        const std::size_t nn = static_cast<std::size_t>(n) * n;
        var.eigenvectors.assign(U, U + nn);
        var.eigenvectors_transposed.resize(nn);
        for (int v = 0; v < n; ++v)
            for (int i = 0; i < n; ++i) var.eigenvectors_transposed[static_cast<std::size_t>(i) * n + v] = U[v * n + i];
        if (is_complete && n > 1 && n_groups == 2 && values[0] == T(0)) {
            var.path = FactorPath::complete;  // exact weights 1/n and δ − 1/n, no table
            return;
        }
        if (nn * static_cast<std::size_t>(n_groups) <= kMaxProjectorEntries) {
            // P_g[v, w] = Σ_{i in group g} U[v, i] U[w, i]   (graphs.py: GraphSpectrum.projector)
            // kProjectorPadding trailing zeros: the mixed vector reduction kernel loads eight entries from
            // any row of the table (and selects the first n of them).
            std::vector<T> table(nn * n_groups + kProjectorPadding, T(0));
            for (int v = 0; v < n; ++v)
                for (int g = 0; g < n_groups; ++g)
                    for (int w = 0; w < n; ++w)
                        table[(static_cast<std::size_t>(v) * n_groups + g) * n + w] = var.projector_entry(v, g, w);
            var.projectors = std::move(table);
        }
        if (n >= 2 && n <= kMaxTridiagonalDetectStates) detect_tridiagonal(var);
    }

    // L = Σ_g μ_g P_g; tridiagonal when everything off the band is rounding noise.
    static void detect_tridiagonal(VariableSpectrum<T>& var) {
        const int n = var.n_states, G = var.n_groups;
        std::vector<T> L(static_cast<std::size_t>(n) * n, T(0));
        T scale = 0;
        for (int v = 0; v < n; ++v)
            for (int w = 0; w < n; ++w) {
                T sum = 0;
                for (int g = 0; g < G; ++g) sum += var.group_values[g] * var.projector_entry(v, g, w);
                L[static_cast<std::size_t>(v) * n + w] = sum;
                scale = std::max(scale, std::abs(sum));
            }
        if (!(scale > 0)) return;
        const T noise = T(1e-9) * scale;
        for (int v = 0; v < n; ++v)
            for (int w = 0; w < n; ++w)
                if (std::abs(v - w) > 1 && std::abs(L[static_cast<std::size_t>(v) * n + w]) > noise) return;
        std::vector<T> diagonal(n), coupling(n - 1);
        for (int k = 0; k < n; ++k) diagonal[k] = L[static_cast<std::size_t>(k) * n + k];
        for (int k = 0; k + 1 < n; ++k) {
            coupling[k] = -T(0.5) * (L[static_cast<std::size_t>(k) * n + k + 1] + L[static_cast<std::size_t>(k + 1) * n + k]);
            if (!(coupling[k] > noise)) return;  // a zero coupling would make the continuants singular
        }
        bool mirror = true;
        const T mirror_tol = T(1e-12) * scale;
        for (int k = 0; k < n && mirror; ++k) mirror = std::abs(diagonal[k] - diagonal[n - 1 - k]) <= mirror_tol;
        for (int k = 0; k + 1 < n && mirror; ++k) mirror = std::abs(coupling[k] - coupling[n - 2 - k]) <= mirror_tol;
        if (mirror) {  // make the symmetry exact, so that reversing the continuants is exact too
            for (int k = 0; k < n / 2; ++k) diagonal[k] = diagonal[n - 1 - k] = T(0.5) * (diagonal[k] + diagonal[n - 1 - k]);
            for (int k = 0; k < (n - 1) / 2; ++k)
                coupling[k] = coupling[n - 2 - k] = T(0.5) * (coupling[k] + coupling[n - 2 - k]);
        }
        var.laplacian_diagonal = std::move(diagonal);
        var.laplacian_coupling = std::move(coupling);
        var.mirror_symmetric = mirror;
        var.path = FactorPath::tridiagonal;
    }

    std::vector<VariableSpectrum<T>> variables_;
};

// ----------------------------------------------------------------------------
// Per-call plan: the hyperparameter-dependent constants of every factor
// ----------------------------------------------------------------------------

template <typename T>
struct VariablePlan {
    const VariableSpectrum<T>* spectrum = nullptr;
    FactorPath path = FactorPath::general;
    bool tridiagonal_gram = false;  // continuant path usable for F (single-term Laplace only)
    T alpha = 0, beta = 0;
    std::vector<T> shift;    // per group: 1 + βμ_g (Laplace) or βμ_g (diffusion)
    std::vector<T> beta_mu;  // per group: βμ_g
    // tridiagonal: 1 + βL[k,k]; (βw_k)²; and a_1 Π_{k=min(v,w)}^{max(v,w)−1} βw_k at [v*n + w]
    std::vector<T> diagonal_shift;
    std::vector<T> coupling_sq;
    std::vector<T> coupling_product;
    // Scaled continuants (n ≤ kMaxUnrolledStates): π_k = Π_{i<k} βw_i.  Usable
    // when every π_k lies in [1e-30, 1e30] (see multiply_factor_scaled_continuants).
    bool scaled_continuants = false;
    std::vector<T> inv_pi;        // 1/π_k, k < n
    std::vector<T> leading_pi;    // a_1 π_k, k < n
    // Rational form of F (single-term Laplace, complete graphs and tridiagonal graphs with at most
    // kRationalTableStates states; see multiply_rational_factors): F = Num_vw(s) / Den(s).
    FactorPath rational = FactorPath::general;  // general: not rational
    // All in the continuous argument r, s = α r folded into the coefficients (r^k carries α^k):
    // complete: Num = same_intercept + same_slope r for v' = v, off_numerator otherwise;
    // tridiagonal: Num_vw coefficient of r^k at rational_numerators[(v n + k) kRationalTableStates + w]
    // (zero-padded to the table width); both: Den coefficients of r^0..r^n in rational_denominator
    // (the plan multiplies them into FMPlan::rational_den_groups).
    T rational_same_intercept = 0, rational_same_slope = 0, rational_off_numerator = 0;
    std::vector<T> rational_denominator;
    std::vector<T> rational_numerators;
    T rational_floor = 0;  // min over v, w of Num_vw(0) (> 0): Num_vw(r) ≥ it for r ≥ 0
};


// The rational form of a single-term Laplace factor F = a_1 [((1+s)I + βL)⁻¹]_vw (paper Eq. 5 with
// f = a_1/u), whose Num and Den are polynomials in s with non-negative coefficients, so that
// Horner's rule at s ≥ 0 adds positive terms only (no cancellation):
//  complete graph: F = a_1 (1/n)/u0 + a_1 (δ − 1/n)/u1 with u_g = c_g + s; over Den = u0 u1
//      Num = a_1 (c1/n + (1 − 1/n) c0 + s) for v' = v, and a_1 βμ_1/n otherwise;
//  tridiagonal graph (Usmani, see multiply_factor_tridiagonal): Den = θ_n(s),
//      Num_vw = a_1 Π_{k=lo}^{hi−1} βw_k · θ_lo(s) φ_{hi+1}(s),  lo = min(v, w), hi = max(v, w),
//  whose continuants are products Π_i (λ_i + s) over the eigenvalues λ_i ≥ 1 of principal blocks of
//  I + βL: positive coefficients, Den(s) ≥ 1.
// The coefficients are stored for the continuous argument r (s = αr: that of r^k is α^k times that of
// s^k), so that the kernel loops need no s and the Den of all variables, functions of r alone, can be
// multiplied into one polynomial per group (FMPlan::prepare_rational).
template <typename T>
inline void prepare_rational_factor(VariablePlan<T>& var, T leading) {
    const VariableSpectrum<T>& spec = *var.spectrum;
    const int n = spec.n_states;
    const T alpha = var.alpha;
    // Every coefficient below is positive in exact arithmetic: one that rounds below the smallest normal
    // number (α^k underflowing for a tiny α) would drop a term that matters where αr is large, so the
    // factor then keeps its per-factor path.
    const T smallest = std::numeric_limits<T>::min();
    if (var.path == FactorPath::complete) {
        const T inv_n = T(1) / T(n), c0 = var.shift[0], c1 = var.shift[1];
        const T den[3] = {c0 * c1, alpha * (c0 + c1), alpha * alpha};  // (c0 + αr)(c1 + αr)
        if (!(den[2] >= smallest && den[0] >= smallest)) return;
        var.rational = FactorPath::complete;
        var.rational_same_intercept = leading * (c1 * inv_n + (T(1) - inv_n) * c0);
        var.rational_same_slope = leading * alpha;
        var.rational_off_numerator = leading * var.beta_mu[1] * inv_n;
        var.rational_floor = std::min(var.rational_same_intercept, var.rational_off_numerator);
        var.rational_denominator.assign(den, den + 3);
        return;
    }
    if (!var.tridiagonal_gram || n > kRationalTableStates) return;
    // The continuants' coefficients of s^0..s^n in fixed arrays: the plan is built on every kernel call,
    // small ones included, so the only heap allocations are the variable's table and Den.
    // θ_0 = 1, θ_1 = d_0 + s, θ_{k+1} = (d_k + s) θ_k − c_{k−1} θ_{k−1}; φ_n = 1, φ_k from the other end
    constexpr int W = kRationalTableStates;
    T theta[W + 1][W + 1] = {}, phi[W + 2][W + 1] = {};
    auto next = [n](T d, const T* cur, T c, const T* prev, T* out) {
        for (int i = 0; i <= n; ++i) out[i] = d * cur[i] + (i > 0 ? cur[i - 1] : T(0)) - c * prev[i];
    };
    theta[0][0] = T(1);
    theta[1][0] = var.diagonal_shift[0];
    theta[1][1] = T(1);
    for (int k = 1; k < n; ++k) next(var.diagonal_shift[k], theta[k], var.coupling_sq[k - 1], theta[k - 1], theta[k + 1]);
    phi[n][0] = T(1);
    phi[n - 1][0] = var.diagonal_shift[n - 1];
    phi[n - 1][1] = T(1);
    for (int k = n - 2; k >= 0; --k) next(var.diagonal_shift[k], phi[k + 1], var.coupling_sq[k], phi[k + 2], phi[k]);
    for (int i = 0; i <= n; ++i)
        if (!(theta[n][i] >= T(0))) return;  // rounding made a coefficient negative: keep the continuants
    T alpha_power[W + 1];  // α^k: the coefficient of s^k becomes that of r^k
    alpha_power[0] = T(1);
    for (int k = 1; k <= n; ++k) alpha_power[k] = alpha_power[k - 1] * alpha;
    std::vector<T> table(static_cast<std::size_t>(n) * n * W, T(0));
    T floor = std::numeric_limits<T>::infinity();
    for (int v = 0; v < n; ++v)
        for (int w = 0; w < n; ++w) {
            // Num_vw = coupling product · θ_lo φ_hi+1, of degree lo + (n − 1 − hi) ≤ n − 1
            const int lo = std::min(v, w), hi = std::max(v, w), degree = lo + (n - 1 - hi);
            const T product = var.coupling_product[static_cast<std::size_t>(v) * n + w];
            for (int k = 0; k <= degree; ++k) {
                T coefficient = T(0);
                for (int i = std::max(0, k - (n - 1 - hi)); i <= std::min(k, lo); ++i)
                    coefficient += theta[lo][i] * phi[hi + 1][k - i];
                if (!(coefficient >= T(0))) return;
                const T scaled = product * coefficient * alpha_power[k];
                if (coefficient > T(0) && !(scaled >= smallest)) return;
                table[(static_cast<std::size_t>(v) * n + k) * W + w] = scaled;
                if (k == 0) floor = std::min(floor, product * coefficient);
            }
        }
    var.rational_denominator.resize(static_cast<std::size_t>(n) + 1);
    for (int k = 0; k <= n; ++k) {
        var.rational_denominator[k] = theta[n][k] * alpha_power[k];
        if (!(var.rational_denominator[k] >= smallest)) return;
    }
    var.rational = FactorPath::tridiagonal;
    var.rational_numerators = std::move(table);
    var.rational_floor = floor;
}

// Largest graph for which the continuant recurrences are unrolled at compile time.
constexpr int kMaxUnrolledStates = 12;

template <typename T>
struct FMPlan {
    std::vector<VariablePlan<T>> variables;
    Modulation<T> modulation;
    T variance = 1;
    // σ² as the gradient paths use it: σ² a_1^P for a single-term modulation,
    // whose factors they evaluate with a_1 = 1 (see factor_derivatives).
    T derivative_variance = 1;
    bool single_term = false;  // Laplace family with one coefficient: f = a_1/u
    T leading = 1;             // a_1
    std::vector<T> df_coefficients;  // n·a_n, for ∂f/∂u = −Σ n a_n u^(−n−1)
    int max_states = 1;
    std::size_t n_continuous = 0;
    // Every variable nominal (complete graph) and f = a_1/u: the reduction then
    // has a register-blocked kernel (complete_reduction_registers).
    bool all_complete_single_term = false;
    // Set by prepare_rational: some variable has a rational form and the products of their Num and Den
    // over a chunk stay in range while Π Den ≤ rational_limit (see multiply_rational_factors).
    bool rational = false;
    bool all_rational = false;  // rational, and every variable has a rational form
    bool wide_vectors = wide_vector_registers();  // the vector kernels' lanes: kWideLanes, else kNarrowLanes
    T rational_limit = 0;
    // Π_p Den_p(r) over the rational variables, as two polynomials in r (ascending coefficients) whose
    // product it is: two Horner chains of half the degree each (a chain is latency-bound).
    std::vector<T> rational_den_groups[2];

    std::size_t n_variables() const { return variables.size(); }

    FMPlan(const SpectralTables<T>& tables, const T* alphas, const T* betas, T variance_, Modulation<T> modulation_,
           std::size_t n_continuous_, bool allow_tridiagonal = true)
        : modulation(std::move(modulation_)), variance(variance_), n_continuous(n_continuous_) {
        modulation.validate();
        single_term = modulation.kind == kLaplaceFamily && modulation.coefficients.size() == 1;
        leading = modulation.kind == kLaplaceFamily ? modulation.coefficients[0] : T(1);
        for (std::size_t k = 0; k < modulation.coefficients.size(); ++k)
            df_coefficients.push_back(T(k + 1) * modulation.coefficients[k]);
        max_states = tables.max_states();
        const std::size_t P = tables.n_variables();
        all_complete_single_term = single_term && P > 0;
        for (std::size_t p = 0; p < P; ++p)
            all_complete_single_term = all_complete_single_term && tables.variable(p).path == FactorPath::complete;
        derivative_variance = variance;
        if (single_term)
            for (std::size_t p = 0; p < P; ++p) derivative_variance *= leading;
        variables.resize(P);
        for (std::size_t p = 0; p < P; ++p) {
            const VariableSpectrum<T>& spec = tables.variable(p);
            VariablePlan<T>& var = variables[p];
            var.spectrum = &spec;
            var.path = spec.path == FactorPath::tridiagonal ? FactorPath::general : spec.path;
            var.alpha = alphas[p];
            var.beta = betas[p];
            for (int g = 0; g < spec.n_groups; ++g) {
                const T bm = betas[p] * spec.group_values[g];
                var.beta_mu.push_back(bm);
                var.shift.push_back(modulation.kind == kLaplaceFamily ? T(1) + bm : bm);
            }
            if (spec.path == FactorPath::tridiagonal && single_term && allow_tridiagonal) {
                var.tridiagonal_gram = true;
                const int n = spec.n_states;
                for (int k = 0; k < n; ++k) var.diagonal_shift.push_back(T(1) + betas[p] * spec.laplacian_diagonal[k]);
                for (int k = 0; k + 1 < n; ++k) {
                    const T c = betas[p] * spec.laplacian_coupling[k];
                    var.coupling_sq.push_back(c * c);
                }
                T pi = T(1);
                bool in_range = n <= kMaxUnrolledStates;
                for (int k = 0; k < n; ++k) {
                    in_range = in_range && pi >= T(1e-30) && pi <= T(1e30);
                    var.inv_pi.push_back(T(1) / pi);
                    var.leading_pi.push_back(leading * pi);
                    if (k + 1 < n) pi *= betas[p] * spec.laplacian_coupling[k];
                }
                var.scaled_continuants = in_range;
                var.coupling_product.assign(static_cast<std::size_t>(n) * n, T(0));
                for (int v = 0; v < n; ++v) {
                    T product = leading;
                    var.coupling_product[v * n + v] = product;
                    for (int w = v + 1; w < n; ++w) {
                        product *= betas[p] * spec.laplacian_coupling[w - 1];
                        var.coupling_product[v * n + w] = var.coupling_product[w * n + v] = product;
                    }
                }
            }
        }
    }

    // The rational forms of the factors (prepare_rational_factor) for kernel_row_chunk, i.e. the Gram
    // and K·V paths.  Not in the constructor: the tables cost about 2 µs per 8-state path, and the
    // other paths (neighbour rows, gradients) never read them.  Every Gram and K·V call prepares them,
    // whatever its size, so that a batched call agrees with an unbatched one to the last bit.
    void prepare_rational() {
        if (!single_term) return;
        for (VariablePlan<T>& var : variables) prepare_rational_factor(var, leading);
        // Every partial product of the Num_p is ≥ Π min(1, floor_p) (Num_p(s) ≥ Num_p(0) for s ≥ 0), and
        // ≤ max(1, a_1)^P times the partial product of the Den_p (F_p ≤ a_1: T(s) ⪰ I), itself ≤ Π Den_p
        // (each Den_p ≥ 1).  With R = (largest T)^0.49 (≈ 1e151 in double), Π min(1, floor_p) ≥ 1/R and
        // Π Den_p ≤ R / max(1, a_1)^P, every intermediate and the quotient Num/Den stay within [R⁻², R²],
        // normal numbers.  A plan whose limit would be below √R (a huge a_1) keeps the per-factor paths.
        const T range = std::pow(std::numeric_limits<T>::max(), T(0.49));
        T floor = T(1), growth = T(1);
        int n_rational = 0;
        for (const VariablePlan<T>& var : variables)
            if (var.rational != FactorPath::general) {
                ++n_rational;
                floor *= std::min(T(1), var.rational_floor);
                growth *= std::max(T(1), leading);
            }
        rational_limit = range / growth;
        rational = n_rational > 0 && floor >= T(1) / range && rational_limit >= std::sqrt(range);
        if (rational) rational = multiply_rational_denominators();
        all_rational = rational && n_rational == static_cast<int>(variables.size());
    }

    // rational_den_groups from the variables' Den polynomials, each variable to the group of lower degree
    // so far.  The coefficients are positive, so Horner's rule at r ≥ 0 adds positive terms only, and its
    // partial sums are at most the polynomial's value at max(1, r): if that is finite at r = 1 (checked
    // here), a chain can only overflow where its value does, which the caller's range test catches.  A
    // coefficient below the smallest normal number has underflowed (products of small α^k over many
    // variables), and the terms it drops matter where αr is large.  False: keep the per-factor paths.
    bool multiply_rational_denominators() {
        for (auto& group : rational_den_groups) group.assign(1, T(1));
        for (const VariablePlan<T>& var : variables) {
            if (var.rational == FactorPath::general) continue;
            std::vector<T>& group =
                rational_den_groups[rational_den_groups[1].size() < rational_den_groups[0].size() ? 1 : 0];
            const std::vector<T>& factor = var.rational_denominator;
            std::vector<T> product(group.size() + factor.size() - 1, T(0));
            for (std::size_t i = 0; i < group.size(); ++i)
                for (std::size_t k = 0; k < factor.size(); ++k) product[i + k] += group[i] * factor[k];
            group = std::move(product);
        }
        for (auto& group : rational_den_groups) {
            T at_one = 0;
            for (const T c : group) {
                if (!(c >= std::numeric_limits<T>::min())) return false;
                at_one += c;
            }
            if (!(at_one <= std::numeric_limits<T>::max())) return false;
        }
        return true;
    }
};

// ----------------------------------------------------------------------------
// Per-thread scratch
// ----------------------------------------------------------------------------

template <typename T>
struct Workspace {
    static constexpr std::size_t B = kColumnChunk;
    std::vector<T> sq, arg, scaled, prod, factor, x0, x1, horner, weights, omega, chain;
    std::vector<T> F, dF, dFb, others;  // n_variables × B
    std::vector<T> theta, phi;          // continuants: (2 max_states + 1) × B and (max_states + 1) × B
    std::vector<T> transposed_weights;  // kReductionTileRows × B block of Wᵀ (reduction)
    std::vector<T> beta_scale;          // per variable, see factor_derivatives
    std::vector<int32_t> gather_index;  // B
    std::vector<T> register_terms;      // (2 n_variables + 1) × B (complete_reduction_registers)
    std::vector<T> numerator, denominator;  // B each (multiply_rational_factors)

    Workspace(std::size_t n_variables, int max_states)
        : sq(B), arg(B), scaled(B), prod(B), factor(B), x0(B), x1(B), horner(B), weights(B), omega(B), chain(B),
          F(n_variables * B), dF(n_variables * B), dFb(n_variables * B), others(n_variables * B),
          theta((2 * static_cast<std::size_t>(max_states) + 1) * B), phi((static_cast<std::size_t>(max_states) + 1) * B),
          transposed_weights(kReductionTileRows * B), beta_scale(n_variables), gather_index(B),
          register_terms((2 * n_variables + 1) * B), numerator(B), denominator(B) {}
};

// ----------------------------------------------------------------------------
// Building blocks over one chunk of columns
// ----------------------------------------------------------------------------

// sq[j] = Σ_d (row[d] − column_d[j])²: the ARD distance of pre-scaled coordinates.
template <typename T>
inline void squared_distances(const T* FASTFM_RESTRICT row, const PointColumns<T>& cols, std::size_t j0,
                              std::size_t count, T* FASTFM_RESTRICT sq) {
    for (std::size_t j = 0; j < count; ++j) sq[j] = T(0);
    for (std::size_t d = 0; d < cols.n_continuous; ++d) {
        const T c = row[d];
        const T* FASTFM_RESTRICT col = cols.coordinate(d) + j0;
        for (std::size_t j = 0; j < count; ++j) {
            const T diff = c - col[j];
            sq[j] += diff * diff;
        }
    }
}

// r = d^t from sq = d².
template <typename T>
inline void continuous_argument(const T* FASTFM_RESTRICT sq, std::size_t count, T exponent, T* FASTFM_RESTRICT arg) {
    if (exponent == T(2)) {
        for (std::size_t j = 0; j < count; ++j) arg[j] = sq[j];
    } else if (exponent == T(1)) {
        for (std::size_t j = 0; j < count; ++j) arg[j] = std::sqrt(sq[j]);
    } else {
        const T half = T(0.5) * exponent;
        for (std::size_t j = 0; j < count; ++j) arg[j] = std::pow(sq[j], half);
    }
}

// f(μ_g, s) of the Laplace family for x = 1/u, by Horner: x(a_1 + x(a_2 + ...)).
template <typename T>
inline void laplace_family_values(const std::vector<T>& coefficients, const T* FASTFM_RESTRICT x, std::size_t count,
                                  T* FASTFM_RESTRICT f) {
    const std::size_t K = coefficients.size();
    for (std::size_t j = 0; j < count; ++j) f[j] = coefficients[K - 1];
    for (std::size_t k = K - 1; k-- > 0;) {
        const T a = coefficients[k];
        for (std::size_t j = 0; j < count; ++j) f[j] = f[j] * x[j] + a;
    }
    for (std::size_t j = 0; j < count; ++j) f[j] *= x[j];
}

// F_p for row state v against column states, multiplied into prod (the Gram path).
template <typename T>
inline void multiply_factor(const FMPlan<T>& plan, const VariablePlan<T>& var, int v,
                            const int32_t* FASTFM_RESTRICT states, const T* FASTFM_RESTRICT arg, std::size_t count,
                            T* FASTFM_RESTRICT prod, Workspace<T>& ws);

// w[j] = P_g[v, states[j]] for any storage (complete graphs: exact 1/n and δ − 1/n).
template <typename T>
inline void group_weights(const VariableSpectrum<T>& spec, int v, int g, const int32_t* FASTFM_RESTRICT states,
                          std::size_t count, T* FASTFM_RESTRICT w) {
    const int n = spec.n_states;
    if (spec.path == FactorPath::complete) {
        const T inv_n = T(1) / T(n);
        if (g == 0) {
            for (std::size_t j = 0; j < count; ++j) w[j] = inv_n;
        } else {
            const T w_same = T(1) - inv_n, w_other = -inv_n;
            for (std::size_t j = 0; j < count; ++j) w[j] = states[j] == v ? w_same : w_other;
        }
        return;
    }
    if (spec.has_projectors()) {
        const T* FASTFM_RESTRICT row = spec.projectors.data() + (static_cast<std::size_t>(v) * spec.n_groups + g) * n;
        for (std::size_t j = 0; j < count; ++j) w[j] = row[states[j]];
        return;
    }
    for (std::size_t j = 0; j < count; ++j) w[j] = T(0);
    for (int i = spec.group_starts[g]; i < spec.group_starts[g + 1]; ++i) {
        const T u = spec.eigenvectors[static_cast<std::size_t>(v) * n + i];
        const T* FASTFM_RESTRICT column = spec.eigenvectors_transposed.data() + static_cast<std::size_t>(i) * n;
        for (std::size_t j = 0; j < count; ++j) w[j] += u * column[states[j]];
    }
}

// f(μ_g, s[j]) for one group.
template <typename T>
inline void group_modulation_values(const FMPlan<T>& plan, const VariablePlan<T>& var, int g,
                                    const T* FASTFM_RESTRICT s, std::size_t count, T* FASTFM_RESTRICT x,
                                    T* FASTFM_RESTRICT f) {
    if (plan.modulation.kind == kDiffusion) {
        const T bm = var.beta_mu[g];
        if (bm == T(0)) {
            for (std::size_t j = 0; j < count; ++j) f[j] = T(1);
        } else {
            for (std::size_t j = 0; j < count; ++j) f[j] = std::exp(-(T(1) + s[j]) * bm);
        }
        return;
    }
    const T shift = var.shift[g];
    if (plan.single_term) {
        const T a1 = plan.leading;
        for (std::size_t j = 0; j < count; ++j) f[j] = a1 / (shift + s[j]);
        return;
    }
    for (std::size_t j = 0; j < count; ++j) x[j] = T(1) / (shift + s[j]);
    laplace_family_values(plan.modulation.coefficients, x, count, f);
}

// F = Σ_g f(μ_g, s) P_g[v, ·], multiplied into prod.
template <typename T>
inline void multiply_factor_general(const FMPlan<T>& plan, const VariablePlan<T>& var, int v,
                                    const int32_t* FASTFM_RESTRICT states, const T* FASTFM_RESTRICT arg,
                                    std::size_t count, T* FASTFM_RESTRICT prod, Workspace<T>& ws) {
    const VariableSpectrum<T>& spec = *var.spectrum;
    const int n = spec.n_states, G = spec.n_groups;
    const T alpha = var.alpha;
    T* FASTFM_RESTRICT F = ws.factor.data();
    T* FASTFM_RESTRICT s = ws.scaled.data();
    T* FASTFM_RESTRICT x = ws.x0.data();
    T* FASTFM_RESTRICT f = ws.horner.data();
    T* FASTFM_RESTRICT w = ws.x1.data();
    for (std::size_t j = 0; j < count; ++j) {
        F[j] = T(0);
        s[j] = alpha * arg[j];
    }
    const bool fused = spec.has_projectors() && plan.single_term;
    for (int g = 0; g < G; ++g) {
        if (fused) {  // the hot case: one division and one gather per group and pair
            const T* FASTFM_RESTRICT weight = spec.projectors.data() + (static_cast<std::size_t>(v) * G + g) * n;
            const T shift = var.shift[g], a1 = plan.leading;
            for (std::size_t j = 0; j < count; ++j) F[j] += weight[states[j]] * (a1 / (shift + s[j]));
            continue;
        }
        group_modulation_values(plan, var, g, s, count, x, f);
        group_weights(spec, v, g, states, count, w);
        for (std::size_t j = 0; j < count; ++j) F[j] += w[j] * f[j];
    }
    for (std::size_t j = 0; j < count; ++j) prod[j] *= F[j];
}

// Largest leading continuant θ_n for which products of two continuants stay finite.
template <typename T>
constexpr T continuant_limit() {
    return T(1e150);
}

// The same for the scaled continuants A_k B_k, which also carry π_k ∈ [1e-30, 1e30].
template <typename T>
constexpr T scaled_continuant_limit() {
    return T(1e100);
}

// θ_k for k = 0..n of T = (1+s)I + βL, at theta[k*B + j]:
//     θ_0 = 1,  θ_1 = a_0,  θ_{k+1} = a_k θ_k − (βw_{k−1})² θ_{k−1},   a_k = 1 + βL_kk + s.
template <typename T>
inline void leading_continuants(int n, const T* FASTFM_RESTRICT dshift, const T* FASTFM_RESTRICT csq,
                                const T* FASTFM_RESTRICT s, std::size_t count, T* FASTFM_RESTRICT theta) {
    constexpr std::size_t B = Workspace<T>::B;
    for (std::size_t j = 0; j < count; ++j) {
        theta[j] = T(1);
        theta[B + j] = dshift[0] + s[j];
    }
    for (int k = 1; k < n; ++k) {
        T* FASTFM_RESTRICT next = theta + (k + 1) * B;
        const T* FASTFM_RESTRICT cur = theta + k * B;
        const T* FASTFM_RESTRICT prev = theta + (k - 1) * B;
        const T d = dshift[k], c = csq[k - 1];
        for (std::size_t j = 0; j < count; ++j) next[j] = (d + s[j]) * cur[j] - c * prev[j];
    }
}

// The resolvent entry F = a_1 [T⁻¹]_{vw} (Usmani's formula, see
// multiply_factor_tridiagonal) with one gather per pair.  With
// π_k = Π_{i<k} βw_i the coupling product is π_hi/π_lo, so
//     F = A_lo · B_hi / θ_n,   A_k = θ_k/π_k,   B_k = a_1 π_k φ_{k+1}.
// One of lo, hi is the row state v, whose A_v, B_v rows are read contiguously;
// only the other (the column state) is gathered.  θ_k, φ_k are computed in
// registers (recurrences unrolled for N states).  Requires θ_n ≤ 1e100 and
// π_k within [1e-30, 1e30] so that A·B cannot overflow or underflow.
// Returns false (prod untouched) when θ_n is out of that range.
template <typename T, int N, bool Mirror>
inline bool multiply_factor_scaled_continuants(const VariablePlan<T>& var, int v,
                                               const int32_t* FASTFM_RESTRICT states, const T* FASTFM_RESTRICT arg,
                                               std::size_t count, T* FASTFM_RESTRICT prod, Workspace<T>& ws) {
    constexpr std::size_t B = Workspace<T>::B;
    const T alpha = var.alpha;
    const T* FASTFM_RESTRICT dshift = var.diagonal_shift.data();
    const T* FASTFM_RESTRICT csq = var.coupling_sq.data();
    const T* FASTFM_RESTRICT inv_pi = var.inv_pi.data();
    const T* FASTFM_RESTRICT leading_pi = var.leading_pi.data();
    T* FASTFM_RESTRICT AB = ws.theta.data();  // rows 0..N−1: A_k; rows N..2N−1: B_k
    T* FASTFM_RESTRICT det = ws.x0.data();
    // ivdep: the rows of AB, det and the inputs never overlap; without it GCC
    // versions the loop on a run-time alias check and runs the scalar copy.
#pragma GCC ivdep
    for (std::size_t j = 0; j < count; ++j) {
        const T s = alpha * arg[j];
        T theta[N + 1];
        theta[0] = T(1);
        theta[1] = dshift[0] + s;
#pragma GCC unroll 16
        for (int k = 1; k < N; ++k) theta[k + 1] = (dshift[k] + s) * theta[k] - csq[k - 1] * theta[k - 1];
#pragma GCC unroll 16
        for (int k = 0; k < N; ++k) AB[k * B + j] = theta[k] * inv_pi[k];
        if (Mirror) {  // φ_{k+1} = θ_{N−1−k}
#pragma GCC unroll 16
            for (int k = 0; k < N; ++k) AB[(N + k) * B + j] = leading_pi[k] * theta[N - 1 - k];
        } else {
            T phi[N + 1];
            phi[N] = T(1);
            phi[N - 1] = dshift[N - 1] + s;
#pragma GCC unroll 16
            for (int k = N - 2; k >= 0; --k) phi[k] = (dshift[k] + s) * phi[k + 1] - csq[k] * phi[k + 2];
#pragma GCC unroll 16
            for (int k = 0; k < N; ++k) AB[(N + k) * B + j] = leading_pi[k] * phi[k + 1];
        }
        det[j] = theta[N];
    }
    int overflow = 0;  // an integer OR reduction vectorises; a max over doubles would not (NaN rules)
    for (std::size_t j = 0; j < count; ++j) overflow |= det[j] <= scaled_continuant_limit<T>() ? 0 : 1;
    if (overflow) return false;
    const T* FASTFM_RESTRICT A_row = AB + static_cast<std::size_t>(v) * B;
    const T* FASTFM_RESTRICT B_row = AB + static_cast<std::size_t>(N + v) * B;
    // w ≤ v: lo = w, hi = v → A_w B_v;  w > v: lo = v, hi = w → A_v B_w.
    // The gather index goes through memory: computed in the same loop as the
    // select below, GCC would turn the gather into two masked loads and give up.
    int32_t* FASTFM_RESTRICT index = ws.gather_index.data();
    const int32_t chunk = static_cast<int32_t>(B);
    for (std::size_t j = 0; j < count; ++j) {
        const int32_t w = states[j];
        index[j] = (w <= v ? w : N + w) * chunk + static_cast<int32_t>(j);
    }
    const int32_t first_above = (v + 1) * chunk;  // index < first_above ⇔ w ≤ v
    for (std::size_t j = 0; j < count; ++j) {
        const T gathered = AB[index[j]];
        const T a_v = A_row[j], b_v = B_row[j];
        const T contiguous = index[j] < first_above ? b_v : a_v;
        prod[j] *= gathered * contiguous / det[j];
    }
    return true;
}

template <typename T>
inline bool multiply_factor_scaled_continuants(const VariablePlan<T>& var, int v, const int32_t* states,
                                               const T* arg, std::size_t count, T* prod, Workspace<T>& ws) {
    const bool mirror = var.spectrum->mirror_symmetric;
#define FASTFM_SCALED_CASE(N)                                                                                     \
    case N:                                                                                                       \
        return mirror ? multiply_factor_scaled_continuants<T, N, true>(var, v, states, arg, count, prod, ws)     \
                      : multiply_factor_scaled_continuants<T, N, false>(var, v, states, arg, count, prod, ws);
    switch (var.spectrum->n_states) {
        FASTFM_SCALED_CASE(2)
        FASTFM_SCALED_CASE(3)
        FASTFM_SCALED_CASE(4)
        FASTFM_SCALED_CASE(5)
        FASTFM_SCALED_CASE(6)
        FASTFM_SCALED_CASE(7)
        FASTFM_SCALED_CASE(8)
        FASTFM_SCALED_CASE(9)
        FASTFM_SCALED_CASE(10)
        FASTFM_SCALED_CASE(11)
        FASTFM_SCALED_CASE(12)
        default: return false;
    }
#undef FASTFM_SCALED_CASE
}

// Resolvent entries of a tridiagonal Laplacian (Usmani 1994, "Inversion of a
// tridiagonal Jacobi matrix"):  for T = (1+s)I + βL with off-diagonal −βw_k,
//     [T⁻¹]_{vw} = Π_{k=v}^{w−1} βw_k · θ_v φ_{w+1} / θ_n      (v ≤ w)
// θ_k = det of the leading k×k block, φ_k of the trailing block from k.
// Every eigenvalue of T and of its principal blocks is ≥ 1, so θ, φ ≥ 1 and
// grow monotonically (no cancellation blow-up; forward recurrence is stable).
// Returns false (nothing written) when θ_n is too large for the products.
template <typename T>
inline bool multiply_factor_tridiagonal(const VariablePlan<T>& var, int v, const int32_t* FASTFM_RESTRICT states,
                                        const T* FASTFM_RESTRICT arg, std::size_t count, T* FASTFM_RESTRICT prod,
                                        Workspace<T>& ws) {
    constexpr std::size_t B = Workspace<T>::B;
    const int n = var.spectrum->n_states;
    const T alpha = var.alpha;
    T* FASTFM_RESTRICT theta = ws.theta.data();
    T* FASTFM_RESTRICT s = ws.scaled.data();
    const T* FASTFM_RESTRICT dshift = var.diagonal_shift.data();
    const T* FASTFM_RESTRICT csq = var.coupling_sq.data();
    for (std::size_t j = 0; j < count; ++j) s[j] = alpha * arg[j];
    leading_continuants(n, dshift, csq, s, count, theta);
    const T* FASTFM_RESTRICT det = theta + n * B;
    int overflow = 0;  // an integer OR reduction vectorises; a max over doubles would not (NaN rules)
    for (std::size_t j = 0; j < count; ++j) overflow |= det[j] <= continuant_limit<T>() ? 0 : 1;
    if (overflow) return false;
    const T* FASTFM_RESTRICT product_row = var.coupling_product.data() + static_cast<std::size_t>(v) * n;
    if (var.spectrum->mirror_symmetric) {
        // φ_{k} = θ_{n−k}, so φ_{max+1} = θ_{n−1−max}
        for (std::size_t j = 0; j < count; ++j) {
            const int w = states[j];
            const int lo = w < v ? w : v;
            const int hi = w < v ? v : w;
            prod[j] *= product_row[w] * theta[lo * B + j] * theta[(n - 1 - hi) * B + j] / det[j];
        }
        return true;
    }
    T* FASTFM_RESTRICT phi = ws.phi.data();
    for (std::size_t j = 0; j < count; ++j) {
        phi[n * B + j] = T(1);
        phi[(n - 1) * B + j] = dshift[n - 1] + s[j];
    }
    for (int k = n - 2; k >= 0; --k) {
        T* FASTFM_RESTRICT next = phi + k * B;
        const T* FASTFM_RESTRICT cur = phi + (k + 1) * B;
        const T* FASTFM_RESTRICT prev = phi + (k + 2) * B;
        const T d = dshift[k], c = csq[k];
        for (std::size_t j = 0; j < count; ++j) next[j] = (d + s[j]) * cur[j] - c * prev[j];
    }
    for (std::size_t j = 0; j < count; ++j) {
        const int w = states[j];
        const int lo = w < v ? w : v;
        const int hi = w < v ? v : w;
        prod[j] *= product_row[w] * theta[lo * B + j] * phi[(hi + 1) * B + j] / det[j];
    }
    return true;
}

template <typename T>
inline void multiply_factor(const FMPlan<T>& plan, const VariablePlan<T>& var, int v,
                            const int32_t* FASTFM_RESTRICT states, const T* FASTFM_RESTRICT arg, std::size_t count,
                            T* FASTFM_RESTRICT prod, Workspace<T>& ws) {
    const T alpha = var.alpha;
    if (var.path == FactorPath::complete) {
        const T inv_n = T(1) / T(var.spectrum->n_states);
        const T c0 = var.shift[0], c1 = var.shift[1];
        // F = f0·P_0 + f1·P_1 with P_0 = 1/n, P_1 = δ_vv' − 1/n (a select between
        // two constants, which GCC vectorises; see factor_derivatives)
        const T w_same = T(1) - inv_n, w_other = -inv_n;
        if (plan.modulation.kind == kDiffusion) {
            const T bm = var.beta_mu[1];
            for (std::size_t j = 0; j < count; ++j) {
                const T f1 = std::exp(-(T(1) + alpha * arg[j]) * bm);
                const T w1 = states[j] == v ? w_same : w_other;
                prod[j] *= inv_n + w1 * f1;
            }
        } else if (plan.single_term) {
            // v ≠ v': F = a_1 (1/u0 − 1/u1)/n = a_1 βμ_1/(n u0 u1), exactly, without the
            // cancellation of the difference (it loses every digit when s ≫ βμ_1).
            // F = a x0 + b x1 + c/(u0 u1) with (a, b, c) = (1/n, 1 − 1/n, 0) or (0, 0, βμ_1/n):
            // selecting coefficients keeps the loop vectorisable and both cases exact.
            const T a1 = plan.leading, off_numerator = var.beta_mu[1] * inv_n;
            for (std::size_t j = 0; j < count; ++j) {
                const T s = alpha * arg[j];
                const T u0 = c0 + s, u1 = c1 + s;
                const T inv = a1 / (u0 * u1);  // both reciprocals from one division
                const bool same = states[j] == v;
                const T a = same ? inv_n : T(0), b = same ? w_same : T(0), c = same ? T(0) : off_numerator;
                prod[j] *= a * (u1 * inv) + b * (u0 * inv) + c * inv;
            }
        } else {
            T* FASTFM_RESTRICT x0 = ws.x0.data();
            T* FASTFM_RESTRICT x1 = ws.x1.data();
            T* FASTFM_RESTRICT f0 = ws.horner.data();
            T* FASTFM_RESTRICT f1 = ws.factor.data();
            for (std::size_t j = 0; j < count; ++j) {
                const T s = alpha * arg[j];
                const T u0 = c0 + s, u1 = c1 + s;
                const T inv = T(1) / (u0 * u1);
                x0[j] = u1 * inv;
                x1[j] = u0 * inv;
            }
            laplace_family_values(plan.modulation.coefficients, x0, count, f0);
            laplace_family_values(plan.modulation.coefficients, x1, count, f1);
            for (std::size_t j = 0; j < count; ++j) {
                const T w1 = states[j] == v ? w_same : w_other;
                prod[j] *= f0[j] * inv_n + w1 * f1[j];
            }
        }
        return;
    }
    if (var.tridiagonal_gram) {
        if (var.scaled_continuants && multiply_factor_scaled_continuants(var, v, states, arg, count, prod, ws)) return;
        if (multiply_factor_tridiagonal(var, v, states, arg, count, prod, ws)) return;
    }
    multiply_factor_general(plan, var, v, states, arg, count, prod, ws);
}

// The gradient paths: for row state v, F_p, dF_dR = α_p ∂F_p/∂s (= ∂F_p/∂R)
// and dFb such that β_p ∂F_p/∂β_p = (returned scale) × dFb.  Keeping the
// scale out of the per-pair arrays saves a multiplication per pair on
// complete graphs, where β∂F/∂β = βμ_1 · P_1 ∂f(μ_1)/∂u.
// For a single-term Laplace modulation the factor is evaluated with a_1 = 1:
// the caller multiplies σ² by a_1^P instead (FMPlan::derivative_variance).
template <typename T>
inline T factor_derivatives(const FMPlan<T>& plan, const VariablePlan<T>& var, int v,
                            const int32_t* FASTFM_RESTRICT states, const T* FASTFM_RESTRICT arg, std::size_t count,
                            T* FASTFM_RESTRICT F, T* FASTFM_RESTRICT dF_dR, T* FASTFM_RESTRICT dFb,
                            Workspace<T>& ws) {
    const VariableSpectrum<T>& spec = *var.spectrum;
    const T alpha = var.alpha;
    const bool diffusion = plan.modulation.kind == kDiffusion;

    if (var.path == FactorPath::complete && plan.single_term) {
        // f = 1/u, ∂f/∂u = −1/u²;  F = x0/n + w1 x1,  ∂F/∂s = −(x0²/n + w1 x1²),
        // β∂F/∂β = −βμ_1 w1 x1²  with w1 = P_1[v, v'] = δ_vv' − 1/n.  For v ≠ v' the
        // differences are evaluated exactly (see multiply_factor): F = βμ_1/(n u0 u1),
        // ∂F/∂s = −F (x0 + x1).
        const T inv_n = T(1) / T(spec.n_states);
        const T c0 = var.shift[0], c1 = var.shift[1], off_numerator = var.beta_mu[1] * inv_n;
        // Selects between values (rather than a multiplication by δ) let GCC
        // if-convert and vectorise the loop without -fno-trapping-math.
        const T w_same = T(1) - inv_n, w_other = -inv_n;
        for (std::size_t j = 0; j < count; ++j) {
            const T s = alpha * arg[j];
            const T u0 = c0 + s, u1 = c1 + s;
            const T inv = T(1) / (u0 * u1);  // both reciprocals from one division
            const T x0 = u1 * inv, x1 = u0 * inv;
            // coefficients selected, not values: see multiply_factor
            const bool same = states[j] == v;
            const T w1 = same ? w_same : w_other;
            const T a = same ? inv_n : T(0), b = same ? w_same : T(0), c = same ? T(0) : off_numerator;
            const T x0_sq = x0 * x0, x1_sq = x1 * x1;
            F[j] = a * x0 + b * x1 + c * inv;
            dF_dR[j] = -alpha * (a * x0_sq + b * x1_sq + c * inv * (x0 + x1));
            dFb[j] = w1 * x1_sq;
        }
        return -var.beta_mu[1];
    }

    T* FASTFM_RESTRICT s = ws.scaled.data();
    for (std::size_t j = 0; j < count; ++j) {
        s[j] = alpha * arg[j];
        F[j] = dF_dR[j] = dFb[j] = T(0);
    }
    const int G = spec.n_groups;
    if (!diffusion && plan.single_term && spec.has_projectors()) {
        // Σ_g P_g[v, ·] (x, −x², −βμ_g x²) with x = 1/(1 + βμ_g + s), one gather per group.
        // Groups go in pairs: both reciprocals from one division (x_a = u_b/(u_a u_b)) and one
        // read-modify-write of F, dF_dR, dFb per pair instead of per group.
        const int n = spec.n_states;
        int g = 0;
        for (; g + 1 < G; g += 2) {
            const T* FASTFM_RESTRICT weight_a = spec.projectors.data() + (static_cast<std::size_t>(v) * G + g) * n;
            const T* FASTFM_RESTRICT weight_b = weight_a + n;
            const T shift_a = var.shift[g], shift_b = var.shift[g + 1];
            const T minus_bm_a = -var.beta_mu[g], minus_bm_b = -var.beta_mu[g + 1];
            for (std::size_t j = 0; j < count; ++j) {
                const T u_a = shift_a + s[j], u_b = shift_b + s[j];
                const T inv = T(1) / (u_a * u_b);
                const T x_a = u_b * inv, x_b = u_a * inv;
                const int32_t w = states[j];
                const T wx_a = weight_a[w] * x_a, wx_b = weight_b[w] * x_b;
                const T wx2_a = wx_a * x_a, wx2_b = wx_b * x_b;
                F[j] += wx_a + wx_b;
                dF_dR[j] -= wx2_a + wx2_b;
                dFb[j] += minus_bm_a * wx2_a + minus_bm_b * wx2_b;
            }
        }
        for (; g < G; ++g) {
            const T* FASTFM_RESTRICT weight = spec.projectors.data() + (static_cast<std::size_t>(v) * G + g) * n;
            const T shift = var.shift[g], minus_bm = -var.beta_mu[g];
            for (std::size_t j = 0; j < count; ++j) {
                const T x = T(1) / (shift + s[j]);
                const T wx = weight[states[j]] * x;
                const T wx2 = wx * x;
                F[j] += wx;
                dF_dR[j] -= wx2;
                dFb[j] += minus_bm * wx2;
            }
        }
        for (std::size_t j = 0; j < count; ++j) dF_dR[j] *= alpha;
        return T(1);
    }

    // General form Σ_g w_g (f, ∂f/∂s, β∂f/∂β) for any storage and modulation.
    T* FASTFM_RESTRICT x = ws.x0.data();
    T* FASTFM_RESTRICT f = ws.horner.data();
    T* FASTFM_RESTRICT g_df = ws.x1.data();
    T* FASTFM_RESTRICT w = ws.factor.data();
    for (int g = 0; g < G; ++g) {
        group_weights(spec, v, g, states, count, w);
        const T bm = var.beta_mu[g];
        if (diffusion) {
            // f = exp(−(1+s)βμ), ∂f/∂s = −βμ f, β∂f/∂β = −(1+s)βμ f
            for (std::size_t j = 0; j < count; ++j) {
                const T fj = bm == T(0) ? T(1) : std::exp(-(T(1) + s[j]) * bm);
                F[j] += w[j] * fj;
                dF_dR[j] -= w[j] * bm * fj;
                dFb[j] -= w[j] * (T(1) + s[j]) * bm * fj;
            }
            continue;
        }
        const T shift = var.shift[g];
        if (plan.single_term) {
            for (std::size_t j = 0; j < count; ++j) {
                const T xj = T(1) / (shift + s[j]);
                const T wx = w[j] * xj;
                F[j] += wx;
                dF_dR[j] -= wx * xj;
                dFb[j] -= wx * xj * bm;
            }
            continue;
        }
        for (std::size_t j = 0; j < count; ++j) x[j] = T(1) / (shift + s[j]);
        laplace_family_values(plan.modulation.coefficients, x, count, f);
        // ∂f/∂u = −x² Σ n a_n x^(n−1): Horner on n·a_n gives x Σ n a_n x^(n−1)
        laplace_family_values(plan.df_coefficients, x, count, g_df);
        for (std::size_t j = 0; j < count; ++j) {
            const T dfj = -g_df[j] * x[j];
            F[j] += w[j] * f[j];
            dF_dR[j] += w[j] * dfj;
            dFb[j] += w[j] * dfj * bm;
        }
    }
    for (std::size_t j = 0; j < count; ++j) dF_dR[j] *= alpha;
    return T(1);
}

// suffix[p][j] = Π_{q>p} F_q[j] (suffix[P−1] = 1).  With a running prefix
// product this gives Q_p = Π_{q≠p} F_q without division (factors may be 0;
// numpy_backend._products_of_others).
template <typename T>
inline void suffix_products(std::size_t P, const T* FASTFM_RESTRICT F, std::size_t count,
                            T* FASTFM_RESTRICT suffix) {
    constexpr std::size_t B = Workspace<T>::B;
    if (P == 0) return;
    for (std::size_t j = 0; j < count; ++j) suffix[(P - 1) * B + j] = T(1);
    for (std::size_t p = P - 1; p-- > 0;)
        for (std::size_t j = 0; j < count; ++j) suffix[p * B + j] = suffix[(p + 1) * B + j] * F[(p + 1) * B + j];
}

// Q_p = Π_{q≠p} F_q by suffix then prefix products (no division: factors may
// be 0; numpy_backend._products_of_others).  total[j] = Π_q F_q.
template <typename T>
inline void products_of_others(std::size_t P, const T* FASTFM_RESTRICT F, std::size_t count,
                               T* FASTFM_RESTRICT others, T* FASTFM_RESTRICT total) {
    constexpr std::size_t B = Workspace<T>::B;
    if (P == 0) {
        for (std::size_t j = 0; j < count; ++j) total[j] = T(1);
        return;
    }
    for (std::size_t j = 0; j < count; ++j) others[(P - 1) * B + j] = T(1);
    for (std::size_t p = P - 1; p-- > 0;)
        for (std::size_t j = 0; j < count; ++j) others[p * B + j] = others[(p + 1) * B + j] * F[(p + 1) * B + j];
    for (std::size_t j = 0; j < count; ++j) total[j] = T(1);
    for (std::size_t p = 0; p < P; ++p)
        for (std::size_t j = 0; j < count; ++j) {
            others[p * B + j] *= total[j];
            total[j] *= F[p * B + j];
        }
}

template <typename T>
inline T sum_of(const T* FASTFM_RESTRICT x, std::size_t count) {
    T total = 0;
#pragma omp simd reduction(+ : total)
    for (std::size_t j = 0; j < count; ++j) total += x[j];
    return total;
}

// Largest number of variables with a register-blocked reduction kernel.
constexpr int kMaxRegisterVariables = 8;

#if defined(__GNUC__)
#define FASTFM_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define FASTFM_ALWAYS_INLINE inline
#endif

// The product rule shared by the register reduction kernels, for one column (V = T) or
// eight (V = a GCC vector of T): given F_p, ∂F_p/∂R and the β terms y_p of every variable,
// Q_p = Π_{q≠p} F_q from suffix products and the running prefix — `running` enters as
// W σ² and leaves as W σ² Π_q F_q = W K — and the terms W Q_p ∂F_p/∂R · R and W Q_p y_p
// are added to the α and β accumulators.  Returns ω = Σ_p W σ² Q_p ∂F_p/∂R, the weight of
// the lengthscale chain rule.  StaticP > 0 fixes P at compile time (the loops unroll fully, as in the
// hand-written kernels this replaced; measured: a runtime P inlined into them was 25 % slower on
// Ackley5C); StaticP = 0 takes the runtime P of the mixed kernel.
template <typename T, int StaticP, typename V>
FASTFM_ALWAYS_INLINE V accumulate_product_rule(int runtime_P, const V* F, const V* dF_dR, const V* y, V r,
                                               V& running, V* acc_alpha, V* acc_beta, V* suffix) {
    const int P = StaticP > 0 ? StaticP : runtime_P;
    suffix[P - 1] = V{} + T(1);
#pragma GCC unroll 16
    for (int p = P - 2; p >= 0; --p) suffix[p] = suffix[p + 1] * F[p + 1];
    V omega = V{};
#pragma GCC unroll 16
    for (int p = 0; p < P; ++p) {
        const V weighted_others = running * suffix[p];
        const V dK_dR = weighted_others * dF_dR[p];
        omega += dK_dR;
        acc_alpha[p] += dK_dR * r;
        acc_beta[p] += weighted_others * y[p];
        running *= F[p];
    }
    return omega;
}

// Constants of a complete-graph (nominal) factor for a row in state v, for the register kernels:
// u0 = c0 + s, u1 = c1 + s; F = inv_n·x0 + w_same·x1 for a column in state v, off_numerator/(u0 u1)
// otherwise; the projector weight of the second group is w_same or w_other (factor_derivatives).
template <typename T>
FASTFM_ALWAYS_INLINE void nominal_constants(const VariablePlan<T>& var, T& c0, T& c1, T& inv_n, T& w_same,
                                            T& w_other, T& off_numerator) {
    c0 = var.shift[0];
    c1 = var.shift[1];
    inv_n = T(1) / T(var.spectrum->n_states);
    w_same = T(1) - inv_n;
    w_other = -inv_n;
    off_numerator = var.beta_mu[1] * inv_n;
}

// F, ∂F/∂R (= α ∂F/∂s) and the β term y (β∂F/∂β = −βμ_1 y) of a complete-graph factor at s = αR,
// for one column (V = T, `same` a bool) or eight (V a GCC vector, `same` its lane mask): the exact
// forms with selected coefficients of multiply_factor / factor_derivatives.
template <typename T, typename V, typename Mask>
FASTFM_ALWAYS_INLINE void nominal_factor_derivatives(V s, Mask same, T alpha, T c0, T c1, T inv_n, T w_same,
                                                     T w_other, T off_numerator, V& F, V& dF_dR, V& y) {
    const V zero = V{};
    const V u0 = c0 + s, u1 = c1 + s;
    const V inv = T(1) / (u0 * u1);  // both reciprocals from one division
    const V x0 = u1 * inv, x1 = u0 * inv;
    const V w1 = same ? zero + w_same : zero + w_other;
    const V a = same ? zero + inv_n : zero, b = same ? zero + w_same : zero;
    const V c = same ? zero : zero + off_numerator;
    const V x0_sq = x0 * x0, x1_sq = x1 * x1;
    F = a * x0 + b * x1 + c * inv;
    y = w1 * x1_sq;
    dF_dR = -alpha * (a * x0_sq + b * x1_sq + c * inv * (x0 + x1));
}

// The first m ≤ (lanes) elements of src as a GCC vector (the rest zero): one load for a full vector.
template <typename Lanes, typename E>
FASTFM_ALWAYS_INLINE Lanes load_lanes(const E* src, std::size_t m) {
    Lanes v = {};
    if (m == sizeof(Lanes) / sizeof(E))
        std::memcpy(&v, src, sizeof v);
    else
        for (std::size_t l = 0; l < m; ++l) v[l] = src[l];
    return v;
}

// Σ of the lanes of a GCC vector, in lane order.
template <typename T, typename V>
FASTFM_ALWAYS_INLINE T sum_of_lanes(const V& v) {
    T total = T(0);
    for (int lane = 0; lane < static_cast<int>(sizeof(V) / sizeof(T)); ++lane) total += v[lane];
    return total;
}

// The vector kernels' epilogue: sums[p] = Σ lanes acc_alpha[p], sums[P + p] = beta_scale[p] Σ lanes
// acc_beta[p], sums[2P] = Σ lanes acc_variance.
template <typename T, typename V>
FASTFM_ALWAYS_INLINE void store_lane_sums(int P, const V* acc_alpha, const V* acc_beta, const V& acc_variance,
                                          const T* beta_scale, T* sums) {
    for (int p = 0; p < P; ++p) {
        sums[p] = sum_of_lanes<T>(acc_alpha[p]);
        sums[P + p] = beta_scale[p] * sum_of_lanes<T>(acc_beta[p]);
    }
    sums[2 * P] = sum_of_lanes<T>(acc_variance);
}

// The reduction for one row and a chunk of columns when every variable is
// nominal and f = 1/u (a_1 folded into σ²): F_p, ∂F_p/∂R and β∂F_p/∂β (see
// factor_derivatives), the products of the other factors and the weighted
// terms, all in registers for a compile-time P — the array passes of the
// general path cost about as much as the arithmetic.  It returns the chunk's
// sums Σ_j W σ² Q_p ∂F_p/∂R R (sums[p]), Σ_j W σ² Q_p β∂F_p/∂β (sums[P + p], i.e.
// −βμ_1 Σ_j W σ² Q_p dFb_p) and Σ_j W K (sums[2P]), and writes omega[j] =
// Σ_p W σ² Q_p ∂F_p/∂R for the lengthscale chain rule.  (Explicit vector
// accumulators rather than an OpenMP array reduction: GCC privatises that
// through memory, measured 3× slower.)
template <typename T, int P, int W>
inline void complete_reduction_registers(const FMPlan<T>& plan, const int64_t* FASTFM_RESTRICT v,
                                         const int32_t* FASTFM_RESTRICT states, std::size_t ld,
                                         const T* FASTFM_RESTRICT arg, const T* FASTFM_RESTRICT wts,
                                         std::size_t count, T* FASTFM_RESTRICT omega, T* FASTFM_RESTRICT sums) {
    T alpha[P], c0[P], c1[P], inv_n[P], w_same[P], w_other[P], off_numerator[P];
    int32_t row_state[P];
    for (int p = 0; p < P; ++p) {
        const VariablePlan<T>& var = plan.variables[p];
        alpha[p] = var.alpha;
        nominal_constants(var, c0[p], c1[p], inv_n[p], w_same[p], w_other[p], off_numerator[p]);
        row_state[p] = static_cast<int32_t>(v[p]);
    }
    T sum_alpha[P], sum_beta[P], sum_variance = T(0);
    for (int p = 0; p < P; ++p) sum_alpha[p] = sum_beta[p] = T(0);
    std::size_t j = 0;
#if defined(__GNUC__)
    // W columns at a time in GCC vector types, so that the 2P + 1 sums stay in vector registers
    // (the autovectorised form wrote per-column terms that the caller then summed: a store and a load
    // per term and column).  Same arithmetic, lane by lane, as the scalar loop below.
    typedef typename LaneVector<T, W>::type lanes;
    typedef typename std::conditional<sizeof(T) == 8, int64_t, int32_t>::type mask_int;
    typedef typename LaneVector<mask_int, W>::type mask_lanes;
    typedef typename LaneVector<int32_t, W>::type state_lanes;
    const lanes zero = {};
    lanes acc_alpha[P], acc_beta[P], acc_variance = zero;
    for (int p = 0; p < P; ++p) acc_alpha[p] = acc_beta[p] = zero;
    for (; j + W <= count; j += W) {
        lanes r, running;
        std::memcpy(&r, arg + j, sizeof r);
        std::memcpy(&running, wts + j, sizeof running);  // running = W σ² Π_{q<p} F_q
        lanes F[P], dF_dR[P], y[P];
#pragma GCC unroll 16
        for (int p = 0; p < P; ++p) {
            state_lanes column_states;
            std::memcpy(&column_states, states + p * ld + j, sizeof column_states);
            const state_lanes row = (state_lanes{} + row_state[p]);
            const mask_lanes same = __builtin_convertvector(column_states == row, mask_lanes);
            nominal_factor_derivatives<T>(alpha[p] * r, same, alpha[p], c0[p], c1[p], inv_n[p], w_same[p], w_other[p],
                                          off_numerator[p], F[p], dF_dR[p], y[p]);
        }
        lanes suffix[P];
        const lanes omega_j = accumulate_product_rule<T, P>(P, F, dF_dR, y, r, running, acc_alpha, acc_beta, suffix);
        acc_variance += running;
        std::memcpy(omega + j, &omega_j, sizeof omega_j);
    }
    for (int lane = 0; lane < W; ++lane) {
        for (int p = 0; p < P; ++p) {
            sum_alpha[p] += acc_alpha[p][lane];
            sum_beta[p] += acc_beta[p][lane];
        }
        sum_variance += acc_variance[lane];
    }
#endif
    for (; j < count; ++j) {
        T F[P], dF_dR[P], y[P];
#pragma GCC unroll 16
        for (int p = 0; p < P; ++p) {
            const bool same = states[p * ld + j] == row_state[p];
            nominal_factor_derivatives<T>(alpha[p] * arg[j], same, alpha[p], c0[p], c1[p], inv_n[p], w_same[p],
                                          w_other[p], off_numerator[p], F[p], dF_dR[p], y[p]);
        }
        T suffix[P];
        T running = wts[j];  // running = W σ² Π_{q<p} F_q
        omega[j] = accumulate_product_rule<T, P>(P, F, dF_dR, y, arg[j], running, sum_alpha, sum_beta, suffix);
        sum_variance += running;
    }
    for (int p = 0; p < P; ++p) {
        sums[p] = sum_alpha[p];
        sums[P + p] = -plan.variables[p].beta_mu[1] * sum_beta[p];
    }
    sums[2 * P] = sum_variance;
}

// Largest number of variables of the mixed vector kernel (its per-variable vectors live on the stack).
constexpr int kMaxVectorVariables = 32;

// True when mixed_reduction_vectors handles the plan: f = a_1/u and every variable nominal (complete
// graph, closed form) or with a projector table (ordinal / path graphs, small general graphs).
template <typename T>
inline bool mixed_reduction_applies(const FMPlan<T>& plan) {
#if defined(__GNUC__) && !defined(__clang__)
    const std::size_t P = plan.n_variables();
    if (!plan.single_term || P == 0 || P > static_cast<std::size_t>(kMaxVectorVariables)) return false;
    for (const VariablePlan<T>& var : plan.variables)
        if (var.path != FactorPath::complete && !var.spectrum->has_projectors()) return false;
    return true;
#else
    (void)plan;
    return false;
#endif
}

// The reduction kernel of complete_reduction_registers (same sums and omega, same arithmetic per
// factor as factor_derivatives) for any number of variables up to kMaxVectorVariables that mixes
// nominal variables (closed form) and projector variables (Σ_g P_g[v, w] (x, −x², −βμ_g x²), groups in
// pairs sharing one division).  Eight columns at a time in GCC vector types: the per-variable
// vectors (F, ∂F/∂R, β∂F/∂β, suffix products) and the 2P + 1 vector accumulators stay in L1 (the
// general path writes n_variables × kColumnChunk arrays, which spill to L2, and makes P + 2 passes).
// The weights P_g[v, ·] of a variable with ≤ 8 states are one vector permuted by the column states
// (the table is padded, see kProjectorPadding); larger ones are gathered lane by lane.  The last,
// partial block runs with zero weights (and state 0, argument 0) in the unused lanes, which add
// exact zeros.  GCC only (mixed_reduction_applies).
template <typename T, int W>
inline void mixed_reduction_vectors(const FMPlan<T>& plan, const int64_t* FASTFM_RESTRICT v,
                                    const int32_t* FASTFM_RESTRICT states, std::size_t ld,
                                    const T* FASTFM_RESTRICT arg, const T* FASTFM_RESTRICT wts, std::size_t count,
                                    T* FASTFM_RESTRICT omega, T* FASTFM_RESTRICT sums) {
#if defined(__GNUC__) && !defined(__clang__)
    typedef typename LaneVector<T, W>::type lanes;
    typedef typename std::conditional<sizeof(T) == 8, int64_t, int32_t>::type mask_int;
    typedef typename LaneVector<mask_int, W>::type mask_lanes;
    typedef typename LaneVector<int32_t, W>::type state_lanes;
    constexpr int MaxP = kMaxVectorVariables;
    const int P = static_cast<int>(plan.n_variables());
    // per variable: closed form (complete) or projector sum
    bool complete[MaxP];
    T alpha[MaxP], c0[MaxP], c1[MaxP], inv_n[MaxP], w_same[MaxP], w_other[MaxP], off_numerator[MaxP],
        beta_scale[MaxP];
    int32_t row_state[MaxP];
    int n_states[MaxP], n_groups[MaxP];
    const T* weights[MaxP];  // P_g[v, ·] at weights[p] + g n
    const T* shift[MaxP];
    const T* beta_mu[MaxP];
    for (int p = 0; p < P; ++p) {
        const VariablePlan<T>& var = plan.variables[p];
        const VariableSpectrum<T>& spec = *var.spectrum;
        complete[p] = var.path == FactorPath::complete;
        alpha[p] = var.alpha;
        row_state[p] = static_cast<int32_t>(v[p]);
        n_states[p] = spec.n_states;
        n_groups[p] = spec.n_groups;
        shift[p] = var.shift.data();
        beta_mu[p] = var.beta_mu.data();
        if (complete[p]) {
            nominal_constants(var, c0[p], c1[p], inv_n[p], w_same[p], w_other[p], off_numerator[p]);
            beta_scale[p] = -var.beta_mu[1];
            weights[p] = nullptr;
        } else {
            c0[p] = c1[p] = inv_n[p] = w_same[p] = w_other[p] = off_numerator[p] = T(0);
            beta_scale[p] = T(1);
            weights[p] = spec.projectors.data() + static_cast<std::size_t>(v[p]) * spec.n_groups * spec.n_states;
        }
    }
    const lanes zero = {};
    lanes acc_alpha[MaxP], acc_beta[MaxP], acc_variance = zero;
    for (int p = 0; p < P; ++p) acc_alpha[p] = acc_beta[p] = zero;
    lanes F[MaxP], dF_dR[MaxP], y[MaxP], suffix[MaxP];
    for (std::size_t j = 0; j < count; j += W) {
        const std::size_t m = count - j < W ? count - j : W;
        const bool full = m == W;
        lanes r = zero, running = zero;  // running = W σ² Π_{q<p} F_q
        if (full) {
            std::memcpy(&r, arg + j, sizeof r);
            std::memcpy(&running, wts + j, sizeof running);
        } else {
            for (std::size_t l = 0; l < m; ++l) {
                r[l] = arg[j + l];
                running[l] = wts[j + l];
            }
        }
        for (int p = 0; p < P; ++p) {
            const state_lanes column_states = load_lanes<state_lanes>(states + p * ld + j, m);
            const lanes s = alpha[p] * r;
            if (complete[p]) {
                const state_lanes row = (state_lanes{} + row_state[p]);
                const mask_lanes same = __builtin_convertvector(column_states == row, mask_lanes);
                nominal_factor_derivatives<T>(s, same, alpha[p], c0[p], c1[p], inv_n[p], w_same[p], w_other[p],
                                              off_numerator[p], F[p], dF_dR[p], y[p]);
                continue;
            }
            // Σ_g P_g[v, ·] (x, −x², −βμ_g x²), as factor_derivatives' projector branch
            const int n = n_states[p], G = n_groups[p];
            const T* table = weights[p];
            const mask_lanes index = __builtin_convertvector(column_states, mask_lanes);
            auto gather = [&](const T* row) {
                if (n <= kRationalTableStates)  // padded table: in bounds; entries ≥ n not selected
                    return table_lanes<T, W>(row, index);
                lanes w;
                for (int l = 0; l < W; ++l) w[l] = row[column_states[l]];
                return w;
            };
            lanes f = zero, d = zero, b = zero;
            int g = 0;
            for (; g + 1 < G; g += 2) {
                const lanes u_a = shift[p][g] + s, u_b = shift[p][g + 1] + s;
                const lanes inv = T(1) / (u_a * u_b);
                const lanes x_a = u_b * inv, x_b = u_a * inv;
                const lanes wx_a = gather(table + g * n) * x_a, wx_b = gather(table + (g + 1) * n) * x_b;
                const lanes wx2_a = wx_a * x_a, wx2_b = wx_b * x_b;
                f += wx_a + wx_b;
                d -= wx2_a + wx2_b;
                b += -beta_mu[p][g] * wx2_a + -beta_mu[p][g + 1] * wx2_b;
            }
            if (g < G) {
                const lanes x = T(1) / (shift[p][g] + s);
                const lanes wx = gather(table + g * n) * x;
                const lanes wx2 = wx * x;
                f += wx;
                d -= wx2;
                b += -beta_mu[p][g] * wx2;
            }
            F[p] = f;
            dF_dR[p] = d * alpha[p];
            y[p] = b;
        }
        const lanes omega_j = accumulate_product_rule<T, 0>(P, F, dF_dR, y, r, running, acc_alpha, acc_beta, suffix);
        acc_variance += running;
        if (full)
            std::memcpy(omega + j, &omega_j, sizeof omega_j);
        else
            for (std::size_t l = 0; l < m; ++l) omega[j + l] = omega_j[l];
    }
    store_lane_sums(P, acc_alpha, acc_beta, acc_variance, beta_scale, sums);
#else
    (void)plan, (void)v, (void)states, (void)ld, (void)arg, (void)wts, (void)count, (void)omega, (void)sums;
#endif
}

// The kernels of the reduction tile: complete_reduction_registers (all nominal, P ≤ 8) or
// mixed_reduction_vectors; false when neither applies (the general path then runs).
template <typename T>
inline bool reduction_kernel_applies(const FMPlan<T>& plan) {
    return (plan.all_complete_single_term && plan.n_variables() <= static_cast<std::size_t>(kMaxRegisterVariables)) ||
           mixed_reduction_applies(plan);
}

// Dispatch on P (mixed_reduction_vectors for mixed or larger spaces) for vectors of W lanes; false when
// no kernel applies (reduction_kernel_applies).  Reached through a function pointer
// (ReductionProblem::register_kernel): inlined into the big reduction tile, GCC no longer vectorises the
// kernel's loop.  The lane count is a template parameter so that each ISA clone of the entry points
// (csrc/dispatch/fm_reduction.cpp) compiles only the lanes it runs.
template <typename T, int W>
bool complete_reduction_registers_lanes(const FMPlan<T>& plan, const int64_t* v, const int32_t* states,
                                        std::size_t ld, const T* arg, const T* wts, std::size_t count, T* omega,
                                        T* sums) {
    if (!plan.all_complete_single_term || plan.n_variables() > static_cast<std::size_t>(kMaxRegisterVariables)) {
        if (!mixed_reduction_applies(plan)) return false;
        mixed_reduction_vectors<T, W>(plan, v, states, ld, arg, wts, count, omega, sums);
        return true;
    }
    switch (plan.n_variables()) {
#define FASTFM_REGISTER_CASE(P)                                                                  \
    case P:                                                                                      \
        complete_reduction_registers<T, P, W>(plan, v, states, ld, arg, wts, count, omega, sums); \
        return true;
        FASTFM_REGISTER_CASE(1)
        FASTFM_REGISTER_CASE(2)
        FASTFM_REGISTER_CASE(3)
        FASTFM_REGISTER_CASE(4)
        FASTFM_REGISTER_CASE(5)
        FASTFM_REGISTER_CASE(6)
        FASTFM_REGISTER_CASE(7)
        FASTFM_REGISTER_CASE(8)
#undef FASTFM_REGISTER_CASE
        default: return false;
    }
}

// Continuous dimensions that complete_reduction_fused handles in its vector loop.
constexpr int kMaxFusedContinuous = 3;

// One row chunk of the symmetric reduction for complete_reduction_fused: the row's scaled
// coordinates and the chunk's coordinate columns (n_continuous ≤ kMaxFusedContinuous), and the
// pair weights wscale × w[j] (lane 0 halved when halve_first: the diagonal pair counts once).
template <typename T>
struct FusedChunk {
    const T* row = nullptr;                            // row[d], d < n_continuous
    const T* columns[kMaxFusedContinuous] = {};        // coordinate(d) + js
    const T* w = nullptr;
    T wscale = T(1);
    bool halve_first = false;
    std::size_t count = 0;
};

// complete_reduction_registers with the passes around it folded into its vector loop, for the
// symmetric reduction with exponent t = 2 and DC ≤ kMaxFusedContinuous continuous dimensions:
// the argument R = Σ_d (c_ad − c_jd)² from the coordinates (squared_distances, continuous_argument),
// the weights wscale × W from W's row (no wts array), and instead of writing omega the chain sums
// Σ_j ω_j (c_ad − c_jd)² in vector accumulators (sums[2P + 1 + d]; the caller scales them by −2 as
// reduction_tile's chain pass; for DC = 1 that sum is Σ_j ω_j R_j, the sum of the α sums, and no
// ω is formed).  The last, partial block runs with zero weights in the unused lanes
// (exact zeros, as mixed_reduction_vectors).  Same per-factor arithmetic, except that −α is folded
// into the ∂F/∂R coefficients and the selects pick finished terms (rounding only).
template <typename T, int P, int DC, int W>
inline void complete_reduction_fused(const FMPlan<T>& plan, const int64_t* FASTFM_RESTRICT v,
                                     const int32_t* FASTFM_RESTRICT states, std::size_t ld,
                                     const FusedChunk<T>& chunk, T* FASTFM_RESTRICT sums) {
#if defined(__GNUC__) && !defined(__clang__)
    typedef typename LaneVector<T, W>::type lanes;
    typedef typename std::conditional<sizeof(T) == 8, int64_t, int32_t>::type mask_int;
    typedef typename LaneVector<mask_int, W>::type mask_lanes;
    typedef typename LaneVector<int32_t, W>::type state_lanes;
    constexpr int NC = DC > 0 ? DC : 1;
    T alpha[P], c0[P], c1[P], inv_n[P], w_same[P], w_other[P], off_numerator[P], d_same0[P], d_same1[P], d_other[P];
    int32_t row_state[P];
    for (int p = 0; p < P; ++p) {
        const VariablePlan<T>& var = plan.variables[p];
        alpha[p] = var.alpha;
        nominal_constants(var, c0[p], c1[p], inv_n[p], w_same[p], w_other[p], off_numerator[p]);
        d_same0[p] = -alpha[p] * inv_n[p];
        d_same1[p] = -alpha[p] * w_same[p];
        d_other[p] = -alpha[p] * off_numerator[p];
        row_state[p] = static_cast<int32_t>(v[p]);
    }
    T row[NC];
    const T* columns[NC];
    for (int d = 0; d < NC; ++d) {
        row[d] = d < DC ? chunk.row[d] : T(0);
        columns[d] = d < DC ? chunk.columns[d] : nullptr;
    }
    const lanes zero = {};
    lanes acc_alpha[P], acc_beta[P], acc_variance = zero, acc_chain[NC];
    for (int p = 0; p < P; ++p) acc_alpha[p] = acc_beta[p] = zero;
    for (int d = 0; d < NC; ++d) acc_chain[d] = zero;
    lanes scale = zero + chunk.wscale;
    if (chunk.halve_first) scale[0] *= T(0.5);
    const std::size_t count = chunk.count;
    const T* FASTFM_RESTRICT w = chunk.w;
    for (std::size_t j = 0; j < count; j += W) {
        const std::size_t m = count - j < W ? count - j : W;
        const bool full = m == W;
        lanes running = zero, diff_sq[NC];  // running = W σ² Π_{q<p} F_q
        lanes r = zero;
        if (full) {
            std::memcpy(&running, w + j, sizeof running);
#pragma GCC unroll 8
            for (int d = 0; d < DC; ++d) {
                lanes col;
                std::memcpy(&col, columns[d] + j, sizeof col);
                const lanes diff = row[d] - col;
                diff_sq[d] = diff * diff;
                r += diff_sq[d];
            }
        } else {
            for (std::size_t l = 0; l < m; ++l) running[l] = w[j + l];
#pragma GCC unroll 8
            for (int d = 0; d < DC; ++d) {
                lanes col = zero + row[d];
                for (std::size_t l = 0; l < m; ++l) col[l] = columns[d][j + l];
                const lanes diff = row[d] - col;
                diff_sq[d] = diff * diff;
                r += diff_sq[d];
            }
        }
        running *= scale;
        scale = zero + chunk.wscale;
        lanes F[P], dF_dR[P], y[P];
#pragma GCC unroll 16
        for (int p = 0; p < P; ++p) {
            const state_lanes column_states = load_lanes<state_lanes>(states + p * ld + j, m);
            const lanes s = alpha[p] * r;
            const lanes u0 = c0[p] + s, u1 = c1[p] + s;
            const lanes inv = T(1) / (u0 * u1);
            const lanes x0 = u1 * inv, x1 = u0 * inv;
            const state_lanes row_v = (state_lanes{} + row_state[p]);
            const mask_lanes same = __builtin_convertvector(column_states == row_v, mask_lanes);
            const lanes x0_sq = x0 * x0, x1_sq = x1 * x1;
            // exact forms with selected terms, see multiply_factor / factor_derivatives
            const lanes F_same = inv_n[p] * x0 + w_same[p] * x1, F_other = off_numerator[p] * inv;
            const lanes d_same = d_same0[p] * x0_sq + d_same1[p] * x1_sq, d_off = (d_other[p] * inv) * (x0 + x1);
            F[p] = same ? F_same : F_other;
            dF_dR[p] = same ? d_same : d_off;
            y[p] = (same ? zero + w_same[p] : zero + w_other[p]) * x1_sq;
        }
        lanes suffix[P];
        const lanes omega_j = accumulate_product_rule<T, P>(P, F, dF_dR, y, r, running, acc_alpha, acc_beta, suffix);
        acc_variance += running;
        // DC = 1: Σ_j ω_j (c_a − c_j)² = Σ_j ω_j R_j = Σ_p sums[p], taken from the α sums below
#pragma GCC unroll 8
        for (int d = 0; d < (DC >= 2 ? DC : 0); ++d) acc_chain[d] += omega_j * diff_sq[d];
    }
    T beta_scale[P];  // β∂F_p/∂β = −βμ_1 y_p for a complete graph
    for (int p = 0; p < P; ++p) beta_scale[p] = -plan.variables[p].beta_mu[1];
    store_lane_sums(P, acc_alpha, acc_beta, acc_variance, beta_scale, sums);
    if (DC == 1) {
        T sum_d = T(0);
        for (int p = 0; p < P; ++p) sum_d += sums[p];
        sums[2 * P + 1] = sum_d;
    }
    for (int d = 0; d < (DC >= 2 ? DC : 0); ++d) {
        sums[2 * P + 1 + d] = sum_of_lanes<T>(acc_chain[d]);
    }
#else
    (void)plan, (void)v, (void)states, (void)ld, (void)chunk, (void)sums;
#endif
}

// True when reduction_tile runs complete_reduction_fused: the symmetric reduction (coordinates) of an
// all-nominal single-term Laplace space with P ≤ kMaxRegisterVariables, t = 2 and
// n_continuous ≤ kMaxFusedContinuous.  GCC only.
template <typename T>
inline bool fused_reduction_applies(const FMPlan<T>& plan) {
#if defined(__GNUC__) && !defined(__clang__)
    return plan.all_complete_single_term && plan.n_variables() >= 1 &&
           plan.n_variables() <= static_cast<std::size_t>(kMaxRegisterVariables) &&
           plan.n_continuous <= static_cast<std::size_t>(kMaxFusedContinuous) && plan.modulation.exponent == T(2);
#else
    (void)plan;
    return false;
#endif
}

// Dispatch on (P, n_continuous) for vectors of W lanes; see fused_reduction_applies.  Reached through a
// function pointer (ReductionProblem::fused_kernel), as complete_reduction_registers_lanes.
template <typename T, int W>
void complete_reduction_fused_lanes(const FMPlan<T>& plan, const int64_t* v, const int32_t* states, std::size_t ld,
                                    const FusedChunk<T>& chunk, T* sums) {
    static_assert(kMaxFusedContinuous == 3, "extend the cases below");
    const int key = static_cast<int>(plan.n_variables()) * 4 + static_cast<int>(plan.n_continuous);
    switch (key) {
#define FASTFM_FUSED_CASE(P, DC)                                                  \
    case P * 4 + DC:                                                              \
        complete_reduction_fused<T, P, DC, W>(plan, v, states, ld, chunk, sums); \
        return;
#define FASTFM_FUSED_CASES(P) \
    FASTFM_FUSED_CASE(P, 0) FASTFM_FUSED_CASE(P, 1) FASTFM_FUSED_CASE(P, 2) FASTFM_FUSED_CASE(P, 3)
        FASTFM_FUSED_CASES(1)
        FASTFM_FUSED_CASES(2)
        FASTFM_FUSED_CASES(3)
        FASTFM_FUSED_CASES(4)
        FASTFM_FUSED_CASES(5)
        FASTFM_FUSED_CASES(6)
        FASTFM_FUSED_CASES(7)
        FASTFM_FUSED_CASES(8)
#undef FASTFM_FUSED_CASES
#undef FASTFM_FUSED_CASE
        default: return;
    }
}

// ----------------------------------------------------------------------------
// Problems (inputs of one call) and their tiles
// ----------------------------------------------------------------------------

// Rows are row-major arrays (row a: C[a*Dc..], D[a*P..]); columns are transposed.
// The continuous argument comes either from coordinates (R == nullptr) or
// from the given row-major matrix R of shape (n_rows, n_cols).
template <typename T>
struct GramProblem {
    const FMPlan<T>* plan = nullptr;
    const T* rows_continuous = nullptr;  // (n_rows, Dc); unused when R is given
    const int64_t* rows_states = nullptr;  // (n_rows, P)
    const PointColumns<T>* cols = nullptr;
    const T* R = nullptr;
    std::size_t n_rows = 0;
    bool symmetric = false;  // columns are the rows: compute a ≤ j, mirror
    T* K = nullptr;          // (n_rows, cols->n_points)
};

template <typename T>
inline void argument_for_row(const GramProblem<T>& pb, std::size_t a, std::size_t j0, std::size_t count,
                             Workspace<T>& ws) {
    const std::size_t M = pb.cols->n_points;
    if (pb.R != nullptr) {
        const T* FASTFM_RESTRICT r = pb.R + a * M + j0;
        for (std::size_t j = 0; j < count; ++j) ws.arg[j] = r[j];
        return;
    }
    squared_distances(pb.rows_continuous + a * pb.plan->n_continuous, *pb.cols, j0, count, ws.sq.data());
    continuous_argument(ws.sq.data(), count, pb.plan->modulation.exponent, ws.arg.data());
}

// Rational factors (prepare_rational_factor), all evaluated at the continuous argument r:
// Π Den_p(r) = the product of the plan's two group polynomials, Num_p(r) per variable.  The vector
// blocks and the scalar columns below do the same operations in the same order, so a pair's value does
// not depend on where its column falls in a chunk (batched and unbatched calls agree to the last bit).

// Horner's rule for the polynomial with ascending coefficients c[0..degree] at U arguments at once (scalars
// or vector lanes), interleaved: U independent chains hide the FMA latency.
template <int U, typename T, typename V>
inline void horner(const T* FASTFM_RESTRICT c, std::size_t degree, const V* r, V* out) {
    if (degree == 0) {
        for (int u = 0; u < U; ++u) out[u] = V{} + c[0];
        return;
    }
#pragma GCC unroll 4
    for (int u = 0; u < U; ++u) out[u] = r[u] * c[degree] + c[degree - 1];
    for (std::size_t k = degree - 1; k-- > 0;)
#pragma GCC unroll 4
        for (int u = 0; u < U; ++u) out[u] = out[u] * r[u] + c[k];
}

// Num_p(r) of one rational factor for row state v and column state w (scalar).
template <typename T>
inline T rational_numerator(const VariablePlan<T>& var, int v, int w, T r) {
    if (var.rational == FactorPath::complete)
        return w == v ? var.rational_same_intercept + var.rational_same_slope * r : var.rational_off_numerator;
    constexpr int W = kRationalTableStates;
    const int N = var.spectrum->n_states;
    const T* FASTFM_RESTRICT row = var.rational_numerators.data() + static_cast<std::size_t>(v) * N * W + w;
    T numerator = row[(N - 1) * W];
    for (int k = N - 2; k >= 0; --k) numerator = numerator * r + row[k * W];
    return numerator;
}

#if defined(__GNUC__) && !defined(__clang__)
// Blocks of U × W columns with every factor at once: the running products Π Num_p and the Den
// polynomials stay in registers, and the vector lanes pick each column's numerator coefficients from
// the row's table (kRationalTableStates wide) with one permute per power of r.  W = 8 lanes where
// eight-lane vectors are registers (AVX-512, or float on AVX2); else 4: GCC keeps a vector type wider
// than the widest register in memory and lowers every operation on it piece by piece through the
// stack, which made these blocks 10-16× slower per pair on an AVX2-only CPU (wide_vector_permutes).
// Column states as vector-lane integers of T's width (PointColumns::wide_states for double).
template <typename T>
inline const typename RationalLanes<T>::index_int* lane_states(const PointColumns<T>& cols, std::size_t p) {
    if constexpr (sizeof(T) == 8)
        return cols.variable_wide_states(p);
    else
        return cols.variable_states(p);
}

template <typename T, int U, int W>
inline void rational_complete_block(const VariablePlan<T>& var, int v,
                                    const typename RationalLanes<T, W>::index_int* FASTFM_RESTRICT states,
                                    const typename RationalLanes<T, W>::lanes* r,
                                    typename RationalLanes<T, W>::lanes* num) {
    using L = RationalLanes<T, W>;
    const T intercept = var.rational_same_intercept, slope = var.rational_same_slope;
    const typename L::lanes off = var.rational_off_numerator - typename L::lanes{};
    const typename L::index_lanes row_state = static_cast<typename L::index_int>(v) - typename L::index_lanes{};
#pragma GCC unroll 4
    for (int u = 0; u < U; ++u) {
        typename L::index_lanes w;
        std::memcpy(&w, states + u * L::W, sizeof w);
        const typename L::lanes same = intercept + slope * r[u];
        num[u] *= w == row_state ? same : off;
    }
}

template <typename T, int N, int U, int W>
inline void rational_tridiagonal_block(const VariablePlan<T>& var, int v,
                                       const typename RationalLanes<T, W>::index_int* FASTFM_RESTRICT states,
                                       const typename RationalLanes<T, W>::lanes* r,
                                       typename RationalLanes<T, W>::lanes* num) {
    using L = RationalLanes<T, W>;
    constexpr int S = kRationalTableStates;  // the table's row stride
    const T* FASTFM_RESTRICT table = var.rational_numerators.data() + static_cast<std::size_t>(v) * N * S;
    typename L::lanes numerator[U];
    typename L::index_lanes index[U];
#pragma GCC unroll 4
    for (int u = 0; u < U; ++u) {
        std::memcpy(&index[u], states + u * L::W, sizeof index[u]);
        numerator[u] = table_lanes<T, W>(table + (N - 1) * S, index[u]);
    }
#pragma GCC unroll 16
    for (int k = N - 2; k >= 0; --k) {
#pragma GCC unroll 4
        for (int u = 0; u < U; ++u) numerator[u] = numerator[u] * r[u] + table_lanes<T, W>(table + k * S, index[u]);
    }
#pragma GCC unroll 4
    for (int u = 0; u < U; ++u) num[u] *= numerator[u];
}

// Column vectors per block of rational_factor_blocks: four independent chains for the FMA latency, and the
// arguments, running products and one factor's temporaries still fit in AVX-512's 32 vector registers.  With
// four-lane vectors (AVX2, 16 registers) two per block were measured 5-9 % slower than four (2026-11-24).
constexpr int kRationalBlockVectors = 4;

// Π Num_p into num and Π Den_p into den for the whole blocks of [0, count); returns the columns done.
template <typename T, int W>
inline std::size_t rational_factor_blocks(const FMPlan<T>& plan, const int64_t* FASTFM_RESTRICT v,
                                          const PointColumns<T>& cols, std::size_t js,
                                          const T* FASTFM_RESTRICT row_continuous, const T* FASTFM_RESTRICT arg,
                                          std::size_t count, T* FASTFM_RESTRICT num, T* FASTFM_RESTRICT den) {
    using L = RationalLanes<T, W>;
    constexpr int U = kRationalBlockVectors;
    constexpr std::size_t block = static_cast<std::size_t>(U) * L::W;
    const std::size_t P = plan.n_variables();
    const std::vector<T>& den0 = plan.rational_den_groups[0];
    const std::vector<T>& den1 = plan.rational_den_groups[1];
    std::size_t j = 0;
    for (; j + block <= count; j += block) {
        typename L::lanes r[U], n_acc[U], d0[U], d1[U];
#pragma GCC unroll 4
        for (int u = 0; u < U; ++u) {
            if (row_continuous == nullptr) {
                std::memcpy(&r[u], arg + j + u * L::W, sizeof r[u]);
            } else {  // r = squared distance, as squared_distances
                r[u] = typename L::lanes{};
                for (std::size_t d = 0; d < cols.n_continuous; ++d) {
                    typename L::lanes column;
                    std::memcpy(&column, cols.coordinate(d) + js + j + u * L::W, sizeof column);
                    const typename L::lanes diff = row_continuous[d] - column;
                    r[u] += diff * diff;
                }
            }
            n_acc[u] = T(1) - typename L::lanes{};
        }
        // the Den chains first: independent of the numerators, they overlap with them out of order
        horner<U>(den0.data(), den0.size() - 1, r, d0);
        horner<U>(den1.data(), den1.size() - 1, r, d1);
        for (std::size_t p = 0; p < P; ++p) {
            const VariablePlan<T>& var = plan.variables[p];
            const int state = static_cast<int>(v[p]);
            const typename L::index_int* states = lane_states(cols, p) + js + j;
            if (var.rational == FactorPath::complete) {
                rational_complete_block<T, U, W>(var, state, states, r, n_acc);
                continue;
            }
            if (var.rational != FactorPath::tridiagonal) continue;
            switch (var.spectrum->n_states) {
#define FASTFM_RATIONAL_BLOCK(N) \
    case N: rational_tridiagonal_block<T, N, U, W>(var, state, states, r, n_acc); break;
                FASTFM_RATIONAL_BLOCK(2)
                FASTFM_RATIONAL_BLOCK(3)
                FASTFM_RATIONAL_BLOCK(4)
                FASTFM_RATIONAL_BLOCK(5)
                FASTFM_RATIONAL_BLOCK(6)
                FASTFM_RATIONAL_BLOCK(7)
                FASTFM_RATIONAL_BLOCK(8)
#undef FASTFM_RATIONAL_BLOCK
                default: break;  // unreachable: prepare_rational_factor admits N ≤ kRationalTableStates
            }
            static_assert(kRationalTableStates == 8, "extend the cases above");
        }
#pragma GCC unroll 4
        for (int u = 0; u < U; ++u) {
            const typename L::lanes d = d0[u] * d1[u];
            std::memcpy(num + j + u * L::W, &n_acc[u], sizeof n_acc[u]);
            std::memcpy(den + j + u * L::W, &d, sizeof d);
        }
    }
    return j;
}

// The columns [j, count) after rational_factor_blocks' whole blocks, by one more block: the one that ends at the
// chunk's last column, which starts before column j (columns computed again, or before the chunk: a symmetric row's
// chunk starts at the row's own column, and the point columns hold every column).  The blocks do the scalar columns'
// operations in the same order (above), so these columns get the same bits as there, at the vector blocks' speed:
// the scalar columns were up to 31 of a row's 1-200 in a symmetric Gram, ~40 % of its Gram tile's time on the
// NAS-like space at 200 points.  Only where the blocks compute r from the row's coordinates (`row_continuous`): the
// argument array holds the chunk's columns alone.  Returns the columns done: count, or j where the points are fewer
// than a block.
template <typename T, int W>
inline std::size_t rational_factor_last_block(const FMPlan<T>& plan, const int64_t* FASTFM_RESTRICT v,
                                              const PointColumns<T>& cols, std::size_t js,
                                              const T* FASTFM_RESTRICT row_continuous, std::size_t count,
                                              std::size_t j, T* FASTFM_RESTRICT num, T* FASTFM_RESTRICT den) {
    constexpr std::size_t block = static_cast<std::size_t>(kRationalBlockVectors) * RationalLanes<T, W>::W;
    const std::size_t end = js + count;
    if (end < block) return j;
    const std::size_t start = end - block;
    T block_num[block], block_den[block];
    rational_factor_blocks<T, W>(plan, v, cols, start, row_continuous, nullptr, block, block_num, block_den);
    for (std::size_t k = j; k < count; ++k) {
        num[k] = block_num[js + k - start];
        den[k] = block_den[js + k - start];
    }
    return count;
}

// rational_factor_blocks, then, where the blocks compute r from the coordinates, rational_factor_last_block: the
// columns of [0, count) done in vector blocks (count but where the points are fewer than a block).
template <typename T, int W>
inline std::size_t rational_factor_vector_columns(const FMPlan<T>& plan, const int64_t* FASTFM_RESTRICT v,
                                                  const PointColumns<T>& cols, std::size_t js,
                                                  const T* FASTFM_RESTRICT row_continuous, const T* FASTFM_RESTRICT arg,
                                                  std::size_t count, T* FASTFM_RESTRICT num, T* FASTFM_RESTRICT den) {
    const std::size_t j = rational_factor_blocks<T, W>(plan, v, cols, js, row_continuous, arg, count, num, den);
    if (j == count || row_continuous == nullptr) return j;
    return rational_factor_last_block<T, W>(plan, v, cols, js, row_continuous, count, j, num, den);
}
#endif

// Every factor with a rational form at once: out[j] = σ² Π_p Num_p / Π_p Den_p, one division per pair
// instead of one per factor (and no continuant arrays).  The other factors are the caller's.  The
// argument r comes from `arg`, or, given the row's coordinates `row_continuous` (r = the squared
// distance, exponent 2), is computed in the blocks (the last, overlapping one included:
// rational_factor_last_block), and then `arg` is written only where the points are fewer than a block.
// Returns false, with out untouched, when Π Den_p exceeds plan.rational_limit for some column (huge r,
// i.e. distant pairs): the products could then leave the safe range, and the caller takes the
// per-factor path.
template <typename T>
inline bool multiply_rational_factors(const FMPlan<T>& plan, const int64_t* FASTFM_RESTRICT v,
                                      const PointColumns<T>& cols, std::size_t js,
                                      const T* FASTFM_RESTRICT row_continuous, T* FASTFM_RESTRICT arg,
                                      std::size_t count, T* FASTFM_RESTRICT out, Workspace<T>& ws) {
    T* FASTFM_RESTRICT num = ws.numerator.data();
    T* FASTFM_RESTRICT den = ws.denominator.data();
#if defined(__GNUC__) && !defined(__clang__)
    std::size_t j = plan.wide_vectors
                        ? rational_factor_vector_columns<T, kWideLanes>(plan, v, cols, js, row_continuous, arg, count,
                                                                        num, den)
                        : rational_factor_vector_columns<T, kNarrowLanes<T>>(plan, v, cols, js, row_continuous, arg,
                                                                             count, num, den);
#else
    std::size_t j = 0;
#endif
    if (row_continuous != nullptr && j < count) squared_distances(row_continuous, cols, js + j, count - j, arg + j);
    const std::vector<T>& den0 = plan.rational_den_groups[0];
    const std::vector<T>& den1 = plan.rational_den_groups[1];
    for (; j < count; ++j) {  // the columns after the last whole block
        const T r = arg[j];
        T numerator = T(1);
        for (std::size_t p = 0; p < plan.n_variables(); ++p) {
            const VariablePlan<T>& var = plan.variables[p];
            if (var.rational != FactorPath::general)
                numerator *= rational_numerator(var, static_cast<int>(v[p]), cols.variable_states(p)[js + j], r);
        }
        T d0, d1;
        horner<1>(den0.data(), den0.size() - 1, &r, &d0);
        horner<1>(den1.data(), den1.size() - 1, &r, &d1);
        num[j] = numerator;
        den[j] = d0 * d1;
    }
    const T limit = plan.rational_limit;
    int out_of_range = 0;  // an integer OR reduction vectorises; also true for NaN
    for (std::size_t j2 = 0; j2 < count; ++j2) out_of_range |= den[j2] <= limit ? 0 : 1;
    if (out_of_range) return false;
    const T variance = plan.variance;
    for (std::size_t j2 = 0; j2 < count; ++j2) out[j2] = variance * (num[j2] / den[j2]);
    return true;
}

// K[a, js:js+count] into `out`: one chunk of one kernel row (the Gram tile and the matrix-free
// product, matvec.hpp, share it).
template <typename T>
inline void kernel_row_chunk(const GramProblem<T>& pb, Workspace<T>& ws, std::size_t a, std::size_t js,
                             std::size_t count, T* FASTFM_RESTRICT out) {
    const FMPlan<T>& plan = *pb.plan;
    const std::size_t P = plan.n_variables();
    const int64_t* v = pb.rows_states + a * P;
    // Every factor rational and r the squared distance: the rational blocks compute the distances
    // themselves (no separate argument pass over the chunk).
    const T* fused_row = plan.all_rational && pb.R == nullptr && plan.modulation.exponent == T(2) &&
                                 pb.rows_continuous != nullptr
                             ? pb.rows_continuous + a * plan.n_continuous
                             : nullptr;
    if (fused_row == nullptr) argument_for_row(pb, a, js, count, ws);
    const bool rational =
        plan.rational && multiply_rational_factors(plan, v, *pb.cols, js, fused_row, ws.arg.data(), count, out, ws);
    if (rational && plan.all_rational) return;
    if (!rational) {
        if (fused_row != nullptr) argument_for_row(pb, a, js, count, ws);
        for (std::size_t j = 0; j < count; ++j) out[j] = plan.variance;
    }
    for (std::size_t p = 0; p < P; ++p)
        if (!rational || plan.variables[p].rational == FactorPath::general)
            multiply_factor(plan, plan.variables[p], static_cast<int>(v[p]), pb.cols->variable_states(p) + js,
                            ws.arg.data(), count, out, ws);
}

// visit(a, js, count) for rows a in [a0, a1) against the columns [js, js + count), in chunks of
// Workspace::B columns (outer loop, so a chunk of columns stays in cache across the rows).
// Symmetric: only columns js ≥ a, every pair once (the callers mirror).  Shared by the Gram and
// the matrix-free K·V tiles.
template <typename T, typename Visit>
inline void for_each_row_chunk(std::size_t a0, std::size_t a1, std::size_t M, bool symmetric, Visit&& visit) {
    constexpr std::size_t B = Workspace<T>::B;
    const std::size_t first = symmetric ? a0 : 0;
    for (std::size_t j0 = first; j0 < M; j0 += B) {
        const std::size_t j1 = std::min(M, j0 + B);
        for (std::size_t a = a0; a < a1; ++a) {
            const std::size_t js = symmetric ? std::max(j0, a) : j0;
            if (js < j1) visit(a, js, j1 - js);
        }
    }
}

// K[a, j] for rows [a0, a1) (and, if symmetric, K[j, a] for j > a).
template <typename T>
void gram_tile(const GramProblem<T>& pb, Workspace<T>& ws, std::size_t a0, std::size_t a1) {
    const std::size_t M = pb.cols->n_points;
    for_each_row_chunk<T>(a0, a1, M, pb.symmetric, [&](std::size_t a, std::size_t js, std::size_t count) {
        T* FASTFM_RESTRICT out = pb.K + a * M + js;
        kernel_row_chunk(pb, ws, a, js, count, out);
        if (pb.symmetric)
            for (std::size_t j = (js == a ? 1 : 0); j < count; ++j) pb.K[(js + j) * M + a] = out[j];
    });
}

// Σ_ab W_ab ∂K_ab/∂log ψ.  Components: [log θ (Dc) | log α (P) | log β (P) | log σ²].
// symmetric: coordinates, pairs a ≤ b weighted W_ab + W_ba (a < b) or W_aa;
// otherwise (R given): every pair, and omega[a, b] = W_ab ∂K_ab/∂R_ab is written.
template <typename T>
struct ReductionProblem {
    const FMPlan<T>* plan = nullptr;
    const T* rows_continuous = nullptr;  // (N, Dc)
    const int64_t* rows_states = nullptr;
    const PointColumns<T>* cols = nullptr;
    const T* R = nullptr;  // (N, N) argument, or nullptr for coordinates
    const T* W = nullptr;  // (N, N)
    // Or W ∘ wwᵀ with these row weights w (N,) (a unit-diagonal kernel's reduction: fm._unit_diagonal_reduction's
    // W'), formed pair by pair as (W_ab w_a) w_b instead of in an N × N copy; dense W only, not the fused kernel.
    const T* row_weights = nullptr;
    // The caller promises W = Wᵀ (GP fitting: W = ½(ααᵀ − K⁻¹)): a pair a < b then weighs 2 W_ab
    // from W's row a alone, and the transposed copy of W's columns is skipped (15-23 % of the
    // reduction on the all-nominal Func3C / Ackley5C spaces, N = 500-2000, one thread).
    bool symmetric_weights = false;
    // Or, with W == nullptr (symmetric case only), the low-rank weights W = U Zᵀ given
    // transposed: U_t, Z_t of shape (low_rank, N).  Used by the matrix-free stochastic
    // trace estimator (matvec.hpp, gp_large.py): W_ab + W_ba is formed per chunk, never stored.
    const T* U_t = nullptr;
    const T* Z_t = nullptr;
    std::size_t low_rank = 0;
    std::size_t N = 0;
    T* omega = nullptr;    // (N, N) output when R is given
    std::vector<T>* tile_partials = nullptr;  // n_tiles × n_components
    // Register / vector kernels (complete_reduction_registers_lanes: all nominal with P ≤ 8, or
    // mixed_reduction_vectors), ISA-dispatched by the bindings; nullptr: the general path.  No default
    // instantiation here: it would compile a baseline-ISA copy of every register kernel into each
    // binding translation unit that builds a ReductionProblem, which never runs.
    bool (*register_kernel)(const FMPlan<T>&, const int64_t*, const int32_t*, std::size_t, const T*, const T*,
                            std::size_t, T*, T*) = nullptr;
    // complete_reduction_fused_lanes (fused_reduction_applies), ISA-dispatched by the bindings; nullptr:
    // the register kernel and the passes around it.
    void (*fused_kernel)(const FMPlan<T>&, const int64_t*, const int32_t*, std::size_t, const FusedChunk<T>&,
                         T*) = nullptr;
    std::size_t n_components() const { return plan->n_continuous + 2 * plan->n_variables() + 1; }
};

// wts[j] = σ² (W_ab + W_ba) for b = js + j, W = U Zᵀ given as U_t, Z_t (rank, N); the
// diagonal pair b = a counts once (σ² W_aa), as in the dense symmetric reduction.
template <typename T>
inline void low_rank_pair_weights(const T* U_t, const T* Z_t, std::size_t rank, std::size_t N, std::size_t a,
                                  std::size_t js, std::size_t count, T sigma2, T* FASTFM_RESTRICT wts) {
    for (std::size_t j = 0; j < count; ++j) wts[j] = T(0);
    for (std::size_t c = 0; c < rank; ++c) {
        const T ua = U_t[c * N + a], za = Z_t[c * N + a];
        const T* FASTFM_RESTRICT u = U_t + c * N + js;
        const T* FASTFM_RESTRICT z = Z_t + c * N + js;
#pragma omp simd
        for (std::size_t j = 0; j < count; ++j) wts[j] += ua * z[j] + za * u[j];
    }
    for (std::size_t j = 0; j < count; ++j) wts[j] *= sigma2;
    if (js == a) wts[0] *= T(0.5);
}

template <typename T>
void reduction_tile(const ReductionProblem<T>& pb, Workspace<T>& ws, std::size_t a0, std::size_t a1,
                    std::size_t tile) {
    constexpr std::size_t B = Workspace<T>::B;
    const FMPlan<T>& plan = *pb.plan;
    const std::size_t N = pb.N, P = plan.n_variables(), Dc = plan.n_continuous;
    const bool symmetric = pb.R == nullptr;
    const T exponent = plan.modulation.exponent;
    T* FASTFM_RESTRICT partial = pb.tile_partials->data() + tile * pb.n_components();
    T* FASTFM_RESTRICT sq = ws.sq.data();
    T* FASTFM_RESTRICT arg = ws.arg.data();
    T* FASTFM_RESTRICT wts = ws.weights.data();
    T* FASTFM_RESTRICT omega = ws.omega.data();
    T* FASTFM_RESTRICT total = ws.prod.data();
    T* FASTFM_RESTRICT chain = ws.chain.data();
    T* FASTFM_RESTRICT beta_scale = ws.beta_scale.data();
    const T sigma2 = plan.derivative_variance;
    const bool register_kernel = pb.register_kernel != nullptr && reduction_kernel_applies(plan);
    const bool fused = symmetric && pb.fused_kernel != nullptr && pb.row_weights == nullptr &&
                       fused_reduction_applies(plan);
    const T* FASTFM_RESTRICT rw = pb.row_weights;
    const std::size_t first = symmetric ? a0 : 0;
    for (std::size_t j0 = first; j0 < N; j0 += B) {
        const std::size_t j1 = std::min(N, j0 + B);
        if (symmetric && pb.W != nullptr && !pb.symmetric_weights) {
            // W[j, a0:a1] for the chunk, read along rows of W once per tile:
            // a column walk W[j, a] per row a would miss the cache at every j.
            T* FASTFM_RESTRICT wt = ws.transposed_weights.data();
            for (std::size_t j = j0; j < j1; ++j)
                for (std::size_t a = a0; a < a1; ++a) wt[(a - a0) * B + (j - j0)] = pb.W[j * N + a];
        }
        for (std::size_t a = a0; a < a1; ++a) {
            const std::size_t js = symmetric ? std::max(j0, a) : j0;
            if (js >= j1) continue;
            const std::size_t count = j1 - js;
            const T* FASTFM_RESTRICT w_row = pb.W != nullptr ? pb.W + a * N + js : nullptr;
            const int64_t* v_row = pb.rows_states + a * P;
            if (fused) {
                FusedChunk<T> chunk;
                chunk.row = pb.rows_continuous + a * Dc;
                for (std::size_t d = 0; d < Dc; ++d) chunk.columns[d] = pb.cols->coordinate(d) + js;
                chunk.count = count;
                if (pb.W != nullptr && pb.symmetric_weights) {
                    chunk.w = w_row;  // 2σ² W_ab, σ² W_aa: as the weights pass below
                    chunk.wscale = T(2) * sigma2;
                    chunk.halve_first = js == a;
                } else {
                    if (pb.W == nullptr) {
                        low_rank_pair_weights(pb.U_t, pb.Z_t, pb.low_rank, N, a, js, count, sigma2, wts);
                    } else {
                        const T* FASTFM_RESTRICT w_col = ws.transposed_weights.data() + (a - a0) * B + (js - j0);
                        for (std::size_t j = 0; j < count; ++j) wts[j] = sigma2 * (w_row[j] + w_col[j]);
                        if (js == a) wts[0] = sigma2 * w_row[0];
                    }
                    chunk.w = wts;
                }
                T* sums = ws.register_terms.data();
                pb.fused_kernel(plan, v_row, pb.cols->states.data() + js, pb.cols->n_points, chunk, sums);
                for (std::size_t p = 0; p < P; ++p) {
                    partial[Dc + p] += sums[p];
                    partial[Dc + P + p] += sums[P + p];
                }
                partial[Dc + 2 * P] += sums[2 * P];
                for (std::size_t d = 0; d < Dc; ++d) partial[d] += T(-2) * sums[2 * P + 1 + d];
                continue;
            }
            if (symmetric && pb.W == nullptr) {
                squared_distances(pb.rows_continuous + a * Dc, *pb.cols, js, count, sq);
                continuous_argument(sq, count, exponent, arg);
                low_rank_pair_weights(pb.U_t, pb.Z_t, pb.low_rank, N, a, js, count, sigma2, wts);
            } else if (symmetric && rw != nullptr) {
                // W' = (W_ab w_a) w_b pair by pair, then as below
                squared_distances(pb.rows_continuous + a * Dc, *pb.cols, js, count, sq);
                continuous_argument(sq, count, exponent, arg);
                const T wa = rw[a];
                if (pb.symmetric_weights) {
                    const T twice = T(2) * sigma2;
                    for (std::size_t j = 0; j < count; ++j) wts[j] = twice * ((w_row[j] * wa) * rw[js + j]);
                } else {
                    const T* FASTFM_RESTRICT w_col = ws.transposed_weights.data() + (a - a0) * B + (js - j0);
                    for (std::size_t j = 0; j < count; ++j)
                        wts[j] = sigma2 * ((w_row[j] * wa) * rw[js + j] + (w_col[j] * rw[js + j]) * wa);
                }
                if (js == a) wts[0] = sigma2 * ((w_row[0] * wa) * wa);  // the diagonal pair counts once
            } else if (symmetric) {
                squared_distances(pb.rows_continuous + a * Dc, *pb.cols, js, count, sq);
                continuous_argument(sq, count, exponent, arg);
                if (pb.symmetric_weights) {
                    const T twice = T(2) * sigma2;
                    for (std::size_t j = 0; j < count; ++j) wts[j] = twice * w_row[j];
                } else {
                    const T* FASTFM_RESTRICT w_col = ws.transposed_weights.data() + (a - a0) * B + (js - j0);
                    for (std::size_t j = 0; j < count; ++j) wts[j] = sigma2 * (w_row[j] + w_col[j]);
                }
                if (js == a) wts[0] = sigma2 * w_row[0];  // the diagonal pair counts once
            } else {
                const T* FASTFM_RESTRICT r = pb.R + a * N + js;
                for (std::size_t j = 0; j < count; ++j) {
                    arg[j] = r[j];
                    wts[j] = sigma2 * w_row[j];
                }
            }
            const int64_t* v = pb.rows_states + a * P;
            if (register_kernel) {
                T* sums = ws.register_terms.data();
                pb.register_kernel(plan, v, pb.cols->states.data() + js, pb.cols->n_points, arg, wts, count, omega,
                                   sums);
                for (std::size_t p = 0; p < P; ++p) {
                    partial[Dc + p] += sums[p];
                    partial[Dc + P + p] += sums[P + p];
                }
                partial[Dc + 2 * P] += sums[2 * P];
            } else {
                for (std::size_t p = 0; p < P; ++p)
                    beta_scale[p] = factor_derivatives(plan, plan.variables[p], static_cast<int>(v[p]),
                                                       pb.cols->variable_states(p) + js, arg, count,
                                                       ws.F.data() + p * B, ws.dF.data() + p * B,
                                                       ws.dFb.data() + p * B, ws);
                suffix_products(P, ws.F.data(), count, ws.others.data());
                // running = W σ² Π_{q<p} F_q, so running × suffix_p = W σ² Q_p
                for (std::size_t j = 0; j < count; ++j) {
                    omega[j] = T(0);
                    total[j] = wts[j];
                }
                for (std::size_t p = 0; p < P; ++p) {
                    const T* FASTFM_RESTRICT suffix = ws.others.data() + p * B;
                    const T* FASTFM_RESTRICT F = ws.F.data() + p * B;
                    const T* FASTFM_RESTRICT dF_dR = ws.dF.data() + p * B;
                    const T* FASTFM_RESTRICT dFb = ws.dFb.data() + p * B;
                    T sum_alpha = 0, sum_beta = 0;
#pragma omp simd reduction(+ : sum_alpha, sum_beta)
                    for (std::size_t j = 0; j < count; ++j) {
                        const T weighted_others = total[j] * suffix[j];      // W σ² Q_p
                        const T dK_dR = weighted_others * dF_dR[j];           // through s_p = α_p R
                        omega[j] += dK_dR;
                        sum_alpha += dK_dR * arg[j];                          // ∂s_p/∂log α_p = α_p R
                        sum_beta += weighted_others * dFb[j];
                        total[j] *= F[j];
                    }
                    partial[Dc + p] += sum_alpha;
                    partial[Dc + P + p] += beta_scale[p] * sum_beta;
                }
                // ∂K/∂log σ² = K, and total = W σ² Π_q F_q now
                partial[Dc + 2 * P] += sum_of(total, count);
            }
            if (!symmetric) {
                T* FASTFM_RESTRICT out = pb.omega + a * N + js;
                for (std::size_t j = 0; j < count; ++j) out[j] = omega[j];
                continue;
            }
            if (Dc == 0) continue;
            // ∂R/∂log θ_d = (t/2) sq^(t/2−1) ∂sq/∂log θ_d,  ∂sq/∂log θ_d = −2 (c_ad − c_bd)²
            if (exponent == T(2)) {
                for (std::size_t j = 0; j < count; ++j) chain[j] = omega[j];
            } else {
                const T half = T(0.5) * exponent;
                for (std::size_t j = 0; j < count; ++j) {
                    // sq^(t/2−1) = r/sq; 0 at sq = 0 as in the reference.  The division
                    // stays outside the select so that the loop if-converts.
                    const T ratio = arg[j] / (sq[j] > T(0) ? sq[j] : T(1));
                    chain[j] = sq[j] > T(0) ? omega[j] * half * ratio : T(0);
                }
            }
            const T* row = pb.rows_continuous + a * Dc;
            for (std::size_t d = 0; d < Dc; ++d) {
                const T c = row[d];
                const T* FASTFM_RESTRICT col = pb.cols->coordinate(d) + js;
                T sum_d = 0;
#pragma omp simd reduction(+ : sum_d)
                for (std::size_t j = 0; j < count; ++j) {
                    const T diff = c - col[j];
                    sum_d += chain[j] * diff * diff;
                }
                partial[d] += T(-2) * sum_d;
            }
        }
    }
}

// Cross covariances and their gradient w.r.t. the rows' scaled continuous
// inputs: K (n_rows, M) and dK (n_rows, M, Dc).
template <typename T>
struct CrossGradientProblem {
    const FMPlan<T>* plan = nullptr;
    const T* rows_continuous = nullptr;
    const int64_t* rows_states = nullptr;
    const PointColumns<T>* cols = nullptr;
    std::size_t n_rows = 0;
    T* K = nullptr;
    T* dK = nullptr;
};

template <typename T>
void cross_gradient_tile(const CrossGradientProblem<T>& pb, Workspace<T>& ws, std::size_t a0, std::size_t a1) {
    constexpr std::size_t B = Workspace<T>::B;
    const FMPlan<T>& plan = *pb.plan;
    const std::size_t M = pb.cols->n_points, P = plan.n_variables(), Dc = plan.n_continuous;
    const T exponent = plan.modulation.exponent;
    T* FASTFM_RESTRICT sq = ws.sq.data();
    T* FASTFM_RESTRICT arg = ws.arg.data();
    T* FASTFM_RESTRICT total = ws.prod.data();
    T* FASTFM_RESTRICT dK_dR = ws.omega.data();
    for (std::size_t j0 = 0; j0 < M; j0 += B) {
        const std::size_t count = std::min(M, j0 + B) - j0;
        for (std::size_t a = a0; a < a1; ++a) {
            const T* row = pb.rows_continuous + a * Dc;
            squared_distances(row, *pb.cols, j0, count, sq);
            continuous_argument(sq, count, exponent, arg);
            const int64_t* v = pb.rows_states + a * P;
            for (std::size_t p = 0; p < P; ++p)
                factor_derivatives(plan, plan.variables[p], static_cast<int>(v[p]), pb.cols->variable_states(p) + j0,
                                   arg, count, ws.F.data() + p * B, ws.dF.data() + p * B, ws.dFb.data() + p * B, ws);
            suffix_products(P, ws.F.data(), count, ws.others.data());
            // total = σ² Π_{q<p} F_q while looping, σ² Π_q F_q = K at the end
            for (std::size_t j = 0; j < count; ++j) {
                dK_dR[j] = T(0);
                total[j] = plan.derivative_variance;
            }
            for (std::size_t p = 0; p < P; ++p) {
                const T* FASTFM_RESTRICT suffix = ws.others.data() + p * B;
                const T* FASTFM_RESTRICT F = ws.F.data() + p * B;
                const T* FASTFM_RESTRICT dF = ws.dF.data() + p * B;
                for (std::size_t j = 0; j < count; ++j) {
                    dK_dR[j] += total[j] * suffix[j] * dF[j];
                    total[j] *= F[j];
                }
            }
            if (exponent != T(2)) {
                const T half = T(0.5) * exponent;
                for (std::size_t j = 0; j < count; ++j) {
                    const T ratio = arg[j] / (sq[j] > T(0) ? sq[j] : T(1));  // sq^(t/2−1), see reduction_tile
                    dK_dR[j] = sq[j] > T(0) ? dK_dR[j] * half * ratio : T(0);
                }
            }
            T* FASTFM_RESTRICT K_out = pb.K + a * M + j0;
            for (std::size_t j = 0; j < count; ++j) K_out[j] = total[j];
            // ∂sq/∂c_ad = 2 (c_ad − c_bd)
            T* FASTFM_RESTRICT dK_out = pb.dK + (a * M + j0) * Dc;
            for (std::size_t d = 0; d < Dc; ++d) {
                const T c = row[d];
                const T* FASTFM_RESTRICT col = pb.cols->coordinate(d) + j0;
                for (std::size_t j = 0; j < count; ++j) dK_out[j * Dc + d] = T(2) * dK_dR[j] * (c - col[j]);
            }
        }
    }
}

// ----------------------------------------------------------------------------
// Drivers.  Tile is a callable (problem, workspace, a0, a1[, tile]) so that the
// bindings can pass an ISA-dispatched instantiation; defaults call the templates.
// ----------------------------------------------------------------------------

template <typename T>
struct DefaultTiles {
    static void gram(const GramProblem<T>& pb, Workspace<T>& ws, std::size_t a0, std::size_t a1) {
        gram_tile(pb, ws, a0, a1);
    }
    static void reduction(const ReductionProblem<T>& pb, Workspace<T>& ws, std::size_t a0, std::size_t a1,
                          std::size_t tile) {
        reduction_tile(pb, ws, a0, a1, tile);
    }
    static void cross_gradient(const CrossGradientProblem<T>& pb, Workspace<T>& ws, std::size_t a0, std::size_t a1) {
        cross_gradient_tile(pb, ws, a0, a1);
    }
};

// Rows per task: small tiles balance the triangle; long rows of a cross Gram
// against few columns (acquisition scoring) amortise per-row work in bigger tiles.
inline std::size_t tile_rows_for(std::size_t n_cols, bool symmetric) {
    if (symmetric) return kTileRows;
    return n_cols >= 1024 ? kTileRows : 64;
}

template <typename T, typename GramTileFn = decltype(&DefaultTiles<T>::gram)>
void run_gram(const GramProblem<T>& pb, int n_threads, GramTileFn tile = &DefaultTiles<T>::gram) {
    const FMPlan<T>& plan = *pb.plan;
    for_each_row_tile(
        pb.n_rows, tile_rows_for(pb.cols->n_points, pb.symmetric), n_threads,
        [&] { return Workspace<T>(plan.n_variables(), plan.max_states); },
        [&](Workspace<T>& ws, std::size_t a0, std::size_t a1, std::size_t) { tile(pb, ws, a0, a1); });
}

// Returns the component sums, added tile by tile in a fixed order so that the
// result does not depend on the thread schedule.
template <typename T, typename ReductionTileFn = decltype(&DefaultTiles<T>::reduction)>
std::vector<T> run_reduction(ReductionProblem<T> pb, int n_threads,
                             ReductionTileFn tile = &DefaultTiles<T>::reduction) {
    const std::size_t n_components = pb.n_components();
    const std::size_t tile_rows = kReductionTileRows;
    const std::size_t n_tiles = (pb.N + tile_rows - 1) / tile_rows;
    std::vector<T> partials(n_tiles * n_components, T(0));
    pb.tile_partials = &partials;
    const FMPlan<T>& plan = *pb.plan;
    for_each_row_tile(
        pb.N, tile_rows, n_threads, [&] { return Workspace<T>(plan.n_variables(), plan.max_states); },
        [&](Workspace<T>& ws, std::size_t a0, std::size_t a1, std::size_t t) { tile(pb, ws, a0, a1, t); });
    std::vector<T> sums(n_components, T(0));
    for (std::size_t t = 0; t < n_tiles; ++t)
        for (std::size_t c = 0; c < n_components; ++c) sums[c] += partials[t * n_components + c];
    return sums;
}

// The row weights' share of a unit-diagonal kernel K̃_ab = w_a K_ab w_b in its gradient reduction needs, per point a,
// r_a = Σ_b (W_ab + W_ba) w_a w_b K_ab (fm._unit_diagonal_reduction's per_point: 2 Σ_b W_ab K̃_ab for a symmetric W),
// K the Gram of `plan` on the N points (C (N × Dc), states (N × P)) against themselves.  Without an N × N Gram: each
// tile of rows [a0, a1) computes its block of K against the points a0.. (the upper triangle and the tile's own small
// square) with the Gram's tile function `gram_tile` (an ISA-dispatched gram_tile, so that no other instantiation of
// the Gram's kernels is compiled), adds each pair (a, b ≥ a) to row a's sum and to column b's entry of the tile's
// partial array; the partial arrays are summed in tile order, so that r does not depend on the thread schedule.
// W_ab and W_ba are read on that triangle (symmetric_weights: W = Wᵀ promised, W_ab stands for both); W'_ab is
// (W_ab w_a) w_b, numpy's W * w[:, None] * w[None, :].  At most ~128 tiles (partials: n_tiles × N).
template <typename T, typename GramTileFn>
std::vector<T> run_weighted_row_sums(const FMPlan<T>& plan, const T* C, const int64_t* states, std::size_t N,
                                     const T* W, const T* w, bool symmetric_weights, int n_threads,
                                     GramTileFn gram_tile) {
    const std::size_t Dc = plan.n_continuous, P = plan.n_variables();
    const std::size_t tile_rows = std::max<std::size_t>(kTileRows, (N + 127) / 128);
    const std::size_t n_tiles = (N + tile_rows - 1) / tile_rows;
    std::vector<T> partials(n_tiles * N, T(0));
    for_each_row_tile(
        N, tile_rows, n_threads, [&] { return Workspace<T>(P, plan.max_states); },
        [&](Workspace<T>& ws, std::size_t a0, std::size_t a1, std::size_t t) {
            const std::size_t width = N - a0, rows = a1 - a0;
            const auto cols = PointColumns<T>::from_rows(C + a0 * Dc, states + a0 * P, width, Dc, P);
            std::vector<T> block(rows * width);
            GramProblem<T> pb;
            pb.plan = &plan;
            pb.rows_continuous = C + a0 * Dc;
            pb.rows_states = states + a0 * P;
            pb.cols = &cols;
            pb.n_rows = rows;
            pb.K = block.data();
            gram_tile(pb, ws, 0, rows);
            T* FASTFM_RESTRICT sums = partials.data() + t * N;
            for (std::size_t a = a0; a < a1; ++a) {
                const T* FASTFM_RESTRICT k_row = block.data() + (a - a0) * width - a0;   // k_row[b] = K_ab
                const T* FASTFM_RESTRICT w_row = W + a * N;
                const T wa = w[a];
                T row = 0;
                for (std::size_t b = a; b < N; ++b) {
                    const T both = symmetric_weights ? T(2) * ((w_row[b] * wa) * w[b])
                                                     : (w_row[b] * wa) * w[b] + (W[b * N + a] * w[b]) * wa;
                    const T pair = both * k_row[b];
                    row += pair;
                    if (b != a) sums[b] += pair;   // the pair (b, a) of row b; the diagonal pair counts once
                }
                sums[a] += row;
            }
        });
    std::vector<T> r(N, T(0));
    for (std::size_t t = 0; t < n_tiles; ++t)
        for (std::size_t b = 0; b < N; ++b) r[b] += partials[t * N + b];
    return r;
}

template <typename T, typename CrossTileFn = decltype(&DefaultTiles<T>::cross_gradient)>
void run_cross_gradient(const CrossGradientProblem<T>& pb, int n_threads,
                        CrossTileFn tile = &DefaultTiles<T>::cross_gradient) {
    const FMPlan<T>& plan = *pb.plan;
    for_each_row_tile(
        pb.n_rows, tile_rows_for(pb.cols->n_points, false), n_threads,
        [&] { return Workspace<T>(plan.n_variables(), plan.max_states); },
        [&](Workspace<T>& ws, std::size_t a0, std::size_t a1, std::size_t) { tile(pb, ws, a0, a1); });
}

// Rows of graph neighbours of one point x = (c, v) against N points: row m
// moves variable var_index[m] to new_state[m].  Only that factor changes, so
// every row is σ² Q_p(x, ·) F_p(new state, ·) with the base point's
// Q_p = Π_{q≠p} F_q (SPEC §2 "facts"): about one factor per neighbour.
template <typename T>
void neighbour_gram(const FMPlan<T>& plan, const T* c, const int64_t* v, const PointColumns<T>& cols,
                    const int64_t* var_index, const int64_t* new_state, std::size_t n_neighbours, T* K,
                    int n_threads) {
    constexpr std::size_t B = Workspace<T>::B;
    const std::size_t N = cols.n_points, P = plan.n_variables();
    const std::size_t n_chunks = (N + B - 1) / B;
    // base factors F_q(v_q, ·) and the products of the others, per chunk of columns
    std::vector<T> argument(N), others(P * N);
    for_each_row_tile(
        n_chunks, 1, n_threads, [&] { return Workspace<T>(P, plan.max_states); },
        [&](Workspace<T>& ws, std::size_t c0, std::size_t, std::size_t) {
            const std::size_t j0 = c0 * B, count = std::min(N, j0 + B) - j0;
            squared_distances(c, cols, j0, count, ws.sq.data());
            continuous_argument(ws.sq.data(), count, plan.modulation.exponent, argument.data() + j0);
            for (std::size_t p = 0; p < P; ++p) {
                T* F = ws.F.data() + p * B;
                for (std::size_t j = 0; j < count; ++j) F[j] = T(1);
                multiply_factor(plan, plan.variables[p], static_cast<int>(v[p]), cols.variable_states(p) + j0,
                                argument.data() + j0, count, F, ws);
            }
            products_of_others(P, ws.F.data(), count, ws.others.data(), ws.prod.data());
            for (std::size_t p = 0; p < P; ++p)
                for (std::size_t j = 0; j < count; ++j) others[p * N + j0 + j] = ws.others[p * B + j];
        });
    for_each_row_tile(
        n_neighbours, 8, n_threads, [&] { return Workspace<T>(P, plan.max_states); },
        [&](Workspace<T>& ws, std::size_t m0, std::size_t m1, std::size_t) {
            for (std::size_t m = m0; m < m1; ++m) {
                const std::size_t p = static_cast<std::size_t>(var_index[m]);
                T* row = K + m * N;
                for (std::size_t j = 0; j < N; ++j) row[j] = plan.variance * others[p * N + j];
                for (std::size_t j0 = 0; j0 < N; j0 += B)
                    multiply_factor(plan, plan.variables[p], static_cast<int>(new_state[m]),
                                    cols.variable_states(p) + j0, argument.data() + j0, std::min(N, j0 + B) - j0,
                                    row + j0, ws);
            }
        });
}

}  // namespace fastfm

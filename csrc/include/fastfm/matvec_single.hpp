// Single-precision kernel values for the matrix-free K·V products inside PCG
// (fastfm/gp_large.py, cg_options["precision"]).
//
// PCG stops at a relative residual of 1e-2 .. 1e-4, so its products need K to about 1e-5, not 1e-16.
// Kernel values with a few float ulps of relative error move (K + σ²I)⁻¹y's residual by ~1e-5 of ‖y‖
// (measured 4e-6 .. 4e-5 at N = 10,000 on the regression set, docs/benchmarks/large-n.md, "Single-precision K·V"), and
// gp_large certifies every single-precision solve with a double-precision residual.  What it buys: eight
// floats are one AVX2 register, and so is one table row of eight numerator coefficients, so a column state
// selects its coefficient with one permute (vpermps) where four-lane doubles need two permutes and a
// blend; sixteen floats are one AVX-512 register.  The dot products with V stay in double: each chunk
// of kernel values is widened before matvec.hpp's accumulate_row_chunk.
//
// Single precision cannot hold the double path's Π_p Num_p / Π_p Den_p: Π_p Den_p(0) is 3e43 for five
// 5-state paths at β = 100.  Here each factor's Num and Den are divided by Den_p(0) ≥ 1,
//     F_p = Ñ_p(r) / D̃_p(r),   D̃_p(0) = 1,   D̃_p(r) = Π_i (1 + αr/λ_i) ≥ 1   (λ_i ≥ 1, fm.hpp),
// and a block of columns takes one division for all factors, Π_p Ñ_p / Π_p D̃_p, where Π_p D̃_p ≤
// product_limit for all its columns (near pairs: at the regression set's fitted θ, every chunk), else one
// division per two factors, F_a F_b = (Ñ_a Ñ_b) / (D̃_a D̃_b), where every D̃_p ≤ den_limit; a chunk where
// neither holds (a distant pair, or NaN) is computed by the double path.  With Ñ_p ≤ a_1 D̃_p (F_p ≤ a_1)
// nothing overflows under either bound.  The division, not the table permutes, is the most expensive
// instruction per factor (perf, AVX2): one per block instead of five made K·v ≈15 % faster.
//
// Pure C++17 templates over the scalar type S; no Python.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "fastfm/common.hpp"
#include "fastfm/fm.hpp"
#include "fastfm/matvec.hpp"

#if defined(__SSE__) || defined(__x86_64__)
#include <xmmintrin.h>
#define FASTFM_HAVE_MXCSR 1
#endif

namespace fastfm {

// One factor's rational form (prepare_rational_factor) in precision S, scaled by 1/Den(0).
template <typename S>
struct SingleFactor {
    bool complete = false;
    int n_states = 0;
    S same_intercept = 0, same_slope = 0, off_numerator = 0;  // complete graphs
    // tridiagonal graphs: Ñ_vw's coefficient of r^k at [(v n + k) kRationalTableStates + w], as
    // VariablePlan::rational_numerators, plus kSingleTablePadding zeros (a 16-lane row load reads past
    // the last row; its upper lanes are never selected)
    std::vector<S> numerators;
    std::vector<S> denominator;  // D̃'s coefficients of r^0..r^n, denominator[0] = 1
};

constexpr std::size_t kSingleTablePadding = 16;

template <typename S>
struct SinglePlan {
    std::vector<SingleFactor<S>> factors;
    S variance = 1;
    std::size_t n_continuous = 0;
    S product_limit = 0;  // the largest Π_p D̃_p of one-division blocks (0: no such blocks)
    S den_limit = 0;      // the largest D̃_p of pairwise blocks (else the double path computes the chunk)

    // From a double plan with prepared rational forms.  False (out unusable) unless the modulation is
    // single-term Laplace, r is the squared distance, every factor has a rational form, and every
    // scaled coefficient is a normal number of S: a coefficient that would flush to zero drops a term
    // that matters where αr is large, exactly as prepare_rational_factor refuses in double.
    static bool from(const FMPlan<double>& plan, SinglePlan& out) {
        if (!plan.single_term || plan.modulation.exponent != 2.0) return false;
        const double smallest = static_cast<double>(std::numeric_limits<S>::min());
        const double largest = static_cast<double>(std::numeric_limits<S>::max());
        // Ñ_a Ñ_b ≤ a_1² D̃_a D̃_b ≤ a_1² den_limit² must stay finite with room for Horner's partial sums.
        const double growth = std::max(1.0, plan.leading);
        const double limit = std::sqrt(largest) * 1e-3 / growth;
        if (!(limit >= 1e6)) return false;
        out.factors.assign(plan.n_variables(), SingleFactor<S>{});
        auto narrow = [&](double value, S& to) {
            if (value != 0.0 && !(value >= smallest && value <= limit)) return false;
            to = static_cast<S>(value);
            return true;
        };
        for (std::size_t p = 0; p < plan.n_variables(); ++p) {
            const VariablePlan<double>& var = plan.variables[p];
            SingleFactor<S>& f = out.factors[p];
            if (var.rational == FactorPath::general || var.rational_denominator.empty()) return false;
            const double scale = 1.0 / var.rational_denominator[0];  // Den(0) ≥ 1
            double at_one = 0.0;  // D̃(1) bounds Horner's partial sums at r < 1 (positive coefficients)
            f.denominator.resize(var.rational_denominator.size());
            for (std::size_t k = 0; k < var.rational_denominator.size(); ++k) {
                const double c = var.rational_denominator[k] * scale;
                if (!narrow(c, f.denominator[k])) return false;
                at_one += c;
            }
            if (!(at_one <= limit)) return false;
            f.n_states = var.spectrum->n_states;
            const std::size_t degree = var.rational == FactorPath::complete ? 2 : static_cast<std::size_t>(f.n_states);
            if (f.denominator.size() != degree + 1) return false;  // the kernel unrolls Horner to this degree
            if (var.rational == FactorPath::complete) {
                f.complete = true;
                if (!narrow(var.rational_same_intercept * scale, f.same_intercept) ||
                    !narrow(var.rational_same_slope * scale, f.same_slope) ||
                    !narrow(var.rational_off_numerator * scale, f.off_numerator))
                    return false;
                continue;
            }
            f.numerators.assign(var.rational_numerators.size() + kSingleTablePadding, S(0));
            for (std::size_t i = 0; i < var.rational_numerators.size(); ++i)
                if (!narrow(var.rational_numerators[i] * scale, f.numerators[i])) return false;
        }
        out.variance = static_cast<S>(plan.variance);
        if (!(static_cast<double>(out.variance) >= smallest)) return false;
        out.n_continuous = plan.n_continuous;
        out.den_limit = static_cast<S>(limit);
        // Π Ñ_p ≤ a_1^P Π D̃_p ≤ a_1^P product_limit, finite with the same room as den_limit
        double product_limit = largest * 1e-3;
        for (std::size_t p = 0; p < plan.n_variables(); ++p) product_limit /= growth;
        out.product_limit = product_limit >= 1e6 ? static_cast<S>(product_limit) : S(0);
        return true;
    }
};

// The column points in precision S, zero-padded by kSingleColumnPadding so that a chunk's last vector block
// may read past its last column.
constexpr std::size_t kSingleColumnPadding = 64;

template <typename S>
struct SingleColumns {
    std::size_t n_points = 0, stride = 0, n_continuous = 0, n_variables = 0;
    std::vector<S> continuous;   // (n_continuous, stride)
    std::vector<int32_t> states;  // (n_variables, stride)

    const S* coordinate(std::size_t d) const { return continuous.data() + d * stride; }
    const int32_t* variable_states(std::size_t p) const { return states.data() + p * stride; }

    explicit SingleColumns(const PointColumns<double>& cols)
        : n_points(cols.n_points), stride(cols.n_points + kSingleColumnPadding), n_continuous(cols.n_continuous),
          n_variables(cols.n_variables), continuous(n_continuous * stride, S(0)), states(n_variables * stride, 0) {
        for (std::size_t d = 0; d < n_continuous; ++d)
            for (std::size_t j = 0; j < n_points; ++j)
                continuous[d * stride + j] = static_cast<S>(cols.coordinate(d)[j]);
        for (std::size_t p = 0; p < n_variables; ++p)
            std::copy(cols.variable_states(p), cols.variable_states(p) + n_points, states.data() + p * stride);
    }
};

#if defined(__GNUC__) && !defined(__clang__)
// Ñ_vw(r) of a tridiagonal factor for the U vectors of column states: one permute per power of r.
template <typename S, int N, int W, int U>
inline void single_tridiagonal_numerators(const SingleFactor<S>& f, int v, const int32_t* FASTFM_RESTRICT states,
                                          const typename LaneVector<S, W>::type* r,
                                          typename LaneVector<S, W>::type* num) {
    typedef typename LaneVector<S, W>::type lanes;
    typedef typename LaneVector<int32_t, W>::type index_lanes;
    static_assert(W == kRationalTableStates || W == 2 * kRationalTableStates, "a row is half or one vector");
    constexpr int T = kRationalTableStates;  // the table's row stride
    const S* FASTFM_RESTRICT table = f.numerators.data() + static_cast<std::size_t>(v) * N * T;
    index_lanes index[U];
#pragma GCC unroll 4
    for (int u = 0; u < U; ++u) std::memcpy(&index[u], states + u * W, sizeof index[u]);
    auto row = [&](int k) {
        lanes coefficients;  // 16 lanes: the next row (or the padding) in the upper half, never selected
        std::memcpy(&coefficients, table + k * T, sizeof coefficients);
        return coefficients;
    };
    const lanes top = row(N - 1);
#pragma GCC unroll 4
    for (int u = 0; u < U; ++u) num[u] = __builtin_shuffle(top, index[u]);
#pragma GCC unroll 16
    for (int k = N - 2; k >= 0; --k) {
        const lanes coefficients = row(k);
#pragma GCC unroll 4
        for (int u = 0; u < U; ++u) num[u] = num[u] * r[u] + __builtin_shuffle(coefficients, index[u]);
    }
}

// D̃(r) = Σ_{k ≤ N} c_k r^k at the U vectors of r, unrolled (N is the factor's degree, a compile-time constant).
template <typename S, int N, int W, int U>
inline void single_denominators(const S* FASTFM_RESTRICT c, const typename LaneVector<S, W>::type* r,
                                typename LaneVector<S, W>::type* den) {
#pragma GCC unroll 4
    for (int u = 0; u < U; ++u) den[u] = r[u] * c[N] + c[N - 1];
#pragma GCC unroll 16
    for (int k = N - 2; k >= 0; --k)
#pragma GCC unroll 4
        for (int u = 0; u < U; ++u) den[u] = den[u] * r[u] + c[k];
}

// out[0, count) = σ² Π_p F_p for row (row_continuous, v) against columns js.. of `cols`, in vector blocks
// of U × W columns (the last block may run past count into the padding).  OneDivision: Π_p Ñ_p / Π_p D̃_p,
// false where Π_p D̃_p of a column in [0, count) exceeds plan.product_limit; else in pairs of factors,
// false where some D̃_p exceeds plan.den_limit (either: or is NaN).  After false, out is partly written
// and the caller recomputes the chunk another way.
template <typename S, int W, int U, bool OneDivision>
inline bool single_kernel_blocks(const SinglePlan<S>& plan, const S* FASTFM_RESTRICT row_continuous,
                                 const int64_t* FASTFM_RESTRICT v, const SingleColumns<S>& cols, std::size_t js,
                                 std::size_t count, S* FASTFM_RESTRICT out) {
    typedef typename LaneVector<S, W>::type lanes;
    typedef typename LaneVector<int32_t, W>::type index_lanes;
    constexpr std::size_t block = static_cast<std::size_t>(U) * W;
    static_assert(block <= kSingleColumnPadding, "a block may read this far past the last column");
    const std::size_t P = plan.factors.size();
    const lanes limit = (OneDivision ? plan.product_limit : plan.den_limit) - lanes{};
    index_lanes lane_index;
    for (int l = 0; l < W; ++l) lane_index[l] = l;
    index_lanes out_of_range = index_lanes{};
    for (std::size_t j = 0; j < count; j += block) {
        lanes r[U], prod[U], num_pair[U], den_pair[U];
#pragma GCC unroll 4
        for (int u = 0; u < U; ++u) {
            r[u] = lanes{};
            for (std::size_t d = 0; d < plan.n_continuous; ++d) {
                lanes column;
                std::memcpy(&column, cols.coordinate(d) + js + j + u * W, sizeof column);
                const lanes diff = row_continuous[d] - column;
                r[u] += diff * diff;
            }
            prod[u] = S(1) - lanes{};
            num_pair[u] = den_pair[u] = prod[u];
        }
        // columns past count (the last block) must not send the chunk to the double path
        const int remaining = static_cast<int>(std::min(count - j, block));
        index_lanes valid[U];
#pragma GCC unroll 4
        for (int u = 0; u < U; ++u) valid[u] = lane_index < remaining - u * W;
        for (std::size_t p = 0; p < P; ++p) {
            const SingleFactor<S>& f = plan.factors[p];
            const int state = static_cast<int>(v[p]);
            const int32_t* FASTFM_RESTRICT states = cols.variable_states(p) + js + j;
            lanes num[U], den[U];
            if (f.complete) {
                const index_lanes row_state = state - index_lanes{};
                const lanes off = f.off_numerator - lanes{};
#pragma GCC unroll 4
                for (int u = 0; u < U; ++u) {
                    index_lanes w;
                    std::memcpy(&w, states + u * W, sizeof w);
                    const lanes same = f.same_intercept + f.same_slope * r[u];
                    num[u] = w == row_state ? same : off;
                }
                single_denominators<S, 2, W, U>(f.denominator.data(), r, den);
            } else {
                switch (f.n_states) {
#define FASTFM_SINGLE_BLOCK(N)                                                             \
    case N:                                                                                \
        single_tridiagonal_numerators<S, N, W, U>(f, state, states, r, num);              \
        single_denominators<S, N, W, U>(f.denominator.data(), r, den);                    \
        break;
                    FASTFM_SINGLE_BLOCK(2)
                    FASTFM_SINGLE_BLOCK(3)
                    FASTFM_SINGLE_BLOCK(4)
                    FASTFM_SINGLE_BLOCK(5)
                    FASTFM_SINGLE_BLOCK(6)
                    FASTFM_SINGLE_BLOCK(7)
                    FASTFM_SINGLE_BLOCK(8)
#undef FASTFM_SINGLE_BLOCK
                    default: return false;  // unreachable: rational forms have at most kRationalTableStates states
                }
                static_assert(kRationalTableStates == 8, "extend the cases above");
            }
#pragma GCC unroll 4
            for (int u = 0; u < U; ++u) {
                if (OneDivision) {
                    num_pair[u] *= num[u];
                    den_pair[u] *= den[u];
                    continue;
                }
                out_of_range |= valid[u] & ~(den[u] <= limit);
                if (p % 2 == 0) {
                    num_pair[u] = num[u];
                    den_pair[u] = den[u];
                } else {
                    prod[u] *= (num_pair[u] * num[u]) / (den_pair[u] * den[u]);
                }
            }
        }
#pragma GCC unroll 4
        for (int u = 0; u < U; ++u) {
            if (OneDivision) {  // num_pair, den_pair: the products over all factors
                out_of_range |= valid[u] & ~(den_pair[u] <= limit);
                prod[u] = num_pair[u] / den_pair[u];
            } else if (P % 2 == 1) {
                prod[u] *= num_pair[u] / den_pair[u];
            }
            const lanes value = plan.variance * prod[u];
            std::memcpy(out + j + u * W, &value, sizeof value);
        }
    }
    int any = 0;
    for (int l = 0; l < W; ++l) any |= out_of_range[l];
    return any == 0;
}
#endif

// Flush-to-zero and denormals-are-zero for the scope (x86): a product of many small factors can reach
// float's denormal range, where each operation costs a microcode assist; such a kernel value (< 1e-38 σ²)
// is zero for every purpose here.  The caller's mode is restored on exit, and around the double path
// (restore_caller_mode), whose values then agree with fm_gram_matvec's to the last bit.
class FlushDenormals {
#if defined(FASTFM_HAVE_MXCSR)
    unsigned int saved_;

public:
    FlushDenormals() : saved_(_mm_getcsr()) { flush(); }
    ~FlushDenormals() { restore_caller_mode(); }
    void flush() { _mm_setcsr(saved_ | 0x8040u); }  // FTZ | DAZ
    void restore_caller_mode() { _mm_setcsr(saved_); }
#else
public:
    FlushDenormals() {}
    void flush() {}
    void restore_caller_mode() {}
#endif
    FlushDenormals(const FlushDenormals&) = delete;
    FlushDenormals& operator=(const FlushDenormals&) = delete;
};

// K·V's inputs with the single-precision plan and columns next to the double ones (the fallback).
template <typename S>
struct SingleMatvecProblem : MatvecProblem<double> {
    const SinglePlan<S>* single_plan = nullptr;
    const SingleColumns<S>* single_cols = nullptr;
};

template <typename S>
struct SingleMatvecWorkspace : MatvecWorkspace<double> {
    std::vector<S> single_row;  // one chunk of kernel values, plus the last block's overrun
    std::vector<S> row_continuous;
    SingleMatvecWorkspace(const FMPlan<double>& plan, std::size_t rank, std::size_t n_rows)
        : MatvecWorkspace<double>(plan, rank, n_rows),
          single_row(Workspace<double>::B + kSingleColumnPadding),
          row_continuous(plan.n_continuous) {}
};

#if defined(__GNUC__) && !defined(__clang__)
// Rows [a0, a1) of K V with single-precision kernel values (chunks out of their range in double).
template <typename S, int W, int U>
void single_matvec_tile(const SingleMatvecProblem<S>& pb, SingleMatvecWorkspace<S>& ws, std::size_t a0,
                        std::size_t a1) {
    const GramProblem<double>& g = pb.gram;
    const SinglePlan<S>& plan = *pb.single_plan;
    const std::size_t P = plan.factors.size(), Dc = plan.n_continuous, M = g.cols->n_points;
    double* FASTFM_RESTRICT k = ws.row.data();
    FlushDenormals flush;
    for_each_row_chunk<double>(a0, a1, M, g.symmetric, [&](std::size_t a, std::size_t js, std::size_t count) {
        // consecutive chunks belong to different rows (for_each_row_chunk: rows inside column chunks)
        for (std::size_t d = 0; d < Dc; ++d) ws.row_continuous[d] = static_cast<S>(g.rows_continuous[a * Dc + d]);
        const int64_t* v = g.rows_states + a * P;
        const S* row = ws.row_continuous.data();
        S* out = ws.single_row.data();
        if ((plan.product_limit > 0 &&
             single_kernel_blocks<S, W, U, true>(plan, row, v, *pb.single_cols, js, count, out)) ||
            single_kernel_blocks<S, W, U, false>(plan, row, v, *pb.single_cols, js, count, out)) {
            for (std::size_t j = 0; j < count; ++j) k[j] = static_cast<double>(ws.single_row[j]);
        } else {
            flush.restore_caller_mode();
            kernel_row_chunk(g, ws.gram, a, js, count, k);
            flush.flush();
        }
        accumulate_row_chunk(pb, ws, a, js, count, k);
    });
}
#endif

}  // namespace fastfm

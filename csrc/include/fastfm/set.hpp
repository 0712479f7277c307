// Set kernels (SPEC §4; Kim et al., "Bayesian optimization over sets"):
//
//     K_set(X, X') = 1/(m m') Σ_i Σ_j k_ν(‖(x_i − x'_j)/ℓ‖)
//
// with a unit-amplitude Matérn inner kernel k_ν, ν ∈ {1/2, 3/2, 5/2}, the
// fused gradient reduction Σ_ab W_ab ∂K_ab/∂log ℓ_k, the cross gradient
// ∂K_ab/∂A_aik (the acquisition optimiser's input gradient) and the diagonal
// K_set(A_a, A_a) with its derivatives (the normalised and MMD kernels).  The random-projection
// approximation K̂ of the paper's Algorithm 1 is the same sum on subsets of the
// sets, chosen in Python before the call.
//
// Layout and loop order (the cost is O(N² m² d) inner-kernel evaluations, ~3e8
// for (N, m, d) = (500, 50, 2)): the second argument's points are stored
// dimension-major ("columns") and flattened over sets, q = b·m' + j, so the
// innermost loop runs over a long contiguous run of points and vectorises;
// per (set a, point i) one pass over a chunk of whole sets adds k_ν into a
// per-point accumulator, and each set's sum is read off the accumulator once
// per row a.  Symmetric Grams visit b ≥ a only (pairs computed once).
//
// Pure C++17: nothing here knows about Python (csrc/py/set.cpp binds it).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "fastfm/common.hpp"

namespace fastfm {

// Points per chunk of the flattened second argument: the chunk's coordinates,
// squared distances and accumulators (≈ (d + 2 + d)·8·kSetChunk bytes) stay in L1/L2.
#ifndef FASTFM_SET_CHUNK
#define FASTFM_SET_CHUNK 512
#endif
constexpr std::size_t kSetChunk = FASTFM_SET_CHUNK;

// condition ? if_true : if_false for a double or a float, as a select on the bits.  Written as the
// ternary, GCC 12 keeps a compare-and-branch in the AVX2 (x86-64-v3) and SSE2 clones, and a loop with a
// branch does not vectorise: the set Gram's inner loop ran scalar there, ~4× slower per point pair
// (AVX-512 clones vectorise either way, through mask registers).  The integer mask select vectorises on
// every ISA and gives the same value, NaN included.
template <typename T>
inline T select(bool condition, T if_true, T if_false) {
    using Bits = std::conditional_t<sizeof(T) == 8, std::int64_t, std::int32_t>;
    static_assert(sizeof(Bits) == sizeof(T), "select is for double and float");
    const Bits mask = -static_cast<Bits>(condition);
    Bits true_bits, false_bits;
    std::memcpy(&true_bits, &if_true, sizeof(T));
    std::memcpy(&false_bits, &if_false, sizeof(T));
    const Bits bits = (true_bits & mask) | (false_bits & ~mask);
    T out;
    std::memcpy(&out, &bits, sizeof(T));
    return out;
}

// exp(x) for x ≤ 0, branch-free so that loops calling it vectorise (std::exp
// does not, without -ffast-math).  Cody–Waite reduction x = k ln2 + r,
// |r| ≤ ln2/2, then the degree-12 Taylor polynomial of e^r (truncation error
// r¹³/13! < 2e-16 relative; evaluated by Estrin's scheme) and 2^k assembled in the exponent bits.  Inputs
// below −708 are clamped (e^−708 ≈ 3e-308: far below any kernel value that matters).
template <typename T>
inline T exp_nonpositive(T x) {
    x = select(x < T(-708), T(-708), x);
    // round-to-nearest of x/ln2 by the 1.5·2^52 shift: the sum's low mantissa bits hold k
    const T shifter = T(6755399441055744.0);
    const T shifted = x * T(1.4426950408889634074) + shifter;
    const T k = shifted - shifter;
    T r = x - k * T(0.693147180369123816490);
    r = r - k * T(1.90821492927058770002e-10);
    // Estrin's scheme: the same polynomial in a tree of depth 4 instead of Horner's chain of 12 dependent
    // FMAs, whose latency (~48 cycles) the out-of-order window could not hide in the set kernels' loops
    const T r2 = r * r, r4 = r2 * r2, r8 = r4 * r4;
    const T p01 = T(1.0) + r;
    const T p23 = T(0.5) + T(1.0 / 6.0) * r;
    const T p45 = T(1.0 / 24.0) + T(1.0 / 120.0) * r;
    const T p67 = T(1.0 / 720.0) + T(1.0 / 5040.0) * r;
    const T p89 = T(1.0 / 40320.0) + T(1.0 / 362880.0) * r;
    const T p1011 = T(1.0 / 3628800.0) + T(1.0 / 39916800.0) * r;
    const T q0 = p01 + p23 * r2;
    const T q1 = p45 + p67 * r2;
    const T q2 = p89 + p1011 * r2;
    const T s0 = q0 + q1 * r4;
    const T s1 = q2 + T(1.0 / 479001600.0) * r4;
    const T p = s0 + s1 * r8;
    int64_t bits;
    std::memcpy(&bits, &shifted, sizeof bits);
    // low 12 bits of `bits` are k mod 4096; k + 1023 ∈ [1, 2046] for x ∈ [−708, 0]
    const int64_t scale_bits = (bits + 1023) << 52;
    T scale;
    std::memcpy(&scale, &scale_bits, sizeof scale);
    return p * scale;
}

// Matérn kernels as functions of the squared scaled distance s = r² (unit amplitude).
// The loops calling them vectorise only when sqrt may skip errno: setup.py builds with
// -fno-math-errno (the square root of a squared distance never sets errno anyway); with
// errno semantics GCC keeps a scalar sqrt call and the Gram is ~8× slower.
// value(s) = k_ν(r); slope(s) = ∂k_ν/∂s, which is what ∂/∂log ℓ needs
// (∂s/∂log ℓ_k = −2 Δ_k²/ℓ_k²).  Branch-free so that the loops vectorise.
enum class MaternOrder : int { Half = 1, ThreeHalves = 3, FiveHalves = 5 };

template <typename T, MaternOrder Nu>
struct Matern {
    static inline T value(T s) {
        const T r = std::sqrt(s);
        if constexpr (Nu == MaternOrder::FiveHalves) {
            const T t = T(2.23606797749978969641) * r;       // √5 r
            return (T(1) + t + t * t * T(1.0 / 3.0)) * exp_nonpositive(-t);   // 1 + √5r + 5r²/3
        } else if constexpr (Nu == MaternOrder::ThreeHalves) {
            const T t = T(1.73205080756887729353) * r;       // √3 r
            return (T(1) + t) * exp_nonpositive(-t);
        } else {
            return exp_nonpositive(-r);
        }
    }
    // value(s), with slope(s) written to `slope_out`: one sqrt and one exp for both
    static inline T value_and_slope(T s, T& slope_out) {
        const T r = std::sqrt(s);
        if constexpr (Nu == MaternOrder::FiveHalves) {
            const T t = T(2.23606797749978969641) * r;
            const T e = exp_nonpositive(-t);
            slope_out = T(-5.0 / 6.0) * (T(1) + t) * e;
            return (T(1) + t + t * t * T(1.0 / 3.0)) * e;
        } else if constexpr (Nu == MaternOrder::ThreeHalves) {
            const T t = T(1.73205080756887729353) * r;
            const T e = exp_nonpositive(-t);
            slope_out = T(-1.5) * e;
            return (T(1) + t) * e;
        } else {
            const T e = exp_nonpositive(-r);
            const T safe_r = select(r > T(0), r, T(1));
            slope_out = select(r > T(0), T(-0.5) * e / safe_r, T(0));
            return e;
        }
    }
    static inline T slope(T s) {
        const T r = std::sqrt(s);
        if constexpr (Nu == MaternOrder::FiveHalves) {
            const T t = T(2.23606797749978969641) * r;
            return T(-5.0 / 6.0) * (T(1) + t) * exp_nonpositive(-t);
        } else if constexpr (Nu == MaternOrder::ThreeHalves) {
            return T(-1.5) * exp_nonpositive(T(-1.73205080756887729353) * r);
        } else {
            // −e^{−r}/(2r): singular at r = 0, where every Δ_k is 0 too, so the
            // gradient term Δ_k² · slope → 0; the guard returns 0 there.
            const T safe_r = select(r > T(0), r, T(1));
            return select(r > T(0), T(-0.5) * exp_nonpositive(-r) / safe_r, T(0));
        }
    }
};

// A batch of n_sets sets of m points in R^d, scaled by 1/ℓ, in two layouts:
// rows[(b·m + j)·d + k] (one point's coordinates together) and
// columns[k·n_sets·m + b·m + j] (one coordinate of every point together).
template <typename T>
struct ScaledSets {
    std::size_t n_sets = 0, m = 0, d = 0;
    std::vector<T> rows;
    std::vector<T> columns;

    ScaledSets(const T* X, std::size_t n_sets_, std::size_t m_, std::size_t d_, const T* length_scale)
        : n_sets(n_sets_), m(m_), d(d_), rows(n_sets_ * m_ * d_), columns(n_sets_ * m_ * d_) {
        const std::size_t n_points = n_sets * m;
        for (std::size_t q = 0; q < n_points; ++q)
            for (std::size_t k = 0; k < d; ++k) {
                const T v = X[q * d + k] / length_scale[k];
                rows[q * d + k] = v;
                columns[k * n_points + q] = v;
            }
    }
    std::size_t n_points() const { return n_sets * m; }
    const T* point(std::size_t set, std::size_t i) const { return rows.data() + (set * m + i) * d; }
};

// Per-thread scratch of the set drivers.
template <typename T>
struct SetWorkspace {
    std::vector<T> sq;       // (chunk,) squared distances
    std::vector<T> acc;      // (chunk,) Σ_i k(x_i, y_q), or Σ_i slope·Δ_k² for k = 0..d-1 (d·chunk)
    std::vector<T> partial;  // (d + 1,) this thread's gradient partial sums, then Σ w K (reduction);
                             // the per-coordinate factors 2/(m m' ℓ_k) (cross gradient)
    SetWorkspace(std::size_t chunk, std::size_t d) : sq(chunk), acc(chunk * (d + 1)), partial(d + 1) {}
};

// sq[q] = Σ_k (x_k − Y_k[q])² for q in [0, count); Y_k = columns + k·ld.
template <typename T>
inline void squared_distances(const T* FASTFM_RESTRICT x, const T* FASTFM_RESTRICT columns, std::size_t ld,
                              std::size_t d, std::size_t first, std::size_t count, T* FASTFM_RESTRICT sq) {
    std::fill(sq, sq + count, T(0));
    for (std::size_t k = 0; k < d; ++k) {
        const T xk = x[k];
        const T* FASTFM_RESTRICT yk = columns + k * ld + first;
#pragma omp simd
        for (std::size_t q = 0; q < count; ++q) {
            const T diff = xk - yk[q];
            sq[q] += diff * diff;
        }
    }
}

// acc_value[q] += k(s_q) and s_q <- slope(s_q) for q in [0, count): the first pass of every gradient, where one
// sqrt and one exp serve the value and the slope; the per-coordinate pass that follows reads the slopes from sq.
template <typename T, MaternOrder Nu>
inline void add_values_keep_slopes(T* FASTFM_RESTRICT sq, T* FASTFM_RESTRICT acc_value, std::size_t count) {
#pragma omp simd
    for (std::size_t q = 0; q < count; ++q) {
        T slope;
        acc_value[q] += Matern<T, Nu>::value_and_slope(sq[q], slope);
        sq[q] = slope;
    }
}

// K[a, b] for b in [b_begin, n_sets_B) of one row a: K row pointer `row` (length NB).
template <typename T, MaternOrder Nu>
void set_gram_row(const ScaledSets<T>& A, const ScaledSets<T>& B, std::size_t a, std::size_t b_begin,
                  SetWorkspace<T>& ws, T* FASTFM_RESTRICT row) {
    const std::size_t mb = B.m, ld = B.n_points();
    const std::size_t sets_per_chunk = std::max<std::size_t>(1, kSetChunk / std::max<std::size_t>(mb, 1));
    const T inv_pairs = T(1) / (T(A.m) * T(mb));
    T* FASTFM_RESTRICT sq = ws.sq.data();
    T* FASTFM_RESTRICT acc = ws.acc.data();
    for (std::size_t b0 = b_begin; b0 < B.n_sets; b0 += sets_per_chunk) {
        const std::size_t n_sets = std::min(sets_per_chunk, B.n_sets - b0);
        const std::size_t first = b0 * mb, count = n_sets * mb;
        std::fill(acc, acc + count, T(0));
        if (B.d == 2) {  // points in the plane, the common case: one fused pass, no distance buffer
            const T* FASTFM_RESTRICT y0 = B.columns.data() + first;
            const T* FASTFM_RESTRICT y1 = B.columns.data() + ld + first;
            for (std::size_t i = 0; i < A.m; ++i) {
                const T x0 = A.point(a, i)[0], x1 = A.point(a, i)[1];
#pragma omp simd
                for (std::size_t q = 0; q < count; ++q) {
                    const T u = x0 - y0[q], v = x1 - y1[q];
                    acc[q] += Matern<T, Nu>::value(u * u + v * v);
                }
            }
        } else {
            for (std::size_t i = 0; i < A.m; ++i) {
                squared_distances(A.point(a, i), B.columns.data(), ld, B.d, first, count, sq);
#pragma omp simd
                for (std::size_t q = 0; q < count; ++q) acc[q] += Matern<T, Nu>::value(sq[q]);
            }
        }
        for (std::size_t s = 0; s < n_sets; ++s) {
            T total = T(0);
            for (std::size_t j = 0; j < mb; ++j) total += acc[s * mb + j];
            row[b0 + s] = total * inv_pairs;
        }
    }
}

// The pass over the point pairs of row a that the gradient reduction and the Gram with its derivatives share,
// for the chunk [first, first + count) of A's flattened points (whole sets): acc row k < d (stride ws.sq.size())
// gets Σ_i slope(s_iq) Δ_iqk² and acc row d gets Σ_i k(s_iq), over the points i of set a.
template <typename T, MaternOrder Nu>
inline void accumulate_slope_squares_and_values(const ScaledSets<T>& A, std::size_t a, std::size_t first,
                                                std::size_t count, SetWorkspace<T>& ws) {
    const std::size_t m = A.m, d = A.d, ld = A.n_points(), stride = ws.sq.size();
    T* FASTFM_RESTRICT sq = ws.sq.data();
    T* FASTFM_RESTRICT acc = ws.acc.data();
    std::fill(acc, acc + (d + 1) * stride, T(0));
    T* FASTFM_RESTRICT acc_value = acc + d * stride;
    if (d == 2) {
        // points in the plane: one fused pass per point i (no distance buffer, each difference made once), as
        // in set_gram_row; the separate passes below store and reload the distances and slopes
        const T* FASTFM_RESTRICT y0 = A.columns.data() + first;
        const T* FASTFM_RESTRICT y1 = A.columns.data() + ld + first;
        T* FASTFM_RESTRICT acc0 = acc;
        T* FASTFM_RESTRICT acc1 = acc + stride;
        for (std::size_t i = 0; i < m; ++i) {
            const T x0 = A.point(a, i)[0], x1 = A.point(a, i)[1];
#pragma omp simd
            for (std::size_t q = 0; q < count; ++q) {
                const T u = x0 - y0[q], v = x1 - y1[q];
                T slope;
                acc_value[q] += Matern<T, Nu>::value_and_slope(u * u + v * v, slope);
                acc0[q] += slope * u * u;
                acc1[q] += slope * v * v;
            }
        }
        return;
    }
    for (std::size_t i = 0; i < m; ++i) {
        const T* x = A.point(a, i);
        squared_distances(x, A.columns.data(), ld, d, first, count, sq);
        // sq[q] becomes the slope; the Δ_k² are recomputed per k (cheap, and no d·chunk buffer)
        add_values_keep_slopes<T, Nu>(sq, acc_value, count);
        for (std::size_t k = 0; k < d; ++k) {
            const T xk = x[k];
            const T* FASTFM_RESTRICT yk = A.columns.data() + k * ld + first;
            T* FASTFM_RESTRICT acck = acc + k * stride;
#pragma omp simd
            for (std::size_t q = 0; q < count; ++q) {
                const T diff = xk - yk[q];
                acck[q] += sq[q] * diff * diff;
            }
        }
    }
}

// One row's share of the gradient reduction: adds Σ_{b ≥ a} w_ab Σ_ij slope(s_ij) Δ_ijk² into
// ws.partial[k], with w_ab = W_ab + W_ba (W_aa on the diagonal): every unordered pair once;
// and Σ_{b ≥ a} w_ab Σ_ij k(s_ij) into ws.partial[d] (the variance gradient needs Σ W ∘ K, and
// the value costs one multiply-add more once sqrt and exp are shared with the slope).
template <typename T, MaternOrder Nu>
void set_reduction_row(const ScaledSets<T>& A, const T* W, std::size_t a, SetWorkspace<T>& ws) {
    const std::size_t N = A.n_sets, m = A.m, d = A.d;
    const std::size_t sets_per_chunk = std::max<std::size_t>(1, kSetChunk / std::max<std::size_t>(m, 1));
    const std::size_t stride = ws.sq.size();
    const T* acc = ws.acc.data();
    for (std::size_t b0 = a; b0 < N; b0 += sets_per_chunk) {
        const std::size_t n_sets = std::min(sets_per_chunk, N - b0);
        accumulate_slope_squares_and_values<T, Nu>(A, a, b0 * m, n_sets * m, ws);
        for (std::size_t s = 0; s < n_sets; ++s) {
            const std::size_t b = b0 + s;
            const T w = b == a ? W[a * N + a] : W[a * N + b] + W[b * N + a];
            for (std::size_t k = 0; k <= d; ++k) {
                T sum = T(0);
                for (std::size_t j = 0; j < m; ++j) sum += acc[k * stride + s * m + j];
                ws.partial[k] += w * sum;
            }
        }
    }
}

// One row a of the Gram with its lengthscale derivatives, b ≥ a: K_row[b] = K[a, b] and
// dK_row[b·d + k] = ∂K_ab/∂log ℓ_k = −2/m² Σ_ij slope(s_ij) Δ_ijk² (as set_reduction_row, but every pair's
// sums are written out instead of weighted: the likelihood's gradient is then Σ W ∘ ∂K at O(N² d), and the
// pass that the Gram and the reduction each made over the O(N² m² d) point pairs is made once).
template <typename T, MaternOrder Nu>
void set_gram_gradient_row(const ScaledSets<T>& A, std::size_t a, SetWorkspace<T>& ws, T* FASTFM_RESTRICT K_row,
                           T* FASTFM_RESTRICT dK_row) {
    const std::size_t N = A.n_sets, m = A.m, d = A.d;
    const std::size_t sets_per_chunk = std::max<std::size_t>(1, kSetChunk / std::max<std::size_t>(m, 1));
    const std::size_t stride = ws.sq.size();
    const T inv_pairs = T(1) / (T(m) * T(m));
    const T* acc = ws.acc.data();
    for (std::size_t b0 = a; b0 < N; b0 += sets_per_chunk) {
        const std::size_t n_sets = std::min(sets_per_chunk, N - b0);
        accumulate_slope_squares_and_values<T, Nu>(A, a, b0 * m, n_sets * m, ws);
        for (std::size_t s = 0; s < n_sets; ++s) {
            const std::size_t b = b0 + s;
            T total = T(0);
            for (std::size_t j = 0; j < m; ++j) total += acc[d * stride + s * m + j];
            K_row[b] = total * inv_pairs;
            for (std::size_t k = 0; k < d; ++k) {
                T sum = T(0);
                for (std::size_t j = 0; j < m; ++j) sum += acc[k * stride + s * m + j];
                dK_row[b * d + k] = T(-2) * inv_pairs * sum;
            }
        }
    }
}

// One row a of the cross gradient: K_row[b] = K[a, b] for every b (length NB) and
// dK_row[(b·m + i)·d + k] = ∂K_ab/∂A_aik = 2/(m m' ℓ_k) Σ_j slope(s_ij) Δ_ijk (Δ the scaled difference
// x_i − y_j, so the 1/ℓ_k turns the derivative in scaled coordinates into one in A's own).
// Per (point i, chunk of sets) one pass computes sqrt and exp once for the value and the slope, keeps
// slope·Δ_k per point of the chunk (acc rows 0..d-1) and sums them per set; the values add up in
// acc row d as in set_gram_row.
template <typename T, MaternOrder Nu>
void set_cross_gradient_row(const ScaledSets<T>& A, const ScaledSets<T>& B, const T* length_scale, std::size_t a,
                            SetWorkspace<T>& ws, T* FASTFM_RESTRICT K_row, T* FASTFM_RESTRICT dK_row) {
    const std::size_t m = A.m, mb = B.m, d = B.d, ld = B.n_points();
    const std::size_t sets_per_chunk = std::max<std::size_t>(1, kSetChunk / std::max<std::size_t>(mb, 1));
    const std::size_t stride = ws.sq.size();
    const T inv_pairs = T(1) / (T(m) * T(mb));
    T* FASTFM_RESTRICT factor = ws.partial.data();
    for (std::size_t k = 0; k < d; ++k) factor[k] = T(2) * inv_pairs / length_scale[k];
    T* FASTFM_RESTRICT sq = ws.sq.data();
    T* FASTFM_RESTRICT acc = ws.acc.data();
    T* FASTFM_RESTRICT acc_value = acc + d * stride;
    for (std::size_t b0 = 0; b0 < B.n_sets; b0 += sets_per_chunk) {
        const std::size_t n_sets = std::min(sets_per_chunk, B.n_sets - b0);
        const std::size_t first = b0 * mb, count = n_sets * mb;
        std::fill(acc_value, acc_value + count, T(0));
        for (std::size_t i = 0; i < m; ++i) {
            const T* x = A.point(a, i);
            if (d == 2) {  // points in the plane: one fused pass, as in set_gram_row
                const T x0 = x[0], x1 = x[1];
                const T* FASTFM_RESTRICT y0 = B.columns.data() + first;
                const T* FASTFM_RESTRICT y1 = B.columns.data() + ld + first;
                T* FASTFM_RESTRICT acc0 = acc;
                T* FASTFM_RESTRICT acc1 = acc + stride;
#pragma omp simd
                for (std::size_t q = 0; q < count; ++q) {
                    const T u = x0 - y0[q], v = x1 - y1[q];
                    T slope;
                    acc_value[q] += Matern<T, Nu>::value_and_slope(u * u + v * v, slope);
                    acc0[q] = slope * u;
                    acc1[q] = slope * v;
                }
            } else {
                squared_distances(x, B.columns.data(), ld, d, first, count, sq);
                add_values_keep_slopes<T, Nu>(sq, acc_value, count);
                for (std::size_t k = 0; k < d; ++k) {
                    const T xk = x[k];
                    const T* FASTFM_RESTRICT yk = B.columns.data() + k * ld + first;
                    T* FASTFM_RESTRICT acck = acc + k * stride;
#pragma omp simd
                    for (std::size_t q = 0; q < count; ++q) acck[q] = sq[q] * (xk - yk[q]);
                }
            }
            for (std::size_t s = 0; s < n_sets; ++s) {
                T* FASTFM_RESTRICT out = dK_row + ((b0 + s) * m + i) * d;
                for (std::size_t k = 0; k < d; ++k) {
                    const T* FASTFM_RESTRICT terms = acc + k * stride + s * mb;
                    T sum = T(0);
                    for (std::size_t j = 0; j < mb; ++j) sum += terms[j];
                    out[k] = factor[k] * sum;
                }
            }
        }
        for (std::size_t s = 0; s < n_sets; ++s) {
            T total = T(0);
            for (std::size_t j = 0; j < mb; ++j) total += acc_value[s * mb + j];
            K_row[b0 + s] = total * inv_pairs;
        }
    }
}

// The diagonal of one set a: *diag = K_set(A_a, A_a) = 1/m² Σ_ij k(s_ij) and, when Gradient,
// d_loglength[k] = ∂diag/∂log ℓ_k = −2/m² Σ_ij slope(s_ij) Δ_ijk² (length d) and
// d_points[i·d + k] = ∂diag/∂A_aik = 4/(m² ℓ_k) Σ_j slope(s_ij) Δ_ijk ((m, d); each point enters the
// double sum twice).  O(m² d): the set's own points are the contiguous run [a·m, a·m + m) of A.columns.
template <typename T, MaternOrder Nu, bool Gradient>
void set_diag_row(const ScaledSets<T>& A, const T* length_scale, std::size_t a, SetWorkspace<T>& ws,
                  T* FASTFM_RESTRICT diag, T* FASTFM_RESTRICT d_loglength, T* FASTFM_RESTRICT d_points) {
    const std::size_t m = A.m, d = A.d, ld = A.n_points(), first = a * m;
    const std::size_t stride = ws.sq.size();
    const T inv_pairs = T(1) / (T(m) * T(m));
    T* FASTFM_RESTRICT sq = ws.sq.data();
    T* FASTFM_RESTRICT acc = ws.acc.data();
    T* FASTFM_RESTRICT acc_value = acc + d * stride;
    std::fill(acc_value, acc_value + m, T(0));
    if constexpr (Gradient)
        for (std::size_t k = 0; k < d; ++k) std::fill(acc + k * stride, acc + k * stride + m, T(0));
    for (std::size_t i = 0; i < m; ++i) {
        const T* x = A.point(a, i);
        squared_distances(x, A.columns.data(), ld, d, first, m, sq);
        if constexpr (!Gradient) {
#pragma omp simd
            for (std::size_t j = 0; j < m; ++j) acc_value[j] += Matern<T, Nu>::value(sq[j]);
        } else {
            add_values_keep_slopes<T, Nu>(sq, acc_value, m);
            for (std::size_t k = 0; k < d; ++k) {
                const T xk = x[k];
                const T* FASTFM_RESTRICT yk = A.columns.data() + k * ld + first;
                T* FASTFM_RESTRICT acck = acc + k * stride;
                T sum = T(0);
#pragma omp simd reduction(+ : sum)
                for (std::size_t j = 0; j < m; ++j) {
                    const T term = sq[j] * (xk - yk[j]);
                    sum += term;
                    acck[j] += term * (xk - yk[j]);
                }
                d_points[i * d + k] = T(4) * inv_pairs / length_scale[k] * sum;
            }
        }
    }
    T total = T(0);
    for (std::size_t j = 0; j < m; ++j) total += acc_value[j];
    *diag = total * inv_pairs;
    if constexpr (Gradient)
        for (std::size_t k = 0; k < d; ++k) {
            T sum = T(0);
            for (std::size_t j = 0; j < m; ++j) sum += acc[k * stride + j];
            d_loglength[k] = T(-2) * inv_pairs * sum;
        }
}

// Full set Gram K (NA, NB), row-major; symmetric = (B is A): pairs b ≥ a computed once and mirrored.
// row(ws, a, b_begin, K_row) computes one row (set_gram_row, or an ISA-dispatched copy of it).
template <typename T, typename Row>
void set_gram(const ScaledSets<T>& A, const ScaledSets<T>& B, bool symmetric, T* K, int n_threads, Row row) {
    const std::size_t NB = B.n_sets;
    for_each_row_tile(
        A.n_sets, 1, n_threads, [&] { return SetWorkspace<T>(kSetChunk + B.m, B.d); },
        [&](SetWorkspace<T>& ws, std::size_t a0, std::size_t a1, std::size_t) {
            for (std::size_t a = a0; a < a1; ++a) {
                row(ws, a, symmetric ? a : 0, K + a * NB);
                if (symmetric)
                    for (std::size_t b = a + 1; b < NB; ++b) K[b * NB + a] = K[a * NB + b];
            }
        });
}

// g_k = Σ_ab W_ab ∂K_ab/∂log ℓ_k for K = set_gram(A, A), with
// ∂K_ab/∂log ℓ_k = −2/m² Σ_ij slope(s_ij) Δ_ijk²  (Δ already divided by ℓ), for k < d;
// g[d] = Σ_ab W_ab K_ab.  g has d + 1 entries.
// row(ws, a) is set_reduction_row (or an ISA-dispatched copy).
template <typename T, typename Row>
void set_grad_reduction(const ScaledSets<T>& A, T* g, int n_threads, Row row) {
    const std::size_t N = A.n_sets, m = A.m, d = A.d;
    std::vector<T> total(d + 1, T(0));
#ifdef _OPENMP
    const int threads = static_cast<int>(
        std::min<std::size_t>(static_cast<std::size_t>(resolve_threads(n_threads)), std::max<std::size_t>(N, 1)));
#pragma omp parallel num_threads(threads)
#else
    (void)n_threads;
#endif
    {
        SetWorkspace<T> ws(kSetChunk + m, d);
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 1)
#endif
        for (std::ptrdiff_t a = 0; a < static_cast<std::ptrdiff_t>(N); ++a) row(ws, static_cast<std::size_t>(a));
#ifdef _OPENMP
#pragma omp critical(fastfm_set_reduction)
#endif
        for (std::size_t k = 0; k <= d; ++k) total[k] += ws.partial[k];
    }
    const T scale = T(-2) / (T(m) * T(m));
    for (std::size_t k = 0; k < d; ++k) g[k] = scale * total[k];
    g[d] = total[d] / (T(m) * T(m));
}

// K = set_gram(A, A) (N, N) and dK (N, N, d), dK[a, b, k] = ∂K_ab/∂log ℓ_k, row-major; pairs b ≥ a computed
// once and mirrored.  row(ws, a, K_row, dK_row) is set_gram_gradient_row (or an ISA-dispatched copy).
template <typename T, typename Row>
void set_gram_gradient(const ScaledSets<T>& A, T* K, T* dK, int n_threads, Row row) {
    const std::size_t N = A.n_sets, d = A.d;
    for_each_row_tile(
        N, 1, n_threads, [&] { return SetWorkspace<T>(kSetChunk + A.m, d); },
        [&](SetWorkspace<T>& ws, std::size_t a0, std::size_t a1, std::size_t) {
            for (std::size_t a = a0; a < a1; ++a) {
                row(ws, a, K + a * N, dK + a * N * d);
                for (std::size_t b = a + 1; b < N; ++b) {
                    K[b * N + a] = K[a * N + b];
                    for (std::size_t k = 0; k < d; ++k) dK[(b * N + a) * d + k] = dK[(a * N + b) * d + k];
                }
            }
        });
}

// K (NA, NB) and dK (NA, NB, m, d), row-major, dK[a, b, i, k] = ∂K_ab/∂A_aik (A in its own,
// unscaled coordinates).  row(ws, a, K_row, dK_row) is set_cross_gradient_row (or an ISA-dispatched copy).
template <typename T, typename Row>
void set_cross_gradient(const ScaledSets<T>& A, const ScaledSets<T>& B, T* K, T* dK, int n_threads, Row row) {
    const std::size_t NB = B.n_sets, row_size = B.n_sets * A.m * A.d;
    for_each_row_tile(
        A.n_sets, 1, n_threads, [&] { return SetWorkspace<T>(kSetChunk + B.m, B.d); },
        [&](SetWorkspace<T>& ws, std::size_t a0, std::size_t a1, std::size_t) {
            for (std::size_t a = a0; a < a1; ++a) row(ws, a, K + a * NB, dK + a * row_size);
        });
}

// The diagonal diag (N,) and, when d_loglength is not null, its derivatives d_loglength (N, d) and
// d_points (N, m, d) (set_diag_row).  Rows are O(m² d) each: tiles of kSetDiagTile sets.
// row(ws, a, diag_a, d_loglength_a, d_points_a) is set_diag_row (or an ISA-dispatched copy).
constexpr std::size_t kSetDiagTile = 16;

template <typename T, typename Row>
void set_diag(const ScaledSets<T>& A, T* diag, T* d_loglength, T* d_points, int n_threads, Row row) {
    const std::size_t m = A.m, d = A.d;
    for_each_row_tile(
        A.n_sets, kSetDiagTile, n_threads, [&] { return SetWorkspace<T>(m, d); },
        [&](SetWorkspace<T>& ws, std::size_t a0, std::size_t a1, std::size_t) {
            for (std::size_t a = a0; a < a1; ++a)
                row(ws, a, diag + a, d_loglength ? d_loglength + a * d : nullptr,
                    d_points ? d_points + a * m * d : nullptr);
        });
}

}  // namespace fastfm

// The exact GP likelihood's gradient weights from its Cholesky factor: W = ½(ααᵀ − K⁻¹), the matrix that
// GPML Eq. 5.9 contracts with ∂K/∂θ_j (fastfm/gp/mll.py).
//
// Why not LAPACK: dpotri (dtrtri + dlauum) runs its unblocked level-2 code on the matrices of a BO fit
// (N ≈ 20–500), ~5 GFlop/s on one core: at N = 100 it was 85–130 µs of a 400–650 µs likelihood evaluation,
// and mirroring its triangle and adding ½ααᵀ another ~10–20 µs.  The same two steps (V = U⁻¹, then
// K⁻¹ = V Vᵀ, 2N³/3 flops) in register tiles, with ½ααᵀ and the mirror written as each tile is stored,
// take ~40 µs there (docs/benchmarks/suggestion.md, "The likelihood's gradient weights in one pass").
//
// Pure C++17: nothing here knows about Python.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <vector>

#include "fastfm/common.hpp"

namespace fastfm {

namespace linalg_detail {

// Four lanes of T as one GCC vector (an AVX2 register of doubles; two SSE2 registers in the baseline
// clone).  Loads and stores go through memcpy: rows start anywhere, and the compiler emits plain
// unaligned vector moves for them.
#if defined(__GNUC__)
template <typename T>
struct Lanes4 {
    typedef T type __attribute__((vector_size(4 * sizeof(T))));
};
#endif

}  // namespace linalg_detail

#if defined(__GNUC__)
// W := ½(ααᵀ − K⁻¹) for K = Uᵀ U, U upper triangular (row-major, leading dimension n; its strict lower
// triangle is never read), written whole (both triangles) into w (n × n, row-major; w may be u's own
// buffer: U is last read before W's first write).  Returns false, leaving w untouched, when a
// diagonal entry of U is zero or not finite.
//
// U is the C-ordered view of the lower Cholesky factor L that LAPACK's dpotrf leaves in a
// Fortran-ordered buffer (U = Lᵀ), so K⁻¹ = U⁻¹ U⁻ᵀ = V Vᵀ with V = U⁻¹ upper triangular:
//  1. V row by row from the bottom, in blocks of four rows: a block's products with the rows below it,
//     Σ_{k ≥ i1} U[i, k] V[k, j], in 4 × 8 register tiles, then the block's own four rows by
//     back substitution, V[i, j] = −(1/U_ii) Σ_{k > i} U[i, k] V[k, j], V[i, i] = 1/U_ii;
//  2. K⁻¹[a, b] = Σ_{k ≥ max(a, b)} V[a, k] V[b, k] in 4 × 2 register tiles of row dot products, each
//     stored with ½α_a α_b into W[a, b] and W[b, a].
// V lives in a zeroed scratch of n rows of ld = n rounded up to 8: the zeros below its diagonal and
// past its end let every tile run over whole vectors.
template <typename T>
bool likelihood_weights(const T* u, std::size_t n, const T* FASTFM_RESTRICT alpha, T* w) {
    typedef typename linalg_detail::Lanes4<T>::type vec;
    constexpr std::size_t kLanes = 4, kRows = 4, kTileCols = 2 * kLanes;
    for (std::size_t i = 0; i < n; ++i)
        if (!(std::isfinite(u[i * n + i]) && u[i * n + i] != T(0))) return false;
    const auto load = [](const T* p) { vec x; std::memcpy(&x, p, sizeof x); return x; };
    const auto store = [](T* p, vec x) { std::memcpy(p, &x, sizeof x); };
    const auto splat = [](T a) { return vec{a, a, a, a}; };

    const std::size_t ld = (n + kTileCols - 1) / kTileCols * kTileCols;
    std::vector<T> scratch(ld * n + ld, T(0));
    T* FASTFM_RESTRICT v = scratch.data();
    const T* zero_row = v + ld * n;    // ld zeros: the rows past the last of a partial block

    // 1. V = U⁻¹
    for (std::size_t block = (n + kRows - 1) / kRows; block-- > 0;) {
        const std::size_t i0 = block * kRows, i1 = std::min(n, i0 + kRows), rows = i1 - i0;
        const T* u_row[kRows];
        for (std::size_t r = 0; r < kRows; ++r) u_row[r] = r < rows ? u + (i0 + r) * n : zero_row;
        for (std::size_t j0 = i1 / kTileCols * kTileCols; i1 < n && j0 < ld; j0 += kTileCols) {
            vec acc[kRows][2] = {};
            const std::size_t k_end = std::min(n, j0 + kTileCols);   // V[k, j] = 0 for k > j
            for (std::size_t k = i1; k < k_end; ++k) {
                const vec x0 = load(v + k * ld + j0), x1 = load(v + k * ld + j0 + kLanes);
                for (std::size_t r = 0; r < kRows; ++r) {
                    const vec b = splat(u_row[r][k]);
                    acc[r][0] += b * x0;
                    acc[r][1] += b * x1;
                }
            }
            for (std::size_t r = 0; r < rows; ++r) {
                T tile[kTileCols];
                store(tile, acc[r][0]);
                store(tile + kLanes, acc[r][1]);
                for (std::size_t l = (j0 < i1 ? i1 - j0 : 0); l < kTileCols; ++l) v[(i0 + r) * ld + j0 + l] = tile[l];
            }
        }
        for (std::size_t i = i1; i-- > i0;) {
            T* FASTFM_RESTRICT v_i = v + i * ld;
            const T* u_i = u + i * n;
            for (std::size_t k = i + 1; k < i1; ++k) {
                const T u_ik = u_i[k];
                const T* v_k = v + k * ld;
                for (std::size_t j = k; j < n; ++j) v_i[j] += u_ik * v_k[j];
            }
            const T inverse_diagonal = T(1) / u_i[i];
            for (std::size_t j = i + 1; j < n; ++j) v_i[j] *= -inverse_diagonal;
            v_i[i] = inverse_diagonal;
        }
    }

    // 2. W = ½(ααᵀ − V Vᵀ), upper tiles (b ≥ a) stored to both triangles
    for (std::size_t a0 = 0; a0 < n; a0 += kRows) {
        const T* v_a[kRows];
        for (std::size_t r = 0; r < kRows; ++r) v_a[r] = a0 + r < n ? v + (a0 + r) * ld : zero_row;
        for (std::size_t b0 = a0; b0 < n; b0 += 2) {
            const T* v_b0 = v + b0 * ld;
            const T* v_b1 = b0 + 1 < n ? v + (b0 + 1) * ld : zero_row;
            vec acc[kRows][2] = {};
            for (std::size_t k = b0 / kLanes * kLanes; k < ld; k += kLanes) {   // V[b, k] = 0 for k < b
                const vec y0 = load(v_b0 + k), y1 = load(v_b1 + k);
                for (std::size_t r = 0; r < kRows; ++r) {
                    const vec x = load(v_a[r] + k);
                    acc[r][0] += x * y0;
                    acc[r][1] += x * y1;
                }
            }
            for (std::size_t r = 0; r < kRows && a0 + r < n; ++r)
                for (std::size_t c = 0; c < 2 && b0 + c < n; ++c) {
                    const std::size_t a = a0 + r, b = b0 + c;
                    if (b < a) continue;
                    const vec s = acc[r][c];
                    const T value = T(0.5) * (alpha[a] * alpha[b] - ((s[0] + s[2]) + (s[1] + s[3])));
                    w[a * n + b] = value;
                    w[b * n + a] = value;
                }
        }
    }
    return true;
}
#endif

}  // namespace fastfm

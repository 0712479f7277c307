// The conditional-space ("hierarchical") kernel of SPEC §3 (Hutter & Osborne 2013):
//
//     K_ab = σ² g(r²_ab),  r²_ab = Σ_i d_i(a, b)² / ℓ²,
//     d_i² = 0 (both inactive) | ω_i² (one active)
//          | ω_i² ((sin α − sin α')² + (cos α − cos α')²), α = πρ_i x̂ (both active, real)
//          | 2 ω_i² [v ≠ v'] (both active, categorical),
//
// with g the RBF or Matérn 5/2 profile.  The sines and cosines are computed
// once per point (the embedding of paper Eq. 7), so a pair costs no
// trigonometry; the squared embedding distance also avoids the cancellation
// of 2 − 2cos(α − α') at small differences.  A row is processed against
// chunks of kColumnChunk columns, one dimension at a time (vectorisable).
//
// Pure C++17 templates over the scalar type; no Python (csrc/py/hier.cpp binds them).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fastfm/common.hpp"

namespace fastfm {

enum HierProfile : int { kHierRBF = 0, kHierMatern52 = 1 };

// g(r²) and dg/d(r²) of the Euclidean kernel on the embeddings.
template <typename T>
inline void hier_profile(int profile, T sq, T& g, T& dg) {
    if (profile == kHierRBF) {
        g = std::exp(T(-0.5) * sq);
        dg = T(-0.5) * g;
    } else {
        const T root5 = std::sqrt(T(5));
        const T d = std::sqrt(sq);
        const T e = std::exp(-root5 * d);
        g = (T(1) + root5 * d + T(5) / T(3) * sq) * e;
        dg = -(T(5) / T(6)) * (T(1) + root5 * d) * e;  // dg/d(d²)
    }
}

// Per-point embedding data in column (dimension-major) layout: entry (i, a) at
// i * n_points + a, so that the inner loops run over contiguous points and
// vectorise.  For a real dimension the stored sine and cosine ARE the
// embedding (zero when inactive), which makes every case of d_i² one
// branch-free expression:
//   real:        d_i² = ω_i² ((s − s')² + (c − c')²)
//   categorical: d_i² = ω_i² (m + m' − 2 m m' [v = v'])   (m = activity 0/1)
template <typename T>
struct HierPoints {
    std::size_t n_points = 0;
    std::size_t n_dims = 0;
    std::vector<T> active;  // 0 or 1
    std::vector<T> angle;   // α = πρ x̂ (real dims) or the state index (categorical dims)
    std::vector<T> sine;    // sin α, 0 when inactive (real dims)
    std::vector<T> cosine;  // cos α, 0 when inactive (real dims)

    // V, M: row-major (n_points, n_dims); rho_pi: (n_dims,)
    static HierPoints build(const T* V, const uint8_t* M, std::size_t n_points, std::size_t n_dims,
                            const uint8_t* is_real, const T* rho_pi) {
        HierPoints pts;
        pts.n_points = n_points;
        pts.n_dims = n_dims;
        const std::size_t size = n_points * n_dims;
        pts.active.assign(size, T(0));
        pts.angle.assign(size, T(0));
        pts.sine.assign(size, T(0));
        pts.cosine.assign(size, T(0));
        for (std::size_t a = 0; a < n_points; ++a)
            for (std::size_t i = 0; i < n_dims; ++i) {
                const std::size_t k = i * n_points + a, row = a * n_dims + i;
                pts.active[k] = M[row] ? T(1) : T(0);
                if (is_real[i]) {
                    pts.angle[k] = rho_pi[i] * V[row];
                    if (M[row]) {
                        pts.sine[k] = std::sin(pts.angle[k]);
                        pts.cosine[k] = std::cos(pts.angle[k]);
                    }
                } else {
                    pts.angle[k] = V[row];
                }
            }
        return pts;
    }
    const T* column(const std::vector<T>& values, std::size_t i) const { return values.data() + i * n_points; }
};

template <typename T>
struct HierProblem {
    const HierPoints<T>* p1 = nullptr;
    const HierPoints<T>* p2 = nullptr;  // == p1 for the symmetric Gram
    const uint8_t* is_real = nullptr;
    std::vector<T> omega2;              // ω_i²
    T inv_lengthscale2 = T(1);
    T variance = T(1);
    int profile = kHierMatern52;
};

// d_i²(a, b + k) / ω_i² for k < m into `out` (b is a column of p2).
template <typename T>
inline void hier_dimension_terms(const HierProblem<T>& pb, std::size_t i, std::size_t a, std::size_t b,
                                 std::size_t m, T* FASTFM_RESTRICT out) {
    const HierPoints<T>& p1 = *pb.p1;
    const HierPoints<T>& p2 = *pb.p2;
    if (pb.is_real[i]) {
        const T sa = p1.column(p1.sine, i)[a], ca = p1.column(p1.cosine, i)[a];
        const T* FASTFM_RESTRICT s2 = p2.column(p2.sine, i) + b;
        const T* FASTFM_RESTRICT c2 = p2.column(p2.cosine, i) + b;
        for (std::size_t k = 0; k < m; ++k) {
            const T ds = sa - s2[k], dc = ca - c2[k];
            out[k] = ds * ds + dc * dc;
        }
    } else {
        const T ma = p1.column(p1.active, i)[a], va = p1.column(p1.angle, i)[a];
        const T* FASTFM_RESTRICT m2 = p2.column(p2.active, i) + b;
        const T* FASTFM_RESTRICT v2 = p2.column(p2.angle, i) + b;
        for (std::size_t k = 0; k < m; ++k) out[k] = ma + m2[k] - T(2) * ma * m2[k] * (va == v2[k] ? T(1) : T(0));
    }
}

// S_k = Σ_i d_i²(a, b + k) for k < m into `sq` (uses `terms` as scratch).
template <typename T>
inline void hier_squared_distances(const HierProblem<T>& pb, std::size_t a, std::size_t b, std::size_t m,
                                   T* FASTFM_RESTRICT sq, T* FASTFM_RESTRICT terms) {
    for (std::size_t k = 0; k < m; ++k) sq[k] = T(0);
    for (std::size_t i = 0; i < pb.p1->n_dims; ++i) {
        hier_dimension_terms(pb, i, a, b, m, terms);
        const T w2 = pb.omega2[i];
        for (std::size_t k = 0; k < m; ++k) sq[k] += w2 * terms[k];
    }
}

template <typename T>
struct HierWorkspace {
    std::vector<T> sq, terms, weight;
    HierWorkspace() : sq(kColumnChunk), terms(kColumnChunk), weight(kColumnChunk) {}
};

// K (n1 × n2, row-major); symmetric when pb.p2 == pb.p1 (each pair computed once, mirrored).
template <typename T>
void hier_gram(const HierProblem<T>& pb, T* K, int n_threads) {
    const std::size_t n1 = pb.p1->n_points, n2 = pb.p2->n_points;
    const bool symmetric = pb.p1 == pb.p2;
    for_each_row_tile(
        n1, kTileRows, n_threads, [] { return HierWorkspace<T>(); },
        [&](HierWorkspace<T>& ws, std::size_t a0, std::size_t a1, std::size_t) {
            for (std::size_t a = a0; a < a1; ++a)
                for (std::size_t b0 = symmetric ? a : 0; b0 < n2; b0 += kColumnChunk) {
                    const std::size_t m = std::min(kColumnChunk, n2 - b0);
                    hier_squared_distances(pb, a, b0, m, ws.sq.data(), ws.terms.data());
                    for (std::size_t k = 0; k < m; ++k) {
                        T g, dg;
                        hier_profile(pb.profile, ws.sq[k] * pb.inv_lengthscale2, g, dg);
                        K[a * n2 + b0 + k] = pb.variance * g;
                        if (symmetric) K[(b0 + k) * n2 + a] = pb.variance * g;
                    }
                }
        });
}

// Σ_ab W_ab ∂K_ab/∂(...) in the form of numpy_backend.hier_grad_reduction:
// t_i = Σ_ab Ω_ab d_i², u_i = Σ_ab Ω_ab ∂d_i²/∂log ρ_i, g_var = Σ_ab W_ab K_ab,
// Ω_ab = W_ab σ² g'(r²)/ℓ².  Symmetric pairs are visited once with weight
// W_ab + W_ba.  Each row tile accumulates into its own slot and the slots are
// summed in tile order, so the result does not depend on the thread count.
template <typename T>
void hier_grad_reduction(const HierProblem<T>& pb, const T* W, T* t, T* u, T* g_variance, int n_threads) {
    const HierPoints<T>& pts = *pb.p1;
    const std::size_t N = pts.n_points, n = pts.n_dims;
    const std::size_t n_tiles = (N + kTileRows - 1) / kTileRows;
    const std::size_t slot = 2 * n + 1;
    std::vector<T> partial(n_tiles * slot, T(0));
    for_each_row_tile(
        N, kTileRows, n_threads, [] { return HierWorkspace<T>(); },
        [&](HierWorkspace<T>& ws, std::size_t a0, std::size_t a1, std::size_t tile) {
            T* acc_t = partial.data() + tile * slot;
            T* acc_u = acc_t + n;
            T& acc_var = acc_t[2 * n];
            for (std::size_t a = a0; a < a1; ++a) {
                acc_var += W[a * N + a] * pb.variance;  // r² = 0: g = 1
                for (std::size_t b0 = a + 1; b0 < N; b0 += kColumnChunk) {
                    const std::size_t m = std::min(kColumnChunk, N - b0);
                    hier_squared_distances(pb, a, b0, m, ws.sq.data(), ws.terms.data());
                    for (std::size_t k = 0; k < m; ++k) {
                        const std::size_t b = b0 + k;
                        const T w = W[a * N + b] + W[b * N + a];
                        T g, dg;
                        hier_profile(pb.profile, ws.sq[k] * pb.inv_lengthscale2, g, dg);
                        acc_var += w * pb.variance * g;
                        ws.weight[k] = w * pb.variance * dg * pb.inv_lengthscale2;  // Ω_ab
                    }
                    for (std::size_t i = 0; i < n; ++i) {
                        hier_dimension_terms(pb, i, a, b0, m, ws.terms.data());
                        T sum_t = T(0);
                        for (std::size_t k = 0; k < m; ++k) sum_t += ws.weight[k] * ws.terms[k];
                        acc_t[i] += pb.omega2[i] * sum_t;
                        if (!pb.is_real[i]) continue;
                        // ∂/∂log ρ of ω²(2 − 2cos(α − α')) = 2ω² sin(α − α')(α − α'); the sines and
                        // cosines are 0 when inactive, so the product vanishes unless both are active
                        const T sa = pts.column(pts.sine, i)[a], ca = pts.column(pts.cosine, i)[a];
                        const T aa = pts.column(pts.angle, i)[a];
                        const T* FASTFM_RESTRICT s2 = pts.column(pts.sine, i) + b0;
                        const T* FASTFM_RESTRICT c2 = pts.column(pts.cosine, i) + b0;
                        const T* FASTFM_RESTRICT a2 = pts.column(pts.angle, i) + b0;
                        T sum_u = T(0);
                        for (std::size_t k = 0; k < m; ++k)
                            sum_u += ws.weight[k] * (sa * c2[k] - ca * s2[k]) * (aa - a2[k]);
                        acc_u[i] += T(2) * pb.omega2[i] * sum_u;
                    }
                }
            }
        });
    for (std::size_t i = 0; i < n; ++i) t[i] = u[i] = T(0);
    *g_variance = T(0);
    for (std::size_t k = 0; k < n_tiles; ++k) {
        const T* p = partial.data() + k * slot;
        for (std::size_t i = 0; i < n; ++i) {
            t[i] += p[i];
            u[i] += p[n + i];
        }
        *g_variance += p[2 * n];
    }
}

}  // namespace fastfm

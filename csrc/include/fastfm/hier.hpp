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
// of 2 − 2cos(α − α') at small differences.
//
// Pure C++17 templates over the scalar type; no Python (bindings.cpp binds them).
#pragma once

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

// Per-point embedding data, row-major (point, dimension): the inner loop of a
// pair runs over the dimensions of two rows.
template <typename T>
struct HierPoints {
    std::size_t n_points = 0;
    std::size_t n_dims = 0;
    std::vector<uint8_t> active;
    std::vector<T> angle;   // α = πρ x̂ (real dims) or the state index (categorical dims)
    std::vector<T> sine;
    std::vector<T> cosine;

    // V, M: row-major (n_points, n_dims); rho_pi: (n_dims,)
    static HierPoints build(const T* V, const uint8_t* M, std::size_t n_points, std::size_t n_dims,
                            const uint8_t* is_real, const T* rho_pi) {
        HierPoints pts;
        pts.n_points = n_points;
        pts.n_dims = n_dims;
        pts.active.assign(M, M + n_points * n_dims);
        pts.angle.resize(n_points * n_dims);
        pts.sine.assign(n_points * n_dims, T(0));
        pts.cosine.assign(n_points * n_dims, T(0));
        for (std::size_t a = 0; a < n_points; ++a)
            for (std::size_t i = 0; i < n_dims; ++i) {
                const std::size_t k = a * n_dims + i;
                if (is_real[i]) {
                    pts.angle[k] = rho_pi[i] * V[k];
                    pts.sine[k] = std::sin(pts.angle[k]);
                    pts.cosine[k] = std::cos(pts.angle[k]);
                } else {
                    pts.angle[k] = V[k];
                }
            }
        return pts;
    }
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

// d_i² for every dimension of the pair (a in p1, b in p2) into `terms`; returns Σ_i d_i².
template <typename T>
inline T hier_pair_terms(const HierProblem<T>& pb, std::size_t a, std::size_t b, T* FASTFM_RESTRICT terms) {
    const std::size_t n = pb.p1->n_dims;
    const uint8_t* act1 = pb.p1->active.data() + a * n;
    const uint8_t* act2 = pb.p2->active.data() + b * n;
    const T* ang1 = pb.p1->angle.data() + a * n;
    const T* ang2 = pb.p2->angle.data() + b * n;
    const T* s1 = pb.p1->sine.data() + a * n;
    const T* s2 = pb.p2->sine.data() + b * n;
    const T* c1 = pb.p1->cosine.data() + a * n;
    const T* c2 = pb.p2->cosine.data() + b * n;
    T total = T(0);
    for (std::size_t i = 0; i < n; ++i) {
        T d2;
        if (act1[i] && act2[i]) {
            if (pb.is_real[i]) {
                const T ds = s1[i] - s2[i];
                const T dc = c1[i] - c2[i];
                d2 = pb.omega2[i] * (ds * ds + dc * dc);
            } else {
                d2 = ang1[i] != ang2[i] ? T(2) * pb.omega2[i] : T(0);
            }
        } else {
            d2 = act1[i] != act2[i] ? pb.omega2[i] : T(0);
        }
        terms[i] = d2;
        total += d2;
    }
    return total;
}

// K (n1 × n2, row-major); symmetric when pb.p2 == pb.p1 (each pair computed once, mirrored).
template <typename T>
void hier_gram(const HierProblem<T>& pb, T* K, int n_threads) {
    const std::size_t n1 = pb.p1->n_points, n2 = pb.p2->n_points, n = pb.p1->n_dims;
    const bool symmetric = pb.p1 == pb.p2;
    for_each_row_tile(
        n1, kTileRows, n_threads, [&] { return std::vector<T>(n); },
        [&](std::vector<T>& terms, std::size_t a0, std::size_t a1, std::size_t) {
            for (std::size_t a = a0; a < a1; ++a)
                for (std::size_t b = symmetric ? a : 0; b < n2; ++b) {
                    T g, dg;
                    hier_profile(pb.profile, hier_pair_terms(pb, a, b, terms.data()) * pb.inv_lengthscale2, g, dg);
                    K[a * n2 + b] = pb.variance * g;
                    if (symmetric) K[b * n2 + a] = pb.variance * g;
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
    const std::size_t N = pb.p1->n_points, n = pb.p1->n_dims;
    const std::size_t n_tiles = (N + kTileRows - 1) / kTileRows;
    const std::size_t slot = 2 * n + 1;
    std::vector<T> partial(n_tiles * slot, T(0));
    for_each_row_tile(
        N, kTileRows, n_threads, [&] { return std::vector<T>(n); },
        [&](std::vector<T>& terms, std::size_t a0, std::size_t a1, std::size_t tile) {
            T* acc_t = partial.data() + tile * slot;
            T* acc_u = acc_t + n;
            T& acc_var = acc_t[2 * n];
            const T* ang = pb.p1->angle.data();
            const T* sn = pb.p1->sine.data();
            const T* cs = pb.p1->cosine.data();
            const uint8_t* act = pb.p1->active.data();
            for (std::size_t a = a0; a < a1; ++a) {
                acc_var += W[a * N + a] * pb.variance;  // r² = 0: g = 1
                for (std::size_t b = a + 1; b < N; ++b) {
                    const T w = W[a * N + b] + W[b * N + a];
                    T g, dg;
                    hier_profile(pb.profile, hier_pair_terms(pb, a, b, terms.data()) * pb.inv_lengthscale2, g, dg);
                    acc_var += w * pb.variance * g;
                    const T omega = w * pb.variance * dg * pb.inv_lengthscale2;
                    for (std::size_t i = 0; i < n; ++i) {
                        acc_t[i] += omega * terms[i];
                        const std::size_t ka = a * n + i, kb = b * n + i;
                        if (pb.is_real[i] && act[ka] && act[kb]) {
                            // ∂/∂log ρ of ω²(2 − 2cos(α − α')) = 2ω² sin(α − α')(α − α')
                            const T sin_diff = sn[ka] * cs[kb] - cs[ka] * sn[kb];
                            acc_u[i] += omega * T(2) * pb.omega2[i] * sin_diff * (ang[ka] - ang[kb]);
                        }
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

// Matrix-free products with the FM Gram matrix, for large-N GP regression.
//
//   out = K(X1, X2) V,   V of shape (M, r) (a block of r vectors)
//
// K is never stored: each thread computes one chunk of a kernel row at a time
// (kColumnChunk columns, fm.hpp's kernel_row_chunk, as in gram_tile) and folds it
// into the product at once, so memory is O(N r + threads × chunk), not O(N M).
// The symmetric case (X2 = X1) evaluates each pair a ≤ b once and scatters it
// into both out[a] and out[b]; every thread then accumulates into its own
// (r, N) buffer, and the buffers are added in thread order at the end.
//
// Pure C++17 templates over the scalar type T; no Python.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "fastfm/common.hpp"
#include "fastfm/fm.hpp"

namespace fastfm {

// Rows per parallel task of a matvec: a tile re-reads the transposed V once per
// column chunk, so longer tiles amortise nothing; short tiles balance the triangle.
constexpr std::size_t kMatvecTileRows = 32;

// Inputs of one K·V product.  V and the output are stored transposed,
// (r, M) and (r, n_rows) row-major, so that the inner loops over columns of K
// are contiguous dot products / axpys that vectorise.
template <typename T>
struct MatvecProblem {
    GramProblem<T> gram;            // plan, rows, columns, symmetric; gram.K unused
    const T* Vt = nullptr;          // (rank, n_cols)
    std::size_t rank = 0;
};

// Per-thread scratch: the Gram workspace, one kernel row chunk and the
// thread's (rank, n_rows) accumulator.
template <typename T>
struct MatvecWorkspace {
    Workspace<T> gram;
    std::vector<T> row;  // kColumnChunk kernel values
    std::vector<T> acc;  // (rank, n_rows)
    MatvecWorkspace(const FMPlan<T>& plan, std::size_t rank, std::size_t n_rows)
        : gram(plan.n_variables(), plan.max_states), row(Workspace<T>::B), acc(rank * n_rows, T(0)) {}
};

// Σ_j k[j] v[j] in four independent vector accumulators: one accumulator makes the loop wait on the
// FMA latency (perf: 6 % of the single-precision K·V on AVX2).
template <typename T>
inline T chunk_dot(const T* FASTFM_RESTRICT k, const T* FASTFM_RESTRICT v, std::size_t count) {
    std::size_t j = 0;
    T dot = 0;
#if defined(__GNUC__) && !defined(__clang__)
    constexpr int L = kNarrowLanes<T>, A = 4;
    typedef typename LaneVector<T, L>::type lanes;
    lanes sums[A] = {};
    for (; j + A * L <= count; j += A * L)
#pragma GCC unroll 4
        for (int q = 0; q < A; ++q) {
            lanes a, b;
            std::memcpy(&a, k + j + q * L, sizeof a);
            std::memcpy(&b, v + j + q * L, sizeof b);
            sums[q] += a * b;
        }
    const lanes total = (sums[0] + sums[1]) + (sums[2] + sums[3]);
    for (int l = 0; l < L; ++l) dot += total[l];
#endif
    for (; j < count; ++j) dot += k[j] * v[j];
    return dot;
}

// Folds one chunk of kernel row a, k[j] = K[a, js + j], into ws.acc: out[a] += k·V[js:], and, if
// symmetric, out[js + j] += k[j] V[a] for the mirrored pairs (j > a).
template <typename T>
inline void accumulate_row_chunk(const MatvecProblem<T>& pb, MatvecWorkspace<T>& ws, std::size_t a, std::size_t js,
                                 std::size_t count, const T* FASTFM_RESTRICT k) {
    const std::size_t M = pb.gram.cols->n_points, N = pb.gram.n_rows;
    for (std::size_t c = 0; c < pb.rank; ++c) {
        const T* FASTFM_RESTRICT v = pb.Vt + c * M + js;
        const T dot = chunk_dot(k, v, count);
        T* FASTFM_RESTRICT acc = ws.acc.data() + c * N;
        acc[a] += dot;
        if (pb.gram.symmetric) {
            // K[j, a] = K[a, j] for j > a: out[j] += K[a, j] V[a]
            const T va = pb.Vt[c * M + a];
            const std::size_t skip = js == a ? 1 : 0;
#pragma omp simd
            for (std::size_t j = skip; j < count; ++j) acc[js + j] += k[j] * va;
        }
    }
}

// Rows [a0, a1) of K V into ws.acc (and, if symmetric, the mirrored pairs' columns).
template <typename T>
void matvec_tile(const MatvecProblem<T>& pb, MatvecWorkspace<T>& ws, std::size_t a0, std::size_t a1) {
    const GramProblem<T>& g = pb.gram;
    T* FASTFM_RESTRICT k = ws.row.data();
    for_each_row_chunk<T>(a0, a1, g.cols->n_points, g.symmetric,
                          [&](std::size_t a, std::size_t js, std::size_t count) {
                              kernel_row_chunk(g, ws.gram, a, js, count, k);
                              accumulate_row_chunk(pb, ws, a, js, count, k);
                          });
}

template <typename T>
struct DefaultMatvecTile {
    static void tile(const MatvecProblem<T>& pb, MatvecWorkspace<T>& ws, std::size_t a0, std::size_t a1) {
        matvec_tile(pb, ws, a0, a1);
    }
};

// out_t (rank, n_rows), row-major, overwritten with (K V)ᵀ.  Deterministic for a
// given thread count up to the order in which tiles land on threads (the
// per-thread partial sums are added in thread order; their split can differ
// between runs by the dynamic schedule, i.e. results agree to rounding).
// Problem and Workspace: MatvecProblem<T> and MatvecWorkspace<T>, or types derived from them that carry
// more inputs and scratch for their tile function (matvec_single.hpp).
template <typename T, typename Problem = MatvecProblem<T>, typename WorkspaceType = MatvecWorkspace<T>,
          typename TileFn = decltype(&DefaultMatvecTile<T>::tile)>
void run_matvec(const Problem& pb, T* out_t, int n_threads, TileFn tile = &DefaultMatvecTile<T>::tile) {
    const FMPlan<T>& plan = *pb.gram.plan;
    const std::size_t N = pb.gram.n_rows, r = pb.rank;
    std::fill(out_t, out_t + N * r, T(0));
    const std::size_t n_tiles = (N + kMatvecTileRows - 1) / kMatvecTileRows;
    if (n_tiles == 0 || r == 0) return;
#ifdef _OPENMP
    const int threads =
        static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(resolve_threads(n_threads)), n_tiles));
    std::vector<std::vector<T>> partials(static_cast<std::size_t>(threads));
#pragma omp parallel num_threads(threads)
    {
        WorkspaceType ws(plan, r, N);
#pragma omp for schedule(dynamic, 1)
        for (std::ptrdiff_t t = 0; t < static_cast<std::ptrdiff_t>(n_tiles); ++t) {
            const std::size_t begin = static_cast<std::size_t>(t) * kMatvecTileRows;
            tile(pb, ws, begin, std::min(N, begin + kMatvecTileRows));
        }
        partials[static_cast<std::size_t>(omp_get_thread_num())] = std::move(ws.acc);
    }
    for (const auto& part : partials)
        if (!part.empty())
            for (std::size_t i = 0; i < N * r; ++i) out_t[i] += part[i];
#else
    (void)n_threads;
    WorkspaceType ws(plan, r, N);
    for (std::size_t t = 0; t < n_tiles; ++t) {
        const std::size_t begin = t * kMatvecTileRows;
        tile(pb, ws, begin, std::min(N, begin + kMatvecTileRows));
    }
    std::copy(ws.acc.begin(), ws.acc.end(), out_t);
#endif
}

}  // namespace fastfm

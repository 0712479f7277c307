// Shared plumbing of the fastfm C++ core: threads, tiling constants, the
// transposed point layout and the parallel row-tile driver.
//
// Pure C++17: nothing here knows about Python (csrc/module.cpp and csrc/py/ are
// the only files that include pybind11).  OpenMP is optional; without it every driver
// runs serially and produces the same numbers.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#if defined(__GNUC__) || defined(__clang__)
#define FASTFM_RESTRICT __restrict__
#else
#define FASTFM_RESTRICT
#endif

namespace fastfm {

// Columns are processed in chunks of this many points: every per-chunk work
// array (distances, factors, continuants) then stays in L1/L2, and the inner
// loops are long enough to vectorise well (64 and 256 measured no faster).
// The FASTFM_* macros below only exist to re-measure these choices.
#ifndef FASTFM_COLUMN_CHUNK
#define FASTFM_COLUMN_CHUNK 128
#endif
constexpr std::size_t kColumnChunk = FASTFM_COLUMN_CHUNK;

// Rows per parallel task.  In the symmetric case a tile of rows is also the
// unit whose mirrored (lower-triangle) writes K[j, a0:a1] are contiguous.
#ifndef FASTFM_TILE_ROWS
#define FASTFM_TILE_ROWS 16
#endif
constexpr std::size_t kTileRows = FASTFM_TILE_ROWS;

// Rows per task of the symmetric gradient reduction.  Each task reads the
// block W[j, a0:a1] for every later j; wider tiles make those segments longer
// (whole cache lines) at the cost of a bigger per-thread Wᵀ buffer
// (kReductionTileRows × kColumnChunk doubles, in L2).  16 and 64 measured the
// same on Zen 4, where reading W (once, 8N² bytes) is bandwidth-bound.
#ifndef FASTFM_REDUCTION_TILE_ROWS
#define FASTFM_REDUCTION_TILE_ROWS 64
#endif
constexpr std::size_t kReductionTileRows = FASTFM_REDUCTION_TILE_ROWS;

inline bool openmp_enabled() {
#ifdef _OPENMP
    return true;
#else
    return false;
#endif
}

inline int max_threads() {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

inline void set_max_threads(int n) {
#ifdef _OPENMP
    if (n > 0) omp_set_num_threads(n);
#else
    (void)n;
#endif
}

// 0 (or less) means "OpenMP's current default" (all cores or OMP_NUM_THREADS).
inline int resolve_threads(int requested) { return requested > 0 ? requested : max_threads(); }

// Points in structure-of-arrays form, so that the inner loops over columns
// read contiguous memory: continuous[d * n_points + i], states[p * n_points + i].
template <typename T>
struct PointColumns {
    std::size_t n_points = 0;
    std::size_t n_continuous = 0;
    std::size_t n_variables = 0;
    std::vector<T> continuous;
    std::vector<int32_t> states;
    // The same states as 64-bit integers: vector lanes of the width of a double then index a table
    // (one permute) or compare with a row's state without a widening shuffle per use (fm.hpp's
    // rational_factor_blocks).
    std::vector<int64_t> wide_states;

    const T* coordinate(std::size_t d) const { return continuous.data() + d * n_points; }
    const int32_t* variable_states(std::size_t p) const { return states.data() + p * n_points; }
    const int64_t* variable_wide_states(std::size_t p) const { return wide_states.data() + p * n_points; }

    // C: row-major (n_points, n_continuous) or nullptr when only states are needed;
    // D: row-major (n_points, n_variables), already range-checked by the caller.
    static PointColumns from_rows(const T* C, const int64_t* D, std::size_t n_points, std::size_t n_continuous,
                                  std::size_t n_variables) {
        PointColumns cols;
        cols.n_points = n_points;
        cols.n_continuous = n_continuous;
        cols.n_variables = n_variables;
        cols.continuous.resize(n_points * n_continuous);
        cols.states.resize(n_points * n_variables);
        if (C != nullptr)
            for (std::size_t i = 0; i < n_points; ++i)
                for (std::size_t d = 0; d < n_continuous; ++d)
                    cols.continuous[d * n_points + i] = C[i * n_continuous + d];
        for (std::size_t i = 0; i < n_points; ++i)
            for (std::size_t p = 0; p < n_variables; ++p)
                cols.states[p * n_points + i] = static_cast<int32_t>(D[i * n_variables + p]);
        cols.wide_states.assign(cols.states.begin(), cols.states.end());
        return cols;
    }
};

// Runs tile(workspace, row_begin, row_end, tile_index) over row tiles in
// parallel.  make_workspace() is called once per thread, so per-thread scratch
// is allocated once per call, not per tile.  Dynamic scheduling balances the
// triangle of a symmetric Gram, whose tiles shrink with the row index.
template <typename MakeWorkspace, typename Tile>
void for_each_row_tile(std::size_t n_rows, std::size_t tile_rows, int n_threads, MakeWorkspace make_workspace,
                       Tile tile) {
    const std::size_t n_tiles = (n_rows + tile_rows - 1) / tile_rows;
    if (n_tiles == 0) return;
#ifdef _OPENMP
    const int threads = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(resolve_threads(n_threads)), n_tiles));
#pragma omp parallel num_threads(threads)
    {
        auto workspace = make_workspace();
#pragma omp for schedule(dynamic, 1)
        for (std::ptrdiff_t t = 0; t < static_cast<std::ptrdiff_t>(n_tiles); ++t) {
            const std::size_t begin = static_cast<std::size_t>(t) * tile_rows;
            tile(workspace, begin, std::min(n_rows, begin + tile_rows), static_cast<std::size_t>(t));
        }
    }
#else
    (void)n_threads;
    auto workspace = make_workspace();
    for (std::size_t t = 0; t < n_tiles; ++t) {
        const std::size_t begin = t * tile_rows;
        tile(workspace, begin, std::min(n_rows, begin + tile_rows), t);
    }
#endif
}

}  // namespace fastfm

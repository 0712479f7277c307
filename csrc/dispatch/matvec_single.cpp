// Hot entry points of the matrix-free K·V product with single-precision kernel values
// (matvec_single.hpp, fm_gram_matvec_single).
#include "dispatch/dispatch.hpp"

namespace fastfm_dispatch {

// Vector blocks of the single-precision tile: 16 lanes × 4 where sixteen floats are a register (AVX-512),
// else 8 lanes × FASTFM_SINGLE_NARROW_BLOCKS: on AVX2 four blocks (some spilled from its 16 registers)
// measured 9 % faster than two (K·v at N = 20,000: 0.49 against 0.54 s, 2026-11-24).
#ifndef FASTFM_SINGLE_NARROW_BLOCKS
#define FASTFM_SINGLE_NARROW_BLOCKS 4
#endif

namespace {

template <int Lanes, int Blocks>
inline void single_tile(const fastfm::SingleMatvecProblem<float>& pb, fastfm::SingleMatvecWorkspace<float>& ws,
                        std::size_t a0, std::size_t a1) {
#if defined(__GNUC__) && !defined(__clang__)
    fastfm::single_matvec_tile<float, Lanes, Blocks>(pb, ws, a0, a1);
#else
    fastfm::matvec_tile<double>(pb, ws, a0, a1);  // no vector types: the double path
#endif
}

}  // namespace

FASTFM_ENTRY_WIDE(void, single_matvec_tile_f32_wide,
                (const fastfm::SingleMatvecProblem<float>& pb, fastfm::SingleMatvecWorkspace<float>& ws,
                 std::size_t a0, std::size_t a1),
                (single_tile<16, 4>(pb, ws, a0, a1)))

FASTFM_ENTRY_NARROW(void, single_matvec_tile_f32_narrow,
                (const fastfm::SingleMatvecProblem<float>& pb, fastfm::SingleMatvecWorkspace<float>& ws,
                 std::size_t a0, std::size_t a1),
                (single_tile<8, FASTFM_SINGLE_NARROW_BLOCKS>(pb, ws, a0, a1)))

// Called once per row tile (run_matvec): the branch and the extra call are noise.
void single_matvec_tile_f32(const fastfm::SingleMatvecProblem<float>& pb, fastfm::SingleMatvecWorkspace<float>& ws,
                            std::size_t a0, std::size_t a1) {
    if (pb.gram.plan->wide_vectors)
        single_matvec_tile_f32_wide(pb, ws, a0, a1);
    else
        single_matvec_tile_f32_narrow(pb, ws, a0, a1);
}

}  // namespace fastfm_dispatch

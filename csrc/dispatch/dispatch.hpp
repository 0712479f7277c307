// The hot entry points of the C++ core, each compiled for several ISAs and picked at load time.
//
// Every function declared here is defined in one translation unit of csrc/dispatch/ that does not
// include pybind11; the binding code (csrc/py/*.cpp) reaches the template hot code only through
// them (a function pointer handed to a driver, or a direct call into the ifunc symbol).  Calling
// fastfm::gram_tile & co. from a binding TU instead would compile one more copy at the baseline
// ISA (SSE2), ~3× slower than the x86-64-v3 clone.  The declarations carry no target attributes:
// GCC exports a target_clones function under its plain name as an ifunc, so a call from another TU
// goes through the resolver like any other call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "fastfm/fm.hpp"
#include "fastfm/matvec.hpp"
#include "fastfm/matvec_single.hpp"
#include "fastfm/set.hpp"

// ----------------------------------------------------------------------------
// Run-time ISA dispatch of the hot tiles.  One portable binary (no
// -march=native): GCC emits x86-64-v4 (AVX-512), x86-64-v3 (AVX2 + FMA) and
// baseline clones and picks one at load time.  `flatten` inlines the whole
// tile, so the template code is compiled for each ISA, not called at the
// baseline one.  Measured on an AMD EPYC (Zen 4): v3 is ~3× the baseline, v4
// another 15–20% on the Gram (GCC's generic tuning keeps 256-bit vectors there).
// Used only in csrc/dispatch/*.cpp.
// ----------------------------------------------------------------------------
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__GLIBC__) && \
    !defined(FASTFM_NO_MULTIVERSIONING)
#define FASTFM_MULTIVERSIONING 1
#define FASTFM_HOT __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"), flatten))
#define FASTFM_DISPATCH_NAME "target_clones(x86-64-v4: AVX-512 | x86-64-v3: AVX2+FMA | default: SSE2)"
#else
#define FASTFM_MULTIVERSIONING 0
#define FASTFM_HOT
#define FASTFM_DISPATCH_NAME "none (compiler default ISA)"
#endif

namespace fastfm_dispatch {

// fm_gram.cpp
void gram_tile_f64(const fastfm::GramProblem<double>& pb, fastfm::Workspace<double>& ws, std::size_t a0,
                   std::size_t a1);
void neighbour_gram_f64(const fastfm::FMPlan<double>& plan, const double* c, const int64_t* v,
                        const fastfm::PointColumns<double>& cols, const int64_t* var_index, const int64_t* new_state,
                        std::size_t n_neighbours, double* K, int n_threads);

// fm_reduction.cpp
void reduction_tile_f64(const fastfm::ReductionProblem<double>& pb, fastfm::Workspace<double>& ws, std::size_t a0,
                        std::size_t a1, std::size_t tile);
bool complete_reduction_registers_f64(const fastfm::FMPlan<double>& plan, const int64_t* v, const int32_t* states,
                                      std::size_t ld, const double* arg, const double* wts, std::size_t count,
                                      double* omega, double* sums);

// fm_fused.cpp
void complete_reduction_fused_f64(const fastfm::FMPlan<double>& plan, const int64_t* v, const int32_t* states,
                                  std::size_t ld, const fastfm::FusedChunk<double>& chunk, double* sums);

// fm_cross.cpp
void cross_gradient_tile_f64(const fastfm::CrossGradientProblem<double>& pb, fastfm::Workspace<double>& ws,
                             std::size_t a0, std::size_t a1);

// set.cpp: nu_times_two is 1, 3 or 5 (Matérn ν = 1/2, 3/2, 5/2)
void set_gram_row_f64(int nu_times_two, const fastfm::ScaledSets<double>& A, const fastfm::ScaledSets<double>& B,
                      std::size_t a, std::size_t b_begin, fastfm::SetWorkspace<double>& ws, double* row);
void set_reduction_row_f64(int nu_times_two, const fastfm::ScaledSets<double>& A, const double* W, std::size_t a,
                           fastfm::SetWorkspace<double>& ws);

// matvec.cpp
void matvec_tile_f64(const fastfm::MatvecProblem<double>& pb, fastfm::MatvecWorkspace<double>& ws, std::size_t a0,
                     std::size_t a1);
void single_matvec_tile_f32(const fastfm::SingleMatvecProblem<float>& pb, fastfm::SingleMatvecWorkspace<float>& ws,
                            std::size_t a0, std::size_t a1);

// isa.cpp: the clone the resolver picks on this CPU, and how the hot code was built (build_info()["simd"])
std::string active_isa();
std::string dispatch_name();

}  // namespace fastfm_dispatch

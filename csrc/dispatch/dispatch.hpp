// The hot entry points of the C++ core, each compiled for several ISAs and picked at load time.
//
// Every function declared here is defined in one translation unit of csrc/dispatch/ that does not
// include pybind11; the binding code (csrc/py/*.cpp) reaches the template hot code only through
// them (a function pointer handed to a driver, or a direct call into the ifunc symbol).  Calling
// fastfm::gram_tile & co. from a binding TU instead would compile one more copy at the baseline
// ISA (SSE2), ~3× slower than the x86-64-v3 clone.  The declarations carry no target attributes:
// each entry point is exported under its plain name as an ifunc, so a call from another TU goes
// through the resolver like any other call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "fastfm/fm.hpp"
#include "fastfm/linalg.hpp"
#include "fastfm/matvec.hpp"
#include "fastfm/matvec_single.hpp"
#include "fastfm/set.hpp"

// ----------------------------------------------------------------------------
// Run-time ISA dispatch of the hot tiles.  One portable binary (no -march=native): each entry point
// has clones for x86-64-v4 (AVX-512), x86-64-v3 (AVX2 + FMA) and the baseline (SSE2), and an ifunc
// picks one when the module loads.  Measured on an AMD EPYC (Zen 4): v3 is ~3× the baseline, v4
// another 15–20% on the Gram; on the project's 2-core Xeon (AVX-512), entry point by entry point, v4
// is 1.0–5× v3 (0.8–0.9× on a few small cases) and the baseline 2–14× slower than v4
// (docs/benchmarks/build.md, "Which clones pay").
//
// FASTFM_HOT: GCC's target_clones, all three clones `flatten` (the whole tile is inlined, so the
// template code is compiled for that ISA, not called at the baseline one).
//
// Kernels written for a fixed number of vector lanes come in two entry points, _wide (eight doubles /
// sixteen floats) and _narrow (four doubles / eight floats), and a plain function that picks one by
// FMPlan::wide_vectors.  Wide lanes are what the CPU runs where it has AVX-512, i.e. where the v4 clone
// runs, and narrow lanes everywhere else (fm.hpp, wide_vector_registers), so each lane count needs
// only the clones that can run it: FASTFM_ENTRY_WIDE a v4 clone (and a baseline one, which only the
// _override_vector_lanes("wide") tests reach on a CPU without AVX-512), FASTFM_ENTRY_NARROW v3 and
// baseline clones (an AVX-512 CPU runs the v3 one when the tests force narrow lanes).  Compiling both
// lane counts into all three clones, as one FASTFM_HOT entry point did, cost ~65 s of compile time
// for instantiations that only tests ran.  These clones are written out, with an explicit ifunc,
// because GCC's target_clones gives every clone the same attributes, and the baseline clone is better
// without `flatten`: there every function is baseline code anyway, flattened it measured 0–26 %
// *slower* (GCC's own inlining wins; NAS-like reduction 152 ms against 190 ms), and flattening the
// baseline (and the wide test-only) clones cost ~45 s of compile time.  The FASTFM_HOT entry points
// keep target_clones: written out the same way (target("arch=...") + flatten), the v4 clone of
// matvec_tile_f64 measured 5 % slower than target_clones' (GCC clones the function after its early
// passes, so the code differs), while the lane entry points measured the same or 1–2 % faster.
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

// FASTFM_ENTRY_WIDE(RET, NAME, (PARAMS), (CALL)) defines the entry point `RET NAME PARAMS` declared
// below with a flattened x86-64-v4 clone and a baseline clone, each `return (CALL);`;
// FASTFM_ENTRY_NARROW the same with an x86-64-v3 clone.  CALL is parenthesised so that it may hold
// template commas.  The resolver runs while the module is being relocated, before any constructor:
// hence __builtin_cpu_init().  Without multiversioning (other compilers, other CPUs, musl) the entry
// point is one plain function for the compiler's default ISA, as FASTFM_HOT's.
#if FASTFM_MULTIVERSIONING
#define FASTFM_ENTRY_CLONES_(RET, NAME, PARAMS, CALL, ARCH, SUFFIX)                               \
    namespace {                                                                                     \
    __attribute__((target("arch=" ARCH), flatten)) RET NAME##SUFFIX PARAMS { return CALL; }         \
    RET NAME##_baseline PARAMS { return CALL; }                                                     \
    }                                                                                               \
    extern "C" decltype(&NAME##_baseline) fastfm_resolve_##NAME() {                                 \
        __builtin_cpu_init();                                                                       \
        return __builtin_cpu_supports(ARCH) ? &NAME##SUFFIX : &NAME##_baseline;                     \
    }                                                                                               \
    RET NAME PARAMS __attribute__((ifunc("fastfm_resolve_" #NAME)));
#define FASTFM_ENTRY_WIDE(RET, NAME, PARAMS, CALL) \
    FASTFM_ENTRY_CLONES_(RET, NAME, PARAMS, CALL, "x86-64-v4", _x86_64_v4)
#define FASTFM_ENTRY_NARROW(RET, NAME, PARAMS, CALL) \
    FASTFM_ENTRY_CLONES_(RET, NAME, PARAMS, CALL, "x86-64-v3", _x86_64_v3)
#else
#define FASTFM_ENTRY_WIDE(RET, NAME, PARAMS, CALL) \
    RET NAME PARAMS { return CALL; }
#define FASTFM_ENTRY_NARROW(RET, NAME, PARAMS, CALL) FASTFM_ENTRY_WIDE(RET, NAME, PARAMS, CALL)
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
// plan.wide_vectors ? _wide : _narrow
bool complete_reduction_registers_f64(const fastfm::FMPlan<double>& plan, const int64_t* v, const int32_t* states,
                                      std::size_t ld, const double* arg, const double* wts, std::size_t count,
                                      double* omega, double* sums);
bool complete_reduction_registers_f64_wide(const fastfm::FMPlan<double>& plan, const int64_t* v,
                                           const int32_t* states, std::size_t ld, const double* arg,
                                           const double* wts, std::size_t count, double* omega, double* sums);
bool complete_reduction_registers_f64_narrow(const fastfm::FMPlan<double>& plan, const int64_t* v,
                                             const int32_t* states, std::size_t ld, const double* arg,
                                             const double* wts, std::size_t count, double* omega, double* sums);

// fm_fused.cpp: plan.wide_vectors ? _wide : _narrow
void complete_reduction_fused_f64(const fastfm::FMPlan<double>& plan, const int64_t* v, const int32_t* states,
                                  std::size_t ld, const fastfm::FusedChunk<double>& chunk, double* sums);
void complete_reduction_fused_f64_wide(const fastfm::FMPlan<double>& plan, const int64_t* v, const int32_t* states,
                                       std::size_t ld, const fastfm::FusedChunk<double>& chunk, double* sums);
void complete_reduction_fused_f64_narrow(const fastfm::FMPlan<double>& plan, const int64_t* v,
                                         const int32_t* states, std::size_t ld,
                                         const fastfm::FusedChunk<double>& chunk, double* sums);

// fm_cross.cpp
void cross_gradient_tile_f64(const fastfm::CrossGradientProblem<double>& pb, fastfm::Workspace<double>& ws,
                             std::size_t a0, std::size_t a1);

// set.cpp: nu_times_two is 1, 3 or 5 (Matérn ν = 1/2, 3/2, 5/2)
void set_gram_row_f64(int nu_times_two, const fastfm::ScaledSets<double>& A, const fastfm::ScaledSets<double>& B,
                      std::size_t a, std::size_t b_begin, fastfm::SetWorkspace<double>& ws, double* row);
void set_reduction_row_f64(int nu_times_two, const fastfm::ScaledSets<double>& A, const double* W, std::size_t a,
                           fastfm::SetWorkspace<double>& ws);
void set_gram_gradient_row_f64(int nu_times_two, const fastfm::ScaledSets<double>& A, std::size_t a,
                               fastfm::SetWorkspace<double>& ws, double* K_row, double* dK_row);
void set_cross_gradient_row_f64(int nu_times_two, const fastfm::ScaledSets<double>& A,
                                const fastfm::ScaledSets<double>& B, const double* length_scale, std::size_t a,
                                fastfm::SetWorkspace<double>& ws, double* K_row, double* dK_row);
// d_loglength null: the value only (d_points is then ignored); else both derivatives
void set_diag_row_f64(int nu_times_two, const fastfm::ScaledSets<double>& A, const double* length_scale,
                      std::size_t a, fastfm::SetWorkspace<double>& ws, double* diag, double* d_loglength,
                      double* d_points);

// linalg.cpp: false (w untouched) where the factor's diagonal has a zero or non-finite entry
#if defined(__GNUC__)
bool likelihood_weights_f64(const double* u, std::size_t n, const double* alpha, double* w);
#endif

// matvec.cpp
void matvec_tile_f64(const fastfm::MatvecProblem<double>& pb, fastfm::MatvecWorkspace<double>& ws, std::size_t a0,
                     std::size_t a1);

// matvec_single.cpp: pb.gram.plan->wide_vectors ? _wide : _narrow
void single_matvec_tile_f32(const fastfm::SingleMatvecProblem<float>& pb, fastfm::SingleMatvecWorkspace<float>& ws,
                            std::size_t a0, std::size_t a1);
void single_matvec_tile_f32_wide(const fastfm::SingleMatvecProblem<float>& pb,
                                 fastfm::SingleMatvecWorkspace<float>& ws, std::size_t a0, std::size_t a1);
void single_matvec_tile_f32_narrow(const fastfm::SingleMatvecProblem<float>& pb,
                                   fastfm::SingleMatvecWorkspace<float>& ws, std::size_t a0, std::size_t a1);

// isa.cpp: the clone the resolver picks on this CPU, and how the hot code was built (build_info()["simd"])
std::string active_isa();
std::string dispatch_name();

}  // namespace fastfm_dispatch

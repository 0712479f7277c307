// Hot entry points of the fused symmetric reduction (fm.hpp, complete_reduction_fused_lanes).
#include "dispatch/dispatch.hpp"

namespace fastfm_dispatch {

FASTFM_ENTRY_WIDE(void, complete_reduction_fused_f64_wide,
                (const fastfm::FMPlan<double>& plan, const int64_t* v, const int32_t* states, std::size_t ld,
                 const fastfm::FusedChunk<double>& chunk, double* sums),
                (fastfm::complete_reduction_fused_lanes<double, fastfm::kWideLanes>(plan, v, states, ld, chunk,
                                                                                    sums)))

FASTFM_ENTRY_NARROW(void, complete_reduction_fused_f64_narrow,
                (const fastfm::FMPlan<double>& plan, const int64_t* v, const int32_t* states, std::size_t ld,
                 const fastfm::FusedChunk<double>& chunk, double* sums),
                (fastfm::complete_reduction_fused_lanes<double, fastfm::kNarrowLanes<double>>(plan, v, states, ld,
                                                                                              chunk, sums)))

// Called once per row chunk (ReductionProblem::fused_kernel): the branch and the extra call are noise.
void complete_reduction_fused_f64(const fastfm::FMPlan<double>& plan, const int64_t* v, const int32_t* states,
                                  std::size_t ld, const fastfm::FusedChunk<double>& chunk, double* sums) {
    if (plan.wide_vectors)
        complete_reduction_fused_f64_wide(plan, v, states, ld, chunk, sums);
    else
        complete_reduction_fused_f64_narrow(plan, v, states, ld, chunk, sums);
}

}  // namespace fastfm_dispatch

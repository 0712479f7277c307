// Hot entry point of the fused symmetric reduction (fm.hpp, complete_reduction_fused_any).
#include "dispatch/dispatch.hpp"

namespace fastfm_dispatch {

FASTFM_HOT void complete_reduction_fused_f64(const fastfm::FMPlan<double>& plan, const int64_t* v,
                                             const int32_t* states, std::size_t ld,
                                             const fastfm::FusedChunk<double>& chunk, double* sums) {
    fastfm::complete_reduction_fused_any(plan, v, states, ld, chunk, sums);
}

}  // namespace fastfm_dispatch

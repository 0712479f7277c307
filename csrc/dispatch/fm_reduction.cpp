// Hot entry points of the FM gradient reduction (fm.hpp, reduction_tile) and its register kernels.
#include "dispatch/dispatch.hpp"

namespace fastfm_dispatch {

FASTFM_HOT void reduction_tile_f64(const fastfm::ReductionProblem<double>& pb, fastfm::Workspace<double>& ws,
                                   std::size_t a0, std::size_t a1, std::size_t tile) {
    fastfm::reduction_tile(pb, ws, a0, a1, tile);
}

FASTFM_ENTRY_WIDE(bool, complete_reduction_registers_f64_wide,
                (const fastfm::FMPlan<double>& plan, const int64_t* v, const int32_t* states, std::size_t ld,
                 const double* arg, const double* wts, std::size_t count, double* omega, double* sums),
                (fastfm::complete_reduction_registers_lanes<double, fastfm::kWideLanes>(plan, v, states, ld, arg,
                                                                                        wts, count, omega, sums)))

FASTFM_ENTRY_NARROW(bool, complete_reduction_registers_f64_narrow,
                (const fastfm::FMPlan<double>& plan, const int64_t* v, const int32_t* states, std::size_t ld,
                 const double* arg, const double* wts, std::size_t count, double* omega, double* sums),
                (fastfm::complete_reduction_registers_lanes<double, fastfm::kNarrowLanes<double>>(
                    plan, v, states, ld, arg, wts, count, omega, sums)))

// Called once per row chunk (ReductionProblem::register_kernel): the branch and the extra call are noise.
bool complete_reduction_registers_f64(const fastfm::FMPlan<double>& plan, const int64_t* v, const int32_t* states,
                                      std::size_t ld, const double* arg, const double* wts, std::size_t count,
                                      double* omega, double* sums) {
    return plan.wide_vectors ? complete_reduction_registers_f64_wide(plan, v, states, ld, arg, wts, count, omega, sums)
                             : complete_reduction_registers_f64_narrow(plan, v, states, ld, arg, wts, count, omega,
                                                                       sums);
}

}  // namespace fastfm_dispatch

// Hot entry point of the cross gradient ∂K(x, X)/∂x (fm.hpp, cross_gradient_tile).
#include "dispatch/dispatch.hpp"

namespace fastfm_dispatch {

FASTFM_HOT void cross_gradient_tile_f64(const fastfm::CrossGradientProblem<double>& pb,
                                        fastfm::Workspace<double>& ws, std::size_t a0, std::size_t a1) {
    fastfm::cross_gradient_tile(pb, ws, a0, a1);
}

}  // namespace fastfm_dispatch

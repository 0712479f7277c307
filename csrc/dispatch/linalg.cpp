// Hot entry point of the GP likelihood's gradient weights W = ½(ααᵀ − K⁻¹) from its Cholesky factor
// (linalg.hpp, likelihood_weights).
#include "dispatch/dispatch.hpp"

namespace fastfm_dispatch {

#if defined(__GNUC__)
FASTFM_HOT bool likelihood_weights_f64(const double* u, std::size_t n, const double* alpha, double* w) {
    return fastfm::likelihood_weights(u, n, alpha, w);
}
#endif

}  // namespace fastfm_dispatch

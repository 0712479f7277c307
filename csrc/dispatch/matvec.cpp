// Hot entry point of the matrix-free K·V product in double precision (fastfm/gp_large.py).
#include "dispatch/dispatch.hpp"

namespace fastfm_dispatch {

FASTFM_HOT void matvec_tile_f64(const fastfm::MatvecProblem<double>& pb, fastfm::MatvecWorkspace<double>& ws,
                                std::size_t a0, std::size_t a1) {
    fastfm::matvec_tile(pb, ws, a0, a1);
}

}  // namespace fastfm_dispatch

// Hot entry points of the FM Gram (fm.hpp, gram_tile) and of the graph-neighbour Gram.
#include "dispatch/dispatch.hpp"

namespace fastfm_dispatch {

FASTFM_HOT void gram_tile_f64(const fastfm::GramProblem<double>& pb, fastfm::Workspace<double>& ws, std::size_t a0,
                              std::size_t a1) {
    fastfm::gram_tile(pb, ws, a0, a1);
}

FASTFM_HOT void neighbour_gram_f64(const fastfm::FMPlan<double>& plan, const double* c, const int64_t* v,
                                   const fastfm::PointColumns<double>& cols, const int64_t* var_index,
                                   const int64_t* new_state, std::size_t n_neighbours, double* K, int n_threads) {
    fastfm::neighbour_gram(plan, c, v, cols, var_index, new_state, n_neighbours, K, n_threads);
}

}  // namespace fastfm_dispatch

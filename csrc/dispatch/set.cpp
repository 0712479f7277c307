// Hot entry points of the set kernels (SPEC §4, set.hpp): one Gram row and one reduction row.
#include "dispatch/dispatch.hpp"

namespace fastfm_dispatch {

namespace {

template <fastfm::MaternOrder Nu>
void set_gram_row_impl(const fastfm::ScaledSets<double>& A, const fastfm::ScaledSets<double>& B, std::size_t a,
                       std::size_t b_begin, fastfm::SetWorkspace<double>& ws, double* row) {
    fastfm::set_gram_row<double, Nu>(A, B, a, b_begin, ws, row);
}

}  // namespace

FASTFM_HOT void set_gram_row_f64(int nu_times_two, const fastfm::ScaledSets<double>& A,
                                 const fastfm::ScaledSets<double>& B, std::size_t a, std::size_t b_begin,
                                 fastfm::SetWorkspace<double>& ws, double* row) {
    switch (nu_times_two) {
        case 1: set_gram_row_impl<fastfm::MaternOrder::Half>(A, B, a, b_begin, ws, row); break;
        case 3: set_gram_row_impl<fastfm::MaternOrder::ThreeHalves>(A, B, a, b_begin, ws, row); break;
        default: set_gram_row_impl<fastfm::MaternOrder::FiveHalves>(A, B, a, b_begin, ws, row); break;
    }
}

FASTFM_HOT void set_reduction_row_f64(int nu_times_two, const fastfm::ScaledSets<double>& A, const double* W,
                                      std::size_t a, fastfm::SetWorkspace<double>& ws) {
    switch (nu_times_two) {
        case 1: fastfm::set_reduction_row<double, fastfm::MaternOrder::Half>(A, W, a, ws); break;
        case 3: fastfm::set_reduction_row<double, fastfm::MaternOrder::ThreeHalves>(A, W, a, ws); break;
        default: fastfm::set_reduction_row<double, fastfm::MaternOrder::FiveHalves>(A, W, a, ws); break;
    }
}

}  // namespace fastfm_dispatch

// Hot entry points of the set kernels (SPEC §4, set.hpp): one row of the Gram, of the gradient
// reduction, of the Gram with its lengthscale derivatives and of the cross gradient, and one set's
// diagonal (with or without its derivatives).
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

FASTFM_HOT void set_gram_gradient_row_f64(int nu_times_two, const fastfm::ScaledSets<double>& A, std::size_t a,
                                          fastfm::SetWorkspace<double>& ws, double* K_row, double* dK_row) {
    using fastfm::MaternOrder;
    switch (nu_times_two) {
        case 1: fastfm::set_gram_gradient_row<double, MaternOrder::Half>(A, a, ws, K_row, dK_row); break;
        case 3: fastfm::set_gram_gradient_row<double, MaternOrder::ThreeHalves>(A, a, ws, K_row, dK_row); break;
        default: fastfm::set_gram_gradient_row<double, MaternOrder::FiveHalves>(A, a, ws, K_row, dK_row); break;
    }
}

FASTFM_HOT void set_cross_gradient_row_f64(int nu_times_two, const fastfm::ScaledSets<double>& A,
                                           const fastfm::ScaledSets<double>& B, const double* length_scale,
                                           std::size_t a, fastfm::SetWorkspace<double>& ws, double* K_row,
                                           double* dK_row) {
    using fastfm::MaternOrder;
    switch (nu_times_two) {
        case 1:
            fastfm::set_cross_gradient_row<double, MaternOrder::Half>(A, B, length_scale, a, ws, K_row, dK_row);
            break;
        case 3:
            fastfm::set_cross_gradient_row<double, MaternOrder::ThreeHalves>(A, B, length_scale, a, ws, K_row, dK_row);
            break;
        default:
            fastfm::set_cross_gradient_row<double, MaternOrder::FiveHalves>(A, B, length_scale, a, ws, K_row, dK_row);
            break;
    }
}

namespace {

template <bool Gradient>
void set_diag_row_impl(int nu_times_two, const fastfm::ScaledSets<double>& A, const double* length_scale,
                       std::size_t a, fastfm::SetWorkspace<double>& ws, double* diag, double* d_loglength,
                       double* d_points) {
    using fastfm::MaternOrder;
    switch (nu_times_two) {
        case 1:
            fastfm::set_diag_row<double, MaternOrder::Half, Gradient>(A, length_scale, a, ws, diag, d_loglength,
                                                                      d_points);
            break;
        case 3:
            fastfm::set_diag_row<double, MaternOrder::ThreeHalves, Gradient>(A, length_scale, a, ws, diag,
                                                                             d_loglength, d_points);
            break;
        default:
            fastfm::set_diag_row<double, MaternOrder::FiveHalves, Gradient>(A, length_scale, a, ws, diag,
                                                                            d_loglength, d_points);
            break;
    }
}

}  // namespace

FASTFM_HOT void set_diag_row_f64(int nu_times_two, const fastfm::ScaledSets<double>& A, const double* length_scale,
                                 std::size_t a, fastfm::SetWorkspace<double>& ws, double* diag, double* d_loglength,
                                 double* d_points) {
    if (d_loglength)
        set_diag_row_impl<true>(nu_times_two, A, length_scale, a, ws, diag, d_loglength, d_points);
    else
        set_diag_row_impl<false>(nu_times_two, A, length_scale, a, ws, diag, nullptr, nullptr);
}

}  // namespace fastfm_dispatch

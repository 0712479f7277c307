// The bookkeeping of fastfm/optim/batched_lbfgs.py (independent projected L-BFGS runs whose function evaluations
// are batched) as a state machine: the caller asks for the points to evaluate (trials), evaluates them (in Python:
// the acquisition of the GP) and hands back their values and gradients (tell), until no start is running.
//
// The NumPy module is the definition: this header repeats its operations one for one, in the same order, so that
// the runs are the same bit for bit (tests/optim/test_batched_lbfgs.py): each row sum is NumPy's pairwise sum of
// a contiguous row (pairwise_sum below), clip/maximum/minimum are NumPy's NaN-propagating forms, and no
// expression may be contracted into a fused multiply-add (the pragmas below; the binding's translation unit is
// built for the baseline ISA anyway).  Why compiled: the NumPy bookkeeping, ~70 array operations an iteration on
// a few dozen starts of a few to a hundred coordinates, was a quarter of the acquisition search on the HPO
// problems (docs/benchmarks/suggestion.md, "The local search's bookkeeping compiled").
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

namespace fastfm {

namespace lbfgs_detail {

// NumPy's sum of n contiguous values (pairwise_sum of numpy/_core/src/umath/loops_utils.h): a plain loop below
// 8 values, eight accumulators up to 128, halves (rounded to a multiple of 8) above.
template <typename T>
T pairwise_sum(const T* a, std::size_t n) {
    if (n < 8) {
        T res = T(0);
        for (std::size_t i = 0; i < n; ++i) res += a[i];
        return res;
    }
    if (n <= 128) {
        T r[8];
        for (int j = 0; j < 8; ++j) r[j] = a[j];
        std::size_t i = 8;
        for (; i < n - (n % 8); i += 8)
            for (int j = 0; j < 8; ++j) r[j] += a[i + j];
        T res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; ++i) res += a[i];
        return res;
    }
    std::size_t n2 = n / 2;
    n2 -= n2 % 8;
    return pairwise_sum(a, n2) + pairwise_sum(a + n2, n - n2);
}

// NumPy's maximum / minimum / clip of floats: a NaN first argument wins, ties keep the second (np.maximum(-0., 0.)
// is 0.).
template <typename T>
T np_max(T a, T b) { return std::isnan(a) ? a : (a > b ? a : b); }
template <typename T>
T np_min(T a, T b) { return std::isnan(a) ? a : (a < b ? a : b); }
template <typename T>
T np_clip(T x, T lo, T hi) { return np_min(np_max(x, lo), hi); }

}  // namespace lbfgs_detail

template <typename T>
class BatchedLBFGS {
public:
    static constexpr std::size_t kMemory = 10;
    static constexpr T kPgtol = T(1e-5);
    static constexpr T kFtol = T(2.220446049250313e-09);
    static constexpr T kArmijo = T(1e-4);
    static constexpr int kMaxBacktracks = 20;
    static constexpr T kCurvatureEps = T(2.2e-16);
    static constexpr T kWolfeCurvature = T(0.9);
    static constexpr T kMaxStepGrowth = T(1099511627776.0);   // 2**40

    // X (clipped into the box), F, G: the first evaluation of every start, row-major (n_starts, n).
    BatchedLBFGS(std::size_t n_starts, std::size_t n, const T* X, const T* F, const T* G, const T* lower,
                 const T* upper, long maxiter)
        : n_starts_(n_starts), n_(n), maxiter_(maxiter), X_(X, X + n_starts * n), F_(F, F + n_starts),
          G_(G, G + n_starts * n), lower_(lower, lower + n_starts * n), upper_(upper, upper + n_starts * n),
          S_(n_starts * kMemory * n, T(0)), Y_(n_starts * kMemory * n, T(0)), rho_(n_starts * kMemory, T(0)),
          n_pairs_(n_starts, 0), newest_(n_starts, -1), iterations_(n_starts, 0), growth_(n_starts, T(1)),
          running_(n_starts, false), row_(n) {
        for (std::size_t i = 0; i < n_starts; ++i) {
            bool finite = std::isfinite(F_[i]);
            for (std::size_t j = 0; j < n; ++j) finite = finite && std::isfinite(G_[i * n + j]);
            running_[i] = finite && max_abs_projected_gradient(&X_[i * n], &G_[i * n], &lower_[i * n],
                                                                &upper_[i * n]) > kPgtol;
        }
    }

    // The starts to evaluate next and their points (row-major, trial_starts().size() × n); false when every run
    // has stopped.  Called again before ``tell`` it returns the same trials.
    bool next_trials() {
        if (!searching_.empty()) return true;
        return begin_iteration();
    }
    const std::vector<std::int64_t>& trial_starts() const { return trial_starts_; }
    const std::vector<T>& trial_points() const { return trial_; }

    // Values f (k,) and gradients g (k, n) of the last trials.
    void tell(const T* f_trial, const T* g_trial) {
        const std::size_t n = n_;
        const std::size_t k = searching_.size();
        std::vector<std::size_t> rest;
        std::vector<T> rest_decrease, rest_f;
        for (std::size_t r = 0; r < k; ++r) {
            const std::size_t pos = searching_[r];
            const std::size_t start = idx_[pos];
            const T* x = &x_[pos * n];
            const T* g = &g_[pos * n];
            const T* trial = &trial_[r * n];
            for (std::size_t j = 0; j < n; ++j) row_[j] = g[j] * (trial[j] - x[j]);
            const T decrease = lbfgs_detail::pairwise_sum(row_.data(), n);
            bool finite = std::isfinite(f_trial[r]);
            for (std::size_t j = 0; j < n; ++j) finite = finite && std::isfinite(g_trial[r * n + j]);
            if (finite && f_trial[r] <= F_[start] + kArmijo * decrease) {
                accepted_[pos] = true;
                whole_[pos] = backtrack_ == 0;
                std::copy(trial, trial + n, &new_x_[pos * n]);
                new_f_[pos] = f_trial[r];
                std::copy(&g_trial[r * n], &g_trial[r * n] + n, &new_g_[pos * n]);
            } else {
                rest.push_back(pos);
                rest_decrease.push_back(decrease);
                rest_f.push_back(f_trial[r]);
            }
        }
        // the rest shorten their step to the minimiser of the quadratic through f(x), the slope and f(x(t)),
        // within [0.1 t, 0.5 t]; a non-finite value halves it
        for (std::size_t r = 0; r < rest.size(); ++r) {
            const std::size_t pos = rest[r];
            const T t = step_[pos];
            const T curvature = (rest_f[r] - F_[idx_[pos]]) - rest_decrease[r];
            const T t_quadratic = ((-rest_decrease[r]) * t) / (T(2.0) * curvature);
            step_[pos] = std::isfinite(t_quadratic) ? lbfgs_detail::np_clip(t_quadratic, T(0.1) * t, T(0.5) * t)
                                                    : T(0.5) * t;
        }
        searching_ = rest;
        ++backtrack_;
        if (!searching_.empty() && backtrack_ < kMaxBacktracks) {
            make_trials();
            return;
        }
        searching_.clear();
        finish_iteration();
    }

    const std::vector<T>& X() const { return X_; }
    const std::vector<T>& F() const { return F_; }
    std::size_t n_starts() const { return n_starts_; }
    std::size_t n() const { return n_; }

private:
    T max_abs_projected_gradient(const T* x, const T* g, const T* lo, const T* hi) const {
        // np.max(np.abs(np.clip(x - g, lo, hi) - x)): NaN-propagating as np.max (np_max keeps a NaN v, and a NaN
        // best is never replaced since v > NaN is false); n ≥ 1 (the binding checks it)
        T best = std::fabs(lbfgs_detail::np_clip(x[0] - g[0], lo[0], hi[0]) - x[0]);
        for (std::size_t j = 1; j < n_; ++j)
            best = lbfgs_detail::np_max(std::fabs(lbfgs_detail::np_clip(x[j] - g[j], lo[j], hi[j]) - x[j]), best);
        return best;
    }

    bool begin_iteration() {
        const std::size_t n = n_;
        idx_.clear();
        for (std::size_t i = 0; i < n_starts_; ++i)
            if (running_[i]) idx_.push_back(i);
        const std::size_t k = idx_.size();
        if (k == 0) return false;
        x_.resize(k * n);
        g_.resize(k * n);
        free_.assign(k * n, T(0));
        d_.assign(k * n, T(0));
        for (std::size_t pos = 0; pos < k; ++pos) {
            const std::size_t i = idx_[pos];
            for (std::size_t j = 0; j < n; ++j) {
                const T x = X_[i * n + j], g = G_[i * n + j], lo = lower_[i * n + j], hi = upper_[i * n + j];
                x_[pos * n + j] = x;
                g_[pos * n + j] = g;
                const bool held = ((x <= lo) && (g > 0)) || ((x >= hi) && (g < 0)) || (lo >= hi);
                free_[pos * n + j] = held ? T(0) : T(1);
            }
        }
        direction();
        step_.assign(k, T(0));
        for (std::size_t pos = 0; pos < k; ++pos) {
            const std::size_t i = idx_[pos];
            T* d = &d_[pos * n];
            const T* g = &g_[pos * n];
            const T* free = &free_[pos * n];
            for (std::size_t j = 0; j < n; ++j) row_[j] = g[j] * d[j];
            const T slope = lbfgs_detail::pairwise_sum(row_.data(), n);
            if (!(slope < 0)) {   // a stale pair turned the direction: steepest descent, memory cleared
                for (std::size_t j = 0; j < n; ++j) d[j] = -(g[j] * free[j]);
                n_pairs_[i] = 0;
            }
            // first step of a start with no curvature yet: length 1/‖d‖ (as L-BFGS-B), later 1, times its growth
            for (std::size_t j = 0; j < n; ++j) row_[j] = d[j] * d[j];
            const T norm = std::sqrt(lbfgs_detail::pairwise_sum(row_.data(), n));
            const T first = lbfgs_detail::np_min(T(1.0), T(1.0) / (norm > 0 ? norm : T(1.0)));
            step_[pos] = (n_pairs_[i] == 0 ? first : T(1.0)) * growth_[i];
        }
        accepted_.assign(k, false);
        whole_.assign(k, false);
        new_x_ = x_;
        new_g_ = g_;
        new_f_.resize(k);
        for (std::size_t pos = 0; pos < k; ++pos) new_f_[pos] = F_[idx_[pos]];
        searching_.resize(k);
        for (std::size_t pos = 0; pos < k; ++pos) searching_[pos] = pos;
        backtrack_ = 0;
        make_trials();
        return true;
    }

    // −H g on the free variables by the two-loop recursion (Nocedal & Wright Alg. 7.4), batched._direction
    void direction() {
        const std::size_t n = n_, k = idx_.size();
        int n_back = 0;
        for (std::size_t pos = 0; pos < k; ++pos) n_back = std::max(n_back, n_pairs_[idx_[pos]]);
        std::vector<T> q(n), r(n), s_pair(n), y_pair(n), alphas(static_cast<std::size_t>(n_back));
        for (std::size_t pos = 0; pos < k; ++pos) {
            const std::size_t i = idx_[pos];
            const T* free = &free_[pos * n];
            const T* g = &g_[pos * n];
            for (std::size_t j = 0; j < n; ++j) q[j] = g[j] * free[j];
            for (int back = 0; back < n_back; ++back) {   // newest to oldest
                const std::size_t slot = slot_of(newest_[i], back);
                load_pair(i, slot, free, s_pair.data(), y_pair.data());
                const T rho = back < n_pairs_[i] ? rho_[i * kMemory + slot] : T(0.0);
                for (std::size_t j = 0; j < n; ++j) row_[j] = s_pair[j] * q[j];
                const T alpha = rho * lbfgs_detail::pairwise_sum(row_.data(), n);
                alphas[static_cast<std::size_t>(back)] = alpha;
                for (std::size_t j = 0; j < n; ++j) q[j] -= alpha * y_pair[j];
            }
            const std::size_t newest_slot = slot_of(newest_[i], 0);
            const T* s_new = &S_[(i * kMemory + newest_slot) * n];
            const T* y_new = &Y_[(i * kMemory + newest_slot) * n];
            for (std::size_t j = 0; j < n; ++j) row_[j] = y_new[j] * y_new[j];
            const T yy = lbfgs_detail::pairwise_sum(row_.data(), n);
            T gamma = T(1.0);
            if (n_pairs_[i] > 0 && yy > 0) {
                for (std::size_t j = 0; j < n; ++j) row_[j] = s_new[j] * y_new[j];
                gamma = lbfgs_detail::pairwise_sum(row_.data(), n) / yy;
            }
            for (std::size_t j = 0; j < n; ++j) r[j] = gamma * q[j];
            for (int back = n_back - 1; back >= 0; --back) {   // oldest to newest
                const std::size_t slot = slot_of(newest_[i], back);
                load_pair(i, slot, free, s_pair.data(), y_pair.data());
                const T rho = back < n_pairs_[i] ? rho_[i * kMemory + slot] : T(0.0);
                for (std::size_t j = 0; j < n; ++j) row_[j] = y_pair[j] * r[j];
                const T beta = rho * lbfgs_detail::pairwise_sum(row_.data(), n);
                const T coefficient = alphas[static_cast<std::size_t>(back)] - beta;
                for (std::size_t j = 0; j < n; ++j) r[j] += s_pair[j] * coefficient;
            }
            T* d = &d_[pos * n];
            for (std::size_t j = 0; j < n; ++j) d[j] = (-r[j]) * free[j];
        }
    }

    static std::size_t slot_of(long newest, int back) {
        // Python's (newest − back) % MEMORY: never negative
        const long m = static_cast<long>(kMemory);
        return static_cast<std::size_t>(((newest - back) % m + m) % m);
    }

    void load_pair(std::size_t i, std::size_t slot, const T* free, T* s, T* y) const {
        const T* S = &S_[(i * kMemory + slot) * n_];
        const T* Y = &Y_[(i * kMemory + slot) * n_];
        for (std::size_t j = 0; j < n_; ++j) {
            s[j] = S[j] * free[j];
            y[j] = Y[j] * free[j];
        }
    }

    // projected trial points x(t) = P(x + t d) of the searching starts
    void make_trials() {
        const std::size_t n = n_;
        trial_.resize(searching_.size() * n);
        trial_starts_.resize(searching_.size());
        for (std::size_t r = 0; r < searching_.size(); ++r) {
            const std::size_t pos = searching_[r];
            const std::size_t i = idx_[pos];
            trial_starts_[r] = static_cast<std::int64_t>(i);
            const T t = step_[pos];
            for (std::size_t j = 0; j < n; ++j)
                trial_[r * n + j] = lbfgs_detail::np_clip(x_[pos * n + j] + t * d_[pos * n + j], lower_[i * n + j],
                                                          upper_[i * n + j]);
        }
    }

    void finish_iteration() {
        const std::size_t n = n_, k = idx_.size();
        std::vector<T> s(n), y(n);
        for (std::size_t pos = 0; pos < k; ++pos) {
            const std::size_t i = idx_[pos];
            const T* x = &x_[pos * n];
            const T* g = &g_[pos * n];
            const T* nx = &new_x_[pos * n];
            const T* ng = &new_g_[pos * n];
            for (std::size_t j = 0; j < n; ++j) {
                s[j] = nx[j] - x[j];
                y[j] = ng[j] - g[j];
            }
            for (std::size_t j = 0; j < n; ++j) row_[j] = s[j] * y[j];
            const T sy = lbfgs_detail::pairwise_sum(row_.data(), n);
            for (std::size_t j = 0; j < n; ++j) row_[j] = y[j] * y[j];
            const T yy = lbfgs_detail::pairwise_sum(row_.data(), n);
            // a whole step after which the slope along it is still steep (curvature condition, Nocedal & Wright
            // Eq. 3.6b) doubles the start's next trial step
            for (std::size_t j = 0; j < n; ++j) row_[j] = ng[j] * s[j];
            const T slope_after = lbfgs_detail::pairwise_sum(row_.data(), n);
            for (std::size_t j = 0; j < n; ++j) row_[j] = g[j] * s[j];
            const T slope_before = lbfgs_detail::pairwise_sum(row_.data(), n);
            const bool too_short = whole_[pos] && (slope_after < kWolfeCurvature * slope_before);
            growth_[i] = too_short ? lbfgs_detail::np_min(T(2.0) * growth_[i], kMaxStepGrowth) : T(1.0);
            if (accepted_[pos] && sy > kCurvatureEps * yy) {
                const std::size_t slot = static_cast<std::size_t>((newest_[i] + 1) % static_cast<long>(kMemory));
                std::copy(s.begin(), s.end(), &S_[(i * kMemory + slot) * n]);
                std::copy(y.begin(), y.end(), &Y_[(i * kMemory + slot) * n]);
                rho_[i * kMemory + slot] = T(1.0) / sy;
                newest_[i] = static_cast<long>(slot);
                n_pairs_[i] = std::min(n_pairs_[i] + 1, static_cast<int>(kMemory));
            }
            // stopping rules, per start
            const T previous = F_[i];
            if (accepted_[pos]) {
                std::copy(nx, nx + n, &X_[i * n]);
                F_[i] = new_f_[pos];
                std::copy(ng, ng + n, &G_[i * n]);
                ++iterations_[i];
            }
            const T new_f = new_f_[pos];
            const T scale = lbfgs_detail::np_max(
                lbfgs_detail::np_max(std::fabs(previous), std::fabs(new_f)), T(1.0));
            const bool small_decrease = (previous - new_f) <= kFtol * scale;
            const bool converged =
                max_abs_projected_gradient(nx, ng, &lower_[i * n], &upper_[i * n]) <= kPgtol;
            if (!accepted_[pos] || small_decrease || converged || iterations_[i] >= maxiter_) running_[i] = false;
        }
    }

    std::size_t n_starts_, n_;
    long maxiter_;
    std::vector<T> X_, F_, G_, lower_, upper_, S_, Y_, rho_;
    std::vector<int> n_pairs_;
    std::vector<long> newest_, iterations_;
    std::vector<T> growth_;
    std::vector<bool> running_;
    // the current iteration: its starts (idx_), their points, gradients, free masks, directions and steps
    std::vector<std::size_t> idx_, searching_;
    std::vector<T> x_, g_, free_, d_, step_, new_x_, new_f_, new_g_, trial_;
    std::vector<bool> accepted_, whole_;
    std::vector<std::int64_t> trial_starts_;
    int backtrack_ = 0;
    std::vector<T> row_;   // a row's elementwise products before their pairwise sum
};

}  // namespace fastfm

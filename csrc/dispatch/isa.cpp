// Which clone of the hot entry points runs on this CPU (build_info()["simd"]).
#include "dispatch/dispatch.hpp"

namespace fastfm_dispatch {

std::string active_isa() {
#if FASTFM_MULTIVERSIONING
    __builtin_cpu_init();
    if (__builtin_cpu_supports("x86-64-v4")) return "x86-64-v4 (AVX-512)";
    if (__builtin_cpu_supports("x86-64-v3")) return "x86-64-v3 (AVX2+FMA)";
    return "default (SSE2)";
#else
    return "default";
#endif
}

std::string dispatch_name() { return FASTFM_DISPATCH_NAME; }

}  // namespace fastfm_dispatch

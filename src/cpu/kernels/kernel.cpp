#include "cpu/kernels/kernel.hpp"

#include <algorithm>
#include <cstring>

namespace tessel::cpu {
namespace {

const std::vector<const FastKernel*>& all_kernels() {
    static const std::vector<const FastKernel*> table = [] {
        std::vector<const FastKernel*> t;
#if defined(__x86_64__)
        for (const FastKernel& k : kAvx512FlashAttnKernels) t.push_back(&k);
        for (const FastKernel& k : kAvx2RowKernels) t.push_back(&k);
        for (const FastKernel& k : kAvx2ActivationKernels) t.push_back(&k);
        for (const FastKernel& k : kAvx2RopeKernels) t.push_back(&k);
        for (const FastKernel& k : kAvx2FlashAttnKernels) t.push_back(&k);
        for (const FastKernel& k : kAvx2DataKernels) t.push_back(&k);
#endif
        return t;
    }();
    return table;
}

}  // namespace

bool has_avx2_tier(const CpuFeatures& f) { return f.avx2 && f.fma && f.f16c; }
bool has_avx512_tier(const CpuFeatures& f) { return has_avx2_tier(f) && f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq; }
bool has_avx512vnni_tier(const CpuFeatures& f) { return has_avx512_tier(f) && f.avx512vnni; }
size_t no_work(const Tensor&, int) { return 0; }

void thread_rows(int64_t n, const ThreadContext& ctx, int64_t& begin, int64_t& end) {
    const int64_t per = (n + ctx.nth - 1) / ctx.nth;
    begin = per * ctx.ith < n ? per * ctx.ith : n;
    end = begin + per < n ? begin + per : n;
}

void route_experts(Tensor& dst, int64_t* starts, int32_t* pairs) {
    const Tensor& ids = *dst.src[2];
    const int64_t E = dst.src[0]->ne[2], N = dst.ne[0], n_used = ids.ne[0], T = ids.ne[1];
    auto id_at = [&](int64_t e, int64_t t) {
        return *reinterpret_cast<const int32_t*>(static_cast<const uint8_t*>(ids.data) + e * ids.nb[0] + t * ids.nb[1]);
    };
    std::fill(starts, starts + E + 1, int64_t{0});
    for (int64_t t = 0; t < T; ++t)
        for (int64_t e = 0; e < n_used; ++e) {
            const int32_t id = id_at(e, t);
            if (id >= 0 && id < E) ++starts[id + 1];
            else std::memset(static_cast<uint8_t*>(dst.data) + e * dst.nb[1] + t * dst.nb[2], 0, sizeof(float) * static_cast<size_t>(N));
        }
    for (int64_t ex = 0; ex < E; ++ex) starts[ex + 1] += starts[ex];
    // starts[ex] serves as expert ex's write cursor (allocating nothing); afterwards it holds the
    // start of expert ex + 1, so the values move up by one.
    for (int64_t t = 0; t < T; ++t)
        for (int64_t e = 0; e < n_used; ++e) {
            const int32_t id = id_at(e, t);
            if (id < 0 || id >= E) continue;
            int32_t* p = pairs + 2 * starts[id]++;
            p[0] = static_cast<int32_t>(e), p[1] = static_cast<int32_t>(t);
        }
    for (int64_t ex = E - 1; ex > 0; --ex) starts[ex] = starts[ex - 1];
    starts[0] = 0;
}

bool f32_rows(const Tensor& t) { return t.type == DType::F32 && t.nb[0] == sizeof(float); }

const FastKernel* select_kernel(const Tensor& dst, const CpuFeatures& f) {
    for (const FastKernel* k : all_kernels())
        if (k->usable(f) && k->supports(dst)) return k;
    return nullptr;
}

}  // namespace tessel::cpu

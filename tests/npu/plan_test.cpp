// The host's VTCM planner (plan.hpp): SOFT_MAX's scratch from its shape and the device's threads,
// and NPU0 under TESSEL_NPU_VTCM=65536 declining a softmax whose rows do not fit (the scheduler
// gives it to the CPU) while claiming one that does, over both links, with softmax computed here
// in double as the reference for both.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "backend/scheduler.hpp"
#include "cpu/cpu_backend.hpp"
#include "graph/builder.hpp"
#include "graph/builder_attn.hpp"
#include "npu/host/device.hpp"
#include "npu/host/plan.hpp"
#include "npu/host/session.hpp"
#include "tessel/errors.hpp"

namespace tessel::npu {
namespace {

// A softmax node over x [k, rows] (its graph owns both).
struct SoftMaxGraph {
    Graph g;
    Tensor *x, *y;
    SoftMaxGraph(int64_t k, int64_t rows) {
        x = g.new_tensor(DType::F32, {k, rows}, "x");
        x->flags |= kFlagInput;
        y = build::soft_max(g, x);
        y->flags |= kFlagOutput;
        g.expand(y);
    }
};

TEST(NpuPlan, SoftMaxTakesOneRowPerWorkerOthersNothing) {
    SoftMaxGraph sm(1000, 4);
    // 1000 floats = 4000 bytes, rounded up to 64: 4032 per worker
    EXPECT_EQ(plan_scratch(*sm.y, DeviceBudget{1u << 20, 2}), 8064u);
    EXPECT_EQ(plan_scratch(*sm.y, DeviceBudget{1u << 20, 3}), 3u * 4032u);
    Tensor* sum = build::add(sm.g, sm.x, sm.x);
    EXPECT_EQ(plan_scratch(*sum, DeviceBudget{0, 2}), 0u);
    EXPECT_TRUE(plan_fits(*sum, DeviceBudget{0, 2}));
    EXPECT_TRUE(plan_fits(*sm.y, DeviceBudget{8064, 2}));
    EXPECT_FALSE(plan_fits(*sm.y, DeviceBudget{8063, 2}));
    const tsl_npu_kparams_header h = plan_header(*sm.y, DeviceBudget{8064, 2});
    EXPECT_EQ(h.scratch_bytes, 8064u);
    EXPECT_EQ(h.flags, 0u);
    try {
        plan_header(*sm.y, DeviceBudget{8063, 2});
        FAIL() << "no error for a plan past the budget";
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::Unsupported);
        EXPECT_NE(std::string(e.what()).find("8064 bytes of VTCM, the device has 8063"), std::string::npos) << e.what();
    }
}

TEST(NpuPlan, FlashAttnTakesQueryTilesAndAKeyBlockPerWorker) {
    Graph g;
    Tensor* q = g.new_tensor(DType::F32, {40, 7, 6}, "q");
    Tensor* k = g.new_tensor(DType::F16, {40, 100, 2}, "k");
    Tensor* v = g.new_tensor(DType::F16, {24, 100, 2}, "v");
    Tensor* out = build::flash_attn_ext(g, q, k, v, nullptr, 0.125f);
    // head dims 40 -> 48 and 24 -> 32 floats; per worker 64 query rows and accumulators, 16 keys
    // and values: (64 + 16) * (48 + 32) * 4 bytes
    const uint64_t per_worker = (64 + 16) * (48 + 32) * 4;
    EXPECT_EQ(plan_scratch(*out, DeviceBudget{1u << 20, 2}), 2 * per_worker);
    EXPECT_EQ(plan_flash_attn_qtile(*out, DeviceBudget{2 * per_worker, 2}), 64u);
    // a byte less: tiles of 63 query rows; the smallest plan is a tile of one row
    EXPECT_EQ(plan_flash_attn_qtile(*out, DeviceBudget{2 * per_worker - 1, 2}), 63u);
    EXPECT_EQ(plan_scratch(*out, DeviceBudget{2 * per_worker - 1, 2}), 2u * (63 + 16) * (48 + 32) * 4);
    const uint64_t one_row = 2 * (1 + 16) * (48 + 32) * 4;
    EXPECT_EQ(plan_flash_attn_qtile(*out, DeviceBudget{one_row, 2}), 1u);
    EXPECT_TRUE(plan_fits(*out, DeviceBudget{one_row, 2}));
    EXPECT_FALSE(plan_fits(*out, DeviceBudget{one_row - 1, 2}));
}

// Sets an environment variable for one test.
class ScopedEnv {
public:
    ScopedEnv(const char* name, const char* value) : name_(name) {
        if (const char* old = std::getenv(name)) {
            old_ = old;
            had_ = true;
        }
        setenv(name, value, 1);
    }
    ~ScopedEnv() {
        if (had_) setenv(name_, old_.c_str(), 1);
        else unsetenv(name_);
    }

private:
    const char* name_;
    std::string old_;
    bool had_ = false;
};

void fill(SoftMaxGraph& sm) {
    std::vector<float> v(static_cast<size_t>(sm.x->n_elements()));
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((i * 37) % 101) * 0.05f - 2.5f;
    sm.x->buffer->set_tensor(*sm.x, v.data(), 0, v.size() * 4);
}

void expect_softmax(const SoftMaxGraph& sm) {
    const int64_t k = sm.x->ne[0], rows = sm.x->n_rows();
    std::vector<float> x(static_cast<size_t>(k * rows)), y(x.size());
    sm.x->buffer->get_tensor(*sm.x, x.data(), 0, x.size() * 4);
    sm.y->buffer->get_tensor(*sm.y, y.data(), 0, y.size() * 4);
    for (int64_t r = 0; r < rows; ++r) {
        const float* xr = &x[static_cast<size_t>(r * k)];
        double max = -INFINITY, sum = 0.0;
        for (int64_t i = 0; i < k; ++i) max = std::max(max, static_cast<double>(xr[i]));
        for (int64_t i = 0; i < k; ++i) sum += std::exp(xr[i] - max);
        for (int64_t i = 0; i < k; ++i) {
            const double want = std::exp(xr[i] - max) / sum;
            ASSERT_NEAR(y[static_cast<size_t>(r * k + i)], want, 2e-5 * want) << r << "," << i;
        }
    }
}

class NpuPlanLinks : public ::testing::TestWithParam<LinkKind> {};

TEST_P(NpuPlanLinks, SmallVtcmSendsBigSoftMaxToTheCpu) {
    ScopedEnv vtcm("TESSEL_NPU_VTCM", "65536");
    Config cfg = config_from_env();
    ASSERT_EQ(cfg.vtcm_bytes, 65536u);
    cfg.link = GetParam();
    cfg.n_threads = 2;
    NpuDevice dev("NPU0", cfg);
    // 2 workers x 8192 floats = 65536 bytes: fits exactly; one float more does not
    SoftMaxGraph fits(8192, 2), past(8193, 2), big(16384, 3), small(1000, 3);
    EXPECT_TRUE(dev.supports_op(*fits.y));
    EXPECT_FALSE(dev.supports_op(*past.y));
    EXPECT_FALSE(dev.supports_op(*big.y));
    EXPECT_TRUE(dev.supports_op(*small.y));

    auto npu = dev.init_backend({});
    EXPECT_EQ(dev.session().hwinfo().vtcm_bytes, 65536u);  // what the device reports, used from now on
    EXPECT_EQ(dev.budget().vtcm_bytes, 65536u);
    EXPECT_EQ(dev.budget().n_threads, 2u);
    auto cpu = cpu::cpu_device().init_backend({2});
    for (SoftMaxGraph* sm : {&big, &small}) {
        Scheduler s({npu.get(), cpu.get()});
        s.allocate(sm->g);
        EXPECT_EQ(s.backend_of(*sm->y), sm == &big ? cpu.get() : npu.get());
        fill(*sm);
        s.compute();
        expect_softmax(*sm);
    }
}

INSTANTIATE_TEST_SUITE_P(Links, NpuPlanLinks, ::testing::Values(LinkKind::InProcess, LinkKind::Process),
                         [](const auto& info) { return info.param == LinkKind::Process ? "Process" : "InProcess"; });

}  // namespace
}  // namespace tessel::npu

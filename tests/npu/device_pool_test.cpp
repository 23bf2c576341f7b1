// The posix platform's worker pool (platform_posix.c) with a worker held back through the test
// hook, as a thread whose core is taken would be: parallel calls still finish right, and without
// waiting for it (a call waits for its parts, not for every worker; a worker that holds a part too
// long is benched). The time bounds are structural: 200 calls that waited for the held worker
// would take at least 200 x 20 ms = 4 s, the bound is 1 s.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "npu/posix/platform_posix.h"

namespace tessel::test {
namespace {

constexpr int kCalls = 200;
constexpr uint32_t kThreads = 2;
constexpr size_t kElements = 1024;
constexpr auto kHeld = std::chrono::milliseconds(20);

// One call's step: out[i] = 64 Lehmer rounds (x 48271 mod 2^31 - 1) of 3 in[i] + in[i + 1 mod n] +
// call, split by part. Every element depends on another part's input, so a part of the wrong call
// shows in the values; the rounds make a part last ~0.1 ms, long enough for the worker to claim
// one in most calls (it would hold most of them up if it were not benched).
uint32_t step(const std::vector<uint32_t>& in, size_t i, uint32_t call) {
    uint64_t v = (3ull * in[i] + in[(i + 1) % in.size()] + call) % 2147483647u;
    for (int r = 0; r < 64; ++r) v = v * 48271u % 2147483647u;
    return static_cast<uint32_t>(v);
}

struct Call {
    const std::vector<uint32_t>* in;
    std::vector<uint32_t>* out;
    uint32_t call;
    std::atomic<uint32_t> runs[kThreads];  // times each part ran
    std::atomic<uint32_t> bad_n;           // calls with n != kThreads
};

void run_part(void* arg, uint32_t part, uint32_t n) {
    auto* c = static_cast<Call*>(arg);
    if (n != kThreads || part >= kThreads) {
        c->bad_n.fetch_add(1);
        return;
    }
    c->runs[part].fetch_add(1);
    const size_t begin = kElements * part / n, end = kElements * (part + 1) / n;
    for (size_t i = begin; i < end; ++i) (*c->out)[i] = step(*c->in, i, c->call);
}

// What the hook does: which worker to hold, on which event, and (for HOLD) the first call's rule.
struct Holder {
    uint32_t event = ~0u;           // ~0: holds nobody
    std::atomic<bool> held{false};  // worker 1 has held a part
    bool first_call = true;         // the caller waits in its first claim until worker 1 holds a part
};

void hold(void* user, uint32_t worker, uint32_t event) {
    auto* h = static_cast<Holder*>(user);
    if (worker == 0) {
        // HOLD case, first call only: the caller claims nothing before worker 1 holds a part, so
        // worker 1 surely holds one in that call (bounded: a pool that never lets it claim fails)
        if (h->event == TSL_NPU_POSIX_HOOK_HOLD && h->first_call) {
            const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(10);
            while (!h->held.load() && std::chrono::steady_clock::now() < limit) std::this_thread::yield();
            h->first_call = false;
        }
        return;
    }
    if (worker != 1 || event != h->event) return;
    h->held.store(true);
    std::this_thread::sleep_for(kHeld);
}

// Runs kCalls dependent calls on a 2-thread pool with `hook` (hold on a Holder) in place; checks
// every value and that each part ran once per call. Returns the seconds the calls took (the
// expected values are computed before). A late worker may still be in the hook afterwards: hook
// and its Holder live until the platform is destroyed.
double run_calls(tsl_npu_platform* p, const tsl_npu_posix_hook* hook) {
    std::vector<uint32_t> a(kElements), b(kElements);
    std::vector<std::vector<uint32_t>> expect(kCalls + 1, std::vector<uint32_t>(kElements));
    for (size_t i = 0; i < kElements; ++i) a[i] = expect[0][i] = static_cast<uint32_t>(i * 7919u + 1u);
    for (int k = 0; k < kCalls; ++k)
        for (size_t i = 0; i < kElements; ++i) expect[k + 1][i] = step(expect[k], i, static_cast<uint32_t>(k));
    tsl_npu_posix_platform_set_test_hook(p, hook);
    const auto t0 = std::chrono::steady_clock::now();
    for (int k = 0; k < kCalls; ++k) {
        Call c{&a, &b, static_cast<uint32_t>(k), {}, {}};
        p->parallel(p->ctx, run_part, &c);
        EXPECT_EQ(c.bad_n.load(), 0u) << "call " << k;
        for (uint32_t part = 0; part < kThreads; ++part) EXPECT_EQ(c.runs[part].load(), 1u) << "call " << k;
        size_t wrong = 0;
        for (size_t i = 0; i < kElements; ++i) wrong += b[i] != expect[k + 1][i];
        EXPECT_EQ(wrong, 0u) << "call " << k;
        if (wrong) break;
        a.swap(b);
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    tsl_npu_posix_platform_set_test_hook(p, nullptr);
    return s;
}

class NpuPool : public ::testing::Test {
protected:
    void SetUp() override { ASSERT_EQ(tsl_npu_posix_platform_create(kThreads, 0, &platform_), TSL_NPU_OK); }
    void TearDown() override { tsl_npu_posix_platform_destroy(&platform_); }
    tsl_npu_platform platform_{};
    Holder holder_;
    const tsl_npu_posix_hook hook_{hold, &holder_};
};

TEST_F(NpuPool, WorkerLateBeforeEveryClaimHoldsNobodyUp) {
    holder_.event = TSL_NPU_POSIX_HOOK_CLAIM;
    const double s = run_calls(&platform_, &hook_);
    EXPECT_LT(s, 1.0) << "the calls waited for the held worker";
}

TEST_F(NpuPool, WorkerHeldWithAPartIsBenched) {
    holder_.event = TSL_NPU_POSIX_HOOK_HOLD;
    const double s = run_calls(&platform_, &hook_);
    EXPECT_TRUE(holder_.held.load());
    EXPECT_GE(tsl_npu_posix_platform_benched(&platform_), 1u);
    // benched, worker 1 sits out (probation 2 ms, doubling while it keeps holding parts 20 ms):
    // each hold costs a call 20 ms, and there are a handful, not 200
    EXPECT_LT(s, 1.0) << "the calls kept waiting for the held worker";
}

TEST_F(NpuPool, UnheldPoolRunsEveryPartOnce) {
    run_calls(&platform_, &hook_);  // holds nobody
    EXPECT_FALSE(holder_.held.load());
}

}  // namespace
}  // namespace tessel::test

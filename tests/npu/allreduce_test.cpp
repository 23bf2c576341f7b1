// The all-reduce communicator over in-process (and out-of-process) NPU sessions: 2, 3 and 4 ranks,
// 1-D and 2-D, odd sizes (empty shares included). Every rank must end with the rank-order float sum,
// bit for bit; bad arguments are errors naming the rank; a failing rank ends its peers' wait in one
// timeout error instead of a hang.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "npu/device/device.h"
#include "npu/device/faults.h"
#include "npu/host/allreduce.hpp"
#include "npu/host/backend.hpp"
#include "npu/host/device.hpp"
#include "tessel/errors.hpp"

namespace tessel::npu {
namespace {

Config rank_config(LinkKind kind, uint32_t fault = TSL_NPU_FAULT_NONE, uint32_t timeout_ms = 5000) {
    Config c;
    c.link = kind;
    c.fault = fault;
    c.timeout_ms = timeout_ms;
    if (const char* exe = std::getenv("TESSEL_NPU_DEVICE_EXE")) c.device_exe = exe;
    return c;
}

/// n NPU devices with a stream and one buffer each.
struct Ranks {
    std::vector<std::unique_ptr<NpuDevice>> devices;
    std::vector<std::unique_ptr<Backend>> streams;
    std::vector<std::unique_ptr<Buffer>> buffers;
    std::vector<std::unique_ptr<Tensor>> tensors;

    Ranks(size_t n, LinkKind kind, size_t bytes = 4 << 20) {
        for (size_t r = 0; r < n; ++r) {
            devices.push_back(std::make_unique<NpuDevice>("NPU" + std::to_string(r), rank_config(kind)));
            streams.push_back(devices.back()->init_backend({}));
            buffers.push_back(devices.back()->buffer_type().alloc_buffer(bytes));
        }
    }
    std::vector<Backend*> stream_ptrs() const {
        std::vector<Backend*> out;
        for (const auto& s : streams) out.push_back(s.get());
        return out;
    }
    /// A tensor of `ne` (up to 3 dims) in rank r's buffer at `offset`.
    Tensor& tensor(size_t r, const std::vector<int64_t>& ne, size_t offset = 0, DType type = DType::F32) {
        tensors.push_back(std::make_unique<Tensor>());
        Tensor& t = *tensors.back();
        t.set_shape(type, {ne[0], ne.size() > 1 ? ne[1] : 1, ne.size() > 2 ? ne[2] : 1});
        buffers[r]->init_tensor(t, offset);
        return t;
    }
};

float value(size_t rank, size_t i) {
    return static_cast<float>((i * 7 + rank * 13) % 101) * 0.37f - 15.0f + static_cast<float>(rank) * 0.001f;
}

struct Case {
    size_t ranks;
    AllReduceMode mode;
    std::vector<int64_t> ne;
    LinkKind link;
};

std::string case_name(const Case& c) {
    std::string s = std::to_string(c.ranks) + "Ranks" + (c.mode == AllReduceMode::Elements ? "1D" : "2D");
    for (int64_t n : c.ne) s += "_" + std::to_string(n);
    return s + (c.link == LinkKind::InProcess ? "" : "_Process");
}

class NpuAllReduce : public ::testing::TestWithParam<Case> {};

TEST_P(NpuAllReduce, EveryRankGetsTheRankOrderSum) {
    const Case& c = GetParam();
    Ranks ranks(c.ranks, c.link);
    std::vector<Tensor*> ts;
    const size_t n_el = static_cast<size_t>(c.ne[0] * (c.ne.size() > 1 ? c.ne[1] : 1) * (c.ne.size() > 2 ? c.ne[2] : 1));
    for (size_t r = 0; r < c.ranks; ++r) {
        Tensor& t = ranks.tensor(r, c.ne);
        std::vector<float> v(n_el);
        for (size_t i = 0; i < n_el; ++i) v[i] = value(r, i);
        t.buffer->set_tensor(t, v.data(), 0, n_el * sizeof(float));
        ts.push_back(&t);
    }
    const std::vector<Backend*> streams = ranks.stream_ptrs();
    Communicator comm(streams);
    EXPECT_EQ(comm.size(), c.ranks);
    for (int round = 0; round < 2; ++round) {  // twice: the second sums the first's results
        comm.allreduce(ts, c.mode);
        for (Backend* s : streams) s->synchronize();
    }
    std::vector<float> want(n_el);
    for (size_t i = 0; i < n_el; ++i) {
        float s = value(0, i);
        for (size_t r = 1; r < c.ranks; ++r) s += value(r, i);
        float s2 = s;
        for (size_t r = 1; r < c.ranks; ++r) s2 += s;
        want[i] = s2;
    }
    for (size_t r = 0; r < c.ranks; ++r) {
        std::vector<float> got(n_el);
        ts[r]->buffer->get_tensor(*ts[r], got.data(), 0, n_el * sizeof(float));
        size_t bad = 0;
        for (size_t i = 0; i < n_el; ++i) bad += got[i] != want[i];
        EXPECT_EQ(bad, 0u) << "rank " << r << ": first element " << got[0] << ", want " << want[0];
    }
}

std::vector<Case> cases() {
    std::vector<Case> out;
    for (size_t n : {2, 3, 4}) {
        out.push_back({n, AllReduceMode::Elements, {1000}, LinkKind::InProcess});
        out.push_back({n, AllReduceMode::Elements, {300}, LinkKind::InProcess});  // 4 ranks: the last share is empty
        out.push_back({n, AllReduceMode::Elements, {576, 512}, LinkKind::InProcess});
        out.push_back({n, AllReduceMode::Rows, {577, 5, 2}, LinkKind::InProcess});
        out.push_back({n, AllReduceMode::Rows, {33, 3}, LinkKind::InProcess});  // 4 ranks: rank 0 has no row
    }
    out.push_back({2, AllReduceMode::Elements, {1000}, LinkKind::Process});
    out.push_back({3, AllReduceMode::Rows, {577, 5, 2}, LinkKind::Process});
    return out;
}

INSTANTIATE_TEST_SUITE_P(Shapes, NpuAllReduce, ::testing::ValuesIn(cases()), [](const auto& info) { return case_name(info.param); });

TEST(NpuAllReduceShares, CoverEveryElementOnceInMultiplesOf128) {
    for (uint64_t count : {0ull, 1ull, 127ull, 128ull, 300ull, 1000ull, 294912ull})
        for (uint32_t n = 2; n <= 4; ++n)
            for (uint32_t mode : {0u, 1u}) {
                uint64_t next = 0;
                for (uint32_t r = 0; r < n; ++r) {
                    uint64_t lo = 0, hi = 0;
                    tsl_npu_allreduce_share(count, n, r, mode, &lo, &hi);
                    EXPECT_EQ(lo, next) << count << " " << n << " " << r;
                    EXPECT_LE(lo, hi);
                    if (mode == 0 && hi < count) {
                        EXPECT_EQ((hi - lo) % 128, 0u);
                    }
                    next = hi;
                }
                EXPECT_EQ(next, count) << count << " " << n << " mode " << mode;
            }
}

/// The message of the Error `f` throws ("" and a test failure when it does not).
template <class F>
std::string error_of(F&& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    ADD_FAILURE() << "no error";
    return "";
}

TEST(NpuAllReduceErrors, NameTheRankAndWhatWasExpected) {
    Ranks ranks(2, LinkKind::InProcess);
    const std::vector<Backend*> streams = ranks.stream_ptrs();
    EXPECT_NE(error_of([&] { Communicator({streams.data(), 1}); }).find("1 ranks; a communicator has 2 to 4"), std::string::npos);
    const std::vector<Backend*> same = {streams[0], streams[0]};
    EXPECT_NE(error_of([&] { Communicator c(same); }).find("rank 1 (NPU0) and NPU0 run on one device runtime"), std::string::npos);
    Communicator comm(streams);
    Tensor& a = ranks.tensor(0, {256});
    Tensor& b = ranks.tensor(1, {256});
    Tensor& wrong_shape = ranks.tensor(1, {255}, 4096);
    Tensor& f16 = ranks.tensor(1, {256}, 8192, DType::F16);
    Tensor& on_rank0 = ranks.tensor(0, {256}, 4096);
    const std::vector<Tensor*> one = {&a};
    EXPECT_NE(error_of([&] { comm.allreduce(one, AllReduceMode::Elements); }).find("1 tensors for 2 ranks"), std::string::npos);
    const std::vector<Tensor*> shape = {&a, &wrong_shape};
    EXPECT_NE(error_of([&] { comm.allreduce(shape, AllReduceMode::Elements); }).find("rank 1's tensor"), std::string::npos);
    const std::vector<Tensor*> type = {&a, &f16};
    EXPECT_NE(error_of([&] { comm.allreduce(type, AllReduceMode::Rows); }).find("F32 expected"), std::string::npos);
    const std::vector<Tensor*> place = {&a, &on_rank0};
    EXPECT_NE(error_of([&] { comm.allreduce(place, AllReduceMode::Elements); }).find("not in NPU1's memory"), std::string::npos);
    // Through the registry's entry point, as a backend user reaches it.
    auto* api = static_cast<AllReduceApi*>(ranks.devices[0]->proc("allreduce_comm"));
    ASSERT_NE(api, nullptr);
    AllReduceComm* c = api->init(streams.data(), 2);
    const std::vector<Tensor*> ok = {&a, &b};
    EXPECT_NE(error_of([&] { api->allreduce_tensor(c, ok.data(), 2, 7); }).find("mode 7"), std::string::npos);
    std::vector<float> va(256, 1.5f), vb(256, 2.25f);
    a.buffer->set_tensor(a, va.data(), 0, 1024);
    b.buffer->set_tensor(b, vb.data(), 0, 1024);
    api->allreduce_tensor(c, ok.data(), 2, 0);
    for (Backend* s : streams) s->synchronize();
    b.buffer->get_tensor(b, vb.data(), 0, 1024);
    EXPECT_EQ(vb[255], 3.75f);
    api->free(c);
}

TEST(NpuAllReduceErrors, AFailingRankEndsThePeersWaitAtTheTimeout) {
    NpuDevice good("NPU0", rank_config(LinkKind::InProcess, TSL_NPU_FAULT_NONE, 300));
    NpuDevice failing("NPU1", rank_config(LinkKind::InProcess, TSL_NPU_FAULT_STATUS, 300));
    auto s0 = good.init_backend({});
    auto s1 = failing.init_backend({});
    auto b0 = good.buffer_type().alloc_buffer(4096);
    auto b1 = failing.buffer_type().alloc_buffer(4096);
    Tensor t0, t1;
    t0.set_shape(DType::F32, {256});
    t1.set_shape(DType::F32, {256});
    b0->init_tensor(t0, 0);
    b1->init_tensor(t1, 0);
    const std::vector<Backend*> streams = {s0.get(), s1.get()};
    Communicator comm(streams);
    const std::vector<Tensor*> ts = {&t0, &t1};
    const auto start = std::chrono::steady_clock::now();
    comm.allreduce(ts, AllReduceMode::Elements);
    const std::string e1 = error_of([&] { s1->synchronize(); });
    const std::string e0 = error_of([&] { s0->synchronize(); });
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_NE(e1.find("INJECTED"), std::string::npos) << e1;
    EXPECT_NE(e0.find("TIMEOUT"), std::string::npos) << e0;
    EXPECT_LE(seconds, 0.3 + 1.0);
}

}  // namespace
}  // namespace tessel::npu

// NPU groups (docs/npu.md, "Groups"): a device of 2-4 ranks, each its own device runtime, whose
// streams split every matmul of a weight by rows. The products and what reads them after are
// bit-identical to one device's, every rank computes a part (its session sends batches), the
// consumer of a product waits for every part, and with split_rows off rank 0 runs everything.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "npu/device/device.h"
#include "npu/device/faults.h"
#include "npu/f32_tensors.hpp"
#include "npu/host/backend.hpp"
#include "npu/host/device.hpp"
#include "npu/host/session.hpp"
#include "quant/quant.hpp"
#include "tessel/errors.hpp"

namespace tessel::npu {
namespace {

Config test_config(LinkKind kind) {
    Config c;
    c.link = kind;
    c.timeout_ms = 30000;  // a rank waits for its peers' parts: seconds under ThreadSanitizer
    if (const char* exe = std::getenv("TESSEL_NPU_DEVICE_EXE")) c.device_exe = exe;
    return c;
}

/// NPU[0-(n-1)]: rank 0's session NPU0, peers NPU1.. (n = 1: a single device). The peers (or with
/// `slow_lead` rank 0) start every batch ~20 ms late (TSL_NPU_FAULT_SLOW), so a rank that went on
/// without waiting for the others would read rows not written yet.
std::unique_ptr<NpuDevice> make_group(size_t n, const Config& cfg, bool slow_lead = false) {
    if (n == 1) return std::make_unique<NpuDevice>("NPU0", cfg);
    Config slow = cfg;
    slow.fault = TSL_NPU_FAULT_SLOW;
    std::vector<std::unique_ptr<NpuDevice>> peers;
    for (size_t r = 1; r < n; ++r) peers.push_back(std::make_unique<NpuDevice>("NPU" + std::to_string(r), slow_lead ? cfg : slow));
    return std::make_unique<NpuDevice>("NPU[0-" + std::to_string(n - 1) + "]", "NPU0", slow_lead ? slow : cfg, nullptr, std::move(peers));
}

/// y = w . x for a Q4_0 weight w [K, N] (tiled), then z = y + y and u = w2 . z (a second split
/// matmul reading the first's product), on `dev`, in three rounds with other x (one graph_uid: the
/// later rounds replay the first's batches from the translation cache, with fresh fences); returns
/// z and u of every round.
struct Result {
    std::vector<float> z, u;
    uint64_t cache_hits = 0;
};

Result run(NpuDevice& dev, bool split_rows, int64_t n_rows, int64_t m_cols, uint64_t* peer_batches = nullptr) {
    constexpr int64_t K = 256;
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    Tensor w, w2;
    w.set_shape(DType::Q4_0, {K, n_rows});
    w2.set_shape(DType::Q4_0, {n_rows, K});
    for (Tensor* t : {&w, &w2}) t->flags |= kFlagWeight;
    auto weights = dev.buffer_type().alloc_buffer(dev.buffer_type().alloc_size(w) + dev.buffer_type().alloc_size(w2) + 256);
    weights->set_usage(BufferUsage::Weights);
    weights->init_tensor(w, 0);
    weights->init_tensor(w2, (dev.buffer_type().alloc_size(w) + 127) / 128 * 128);
    for (Tensor* t : {&w, &w2}) {
        std::vector<float> f(static_cast<size_t>(t->n_elements()));
        for (float& v : f) v = dist(rng);
        std::vector<uint8_t> q(t->n_bytes());
        quant::quantize_rows(DType::Q4_0, f.data(), q.data(), t->ne[1], t->ne[0]);
        weights->set_tensor(*t, q.data(), 0, q.size());
    }
    auto acts = dev.buffer_type().alloc_buffer(4 << 20);
    std::vector<std::unique_ptr<Tensor>> keep;
    size_t used = 0;
    auto tensor = [&](std::initializer_list<int64_t> ne, Op op, Tensor* a, Tensor* b) -> Tensor& {
        keep.push_back(std::make_unique<Tensor>());
        Tensor& t = *keep.back();
        t.set_shape(DType::F32, ne);
        t.op = op;
        t.src[0] = a;
        t.src[1] = b;
        acts->init_tensor(t, used);
        used += (t.n_bytes() + 127) / 128 * 128;
        return t;
    };
    Tensor& x = tensor({K, m_cols}, Op::NONE, nullptr, nullptr);
    Tensor& y = tensor({n_rows, m_cols}, Op::MUL_MAT, &w, &x);
    Tensor& z = tensor({n_rows, m_cols}, Op::ADD, &y, &y);
    Tensor& u = tensor({K, m_cols}, Op::MUL_MAT, &w2, &z);
    BackendParams params;
    params.split_rows = split_rows;
    auto backend = dev.init_backend(params);
    Result out;
    for (int round = 0; round < 3; ++round) {  // new activations over the same memory: stale rows would show
        fill_ramp(x, -3.0f + static_cast<float>(round));
        backend->graph_compute({&y, &z, &u}, 7);
        backend->synchronize();
        const std::vector<float> vz = read_f32(z), vu = read_f32(u);
        out.z.insert(out.z.end(), vz.begin(), vz.end());
        out.u.insert(out.u.end(), vu.begin(), vu.end());
    }
    out.cache_hits = dynamic_cast<NpuBackend&>(*backend).cache_hits();
    if (peer_batches) {
        *peer_batches = 0;
        for (const auto& peer : dev.peers()) *peer_batches += peer->session().last_seq();
    }
    return out;
}

class NpuGroup : public ::testing::TestWithParam<LinkKind> {};

TEST_P(NpuGroup, RanksComputeTheirRowsBitIdenticalToOneDevice) {
    const Config cfg = test_config(GetParam());
    // N = 224: 7 row tiles (uneven parts; with 4 ranks one has a single tile), M = 5 columns
    auto one = make_group(1, cfg);
    const Result want = run(*one, true, 224, 5);
    for (size_t ranks : {2, 3, 4}) {
        if (GetParam() == LinkKind::Process && ranks > 2) continue;  // 2 ranks show the link; more are the same code
        SCOPED_TRACE(std::to_string(ranks) + " ranks");
        auto group = make_group(ranks, cfg);
        uint64_t peer_batches = 0;
        const Result got = run(*group, true, 224, 5, &peer_batches);
        EXPECT_EQ(0, std::memcmp(got.z.data(), want.z.data(), want.z.size() * sizeof(float))) << "the first product's consumer";
        EXPECT_EQ(0, std::memcmp(got.u.data(), want.u.data(), want.u.size() * sizeof(float))) << "the second split matmul";
        EXPECT_GE(peer_batches, 3 * (ranks - 1)) << "the peers computed nothing";
        EXPECT_EQ(got.cache_hits, 2u) << "rounds 2 and 3 replay the first's batches";
    }
    // rank 0 lagging: a peer's part of the second matmul must wait for rank 0's z (in the replayed
    // rounds too: a fence value left from the first round would let it start at once)
    auto lagging = make_group(2, cfg, true);
    const Result got = run(*lagging, true, 224, 5);
    EXPECT_EQ(0, std::memcmp(got.u.data(), want.u.data(), want.u.size() * sizeof(float))) << "rank 0 lagging";
    EXPECT_EQ(got.cache_hits, 2u);
}

TEST_P(NpuGroup, WithoutSplitRowsRankZeroRunsEverything) {
    const Config cfg = test_config(GetParam());
    auto one = make_group(1, cfg);
    const Result want = run(*one, true, 96, 3);
    auto group = make_group(2, cfg);
    uint64_t peer_batches = 1;
    const Result got = run(*group, false, 96, 3, &peer_batches);
    EXPECT_EQ(got.u, want.u);
    EXPECT_EQ(peer_batches, 0u);
}

TEST_P(NpuGroup, AStalledRankEndsTheRunInOneErrorWithinTheTimeout) {
    Config cfg = test_config(GetParam());
    cfg.timeout_ms = 300;
    Config hang = cfg;
    hang.fault = TSL_NPU_FAULT_HANG;
    std::vector<std::unique_ptr<NpuDevice>> peers;
    peers.push_back(std::make_unique<NpuDevice>("NPU1", hang));
    NpuDevice group("NPU[0-1]", "NPU0", cfg, nullptr, std::move(peers));
    const auto t0 = std::chrono::steady_clock::now();
    std::string message;
    try {
        run(group, true, 96, 3);
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::Device);
        message = e.what();
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_NE(message.find("TIMEOUT"), std::string::npos) << message;
    EXPECT_LE(seconds, cfg.timeout_ms / 1000.0 + 1.0);
}

std::string link_name(const ::testing::TestParamInfo<LinkKind>& info) {
    return info.param == LinkKind::InProcess ? "InProcess" : "Process";
}

INSTANTIATE_TEST_SUITE_P(Links, NpuGroup, ::testing::Values(LinkKind::InProcess, LinkKind::Process), link_name);

}  // namespace
}  // namespace tessel::npu

// The device forms of fused ops (the host's fusion, npu/host/fusion.hpp) run through
// tsl_npu_device_run on the posix platform, against values computed here: RMS_NORM with a weight
// src1; MUL_MAT with biases and several outputs sharing src1; MUL_MAT_ID with several outputs
// sharing activations and ids. Their checks refuse operands that do not fit the forms.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "npu/device_batch.hpp"

namespace tessel::test {
namespace {

float pattern(int64_t i, float scale) { return static_cast<float>((i * 37) % 101 - 50) * scale + 0.1f; }

uint32_t f32_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

/// The flat kernel's kparams (header and body) for k, rows of activations and experts.
void flat_kparams(tsl_npu_op_desc& op, int64_t k, int64_t rows, int64_t experts) {
    const tsl_npu_kparams_header h{static_cast<uint32_t>(tsl_npu_matmul_scratch(TSL_NPU_MM_FLAT, 0, 0, k, rows, experts, 2)), 0};
    const tsl_npu_matmul_kparams kp{TSL_NPU_MM_FLAT, 0, 0, 0, 0, 0, 0};  // one step, default chunk, every worker
    std::memcpy(op.kparams, &h, sizeof h);
    std::memcpy(op.kparams + TSL_NPU_KPARAMS_BODY, &kp, sizeof kp);
}

/// Fills `n` floats at byte `offset` of the data buffer with a pattern; returns them.
std::vector<float> fill(float* p, int64_t n, int64_t seed, float scale) {
    std::vector<float> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) p[i] = v[static_cast<size_t>(i)] = pattern(i + seed, scale);
    return v;
}

using NpuDeviceFusion = DeviceTest;

TEST_F(NpuDeviceFusion, RmsNormTimesAWeightRowBroadcast) {
    const int64_t n0 = 80;
    const Ne nx{n0, 3, 2, 1}, nw{n0, 1, 2, 1};
    const std::vector<float> x = fill(at<float>(0), n0 * 6, 0, 0.05f);
    const std::vector<float> w = fill(at<float>(4096), n0 * 2, 7, 0.02f);
    const float eps = 1e-5f;
    BatchBuilder bb;
    const uint32_t buf = bb.buffer(data_);
    const uint16_t tx = bb.tensor(buf, TSL_NPU_TYPE_F32, 0, nx);
    const uint16_t tw = bb.tensor(buf, TSL_NPU_TYPE_F32, 4096, nw);
    const uint16_t td = bb.tensor(buf, TSL_NPU_TYPE_F32, 8192, nx);
    bb.op(TSL_NPU_OP_RMS_NORM, {tx, tw}, {td}).params[0] = static_cast<int32_t>(f32_bits(eps));
    ASSERT_EQ(run(bb), TSL_NPU_OK);
    const float* d = at<float>(8192);
    for (int64_t r = 0; r < 6; ++r) {
        double sq = 0.0;
        for (int64_t i = 0; i < n0; ++i) sq += static_cast<double>(x[r * n0 + i]) * x[r * n0 + i];
        const double inv = 1.0 / std::sqrt(sq / static_cast<double>(n0) + eps);
        const int64_t wr = r / 3;  // i2 of row r, the weight's row
        for (int64_t i = 0; i < n0; ++i) {
            const double want = x[r * n0 + i] * inv * w[wr * n0 + i];
            ASSERT_NEAR(d[r * n0 + i], want, 1e-6 * std::fabs(want) + 1e-7) << r << "," << i;
        }
    }
}

TEST_F(NpuDeviceFusion, NormWeightOfAnotherShapeIsRefused) {
    for (const Ne nw : {Ne{40, 1, 1, 1}, Ne{80, 2, 1, 1}}) {  // another row length; rows not dividing 3
        BatchBuilder bb;
        const uint32_t buf = bb.buffer(data_);
        const uint16_t tx = bb.tensor(buf, TSL_NPU_TYPE_F32, 0, {80, 3, 1, 1});
        const uint16_t tw = bb.tensor(buf, TSL_NPU_TYPE_F32, 4096, nw);
        const uint16_t td = bb.tensor(buf, TSL_NPU_TYPE_F32, 8192, {80, 3, 1, 1});
        bb.op(TSL_NPU_OP_RMS_NORM, {tx, tw}, {td});
        EXPECT_EQ(run(bb), TSL_NPU_ERR_BAD_TYPE) << nw[0] << "x" << nw[1];
    }
}

TEST_F(NpuDeviceFusion, MatmulWithBiasesAndThreeOutputsMatchesTheReference) {
    const int64_t K = 64, M = 5;
    const int64_t ns[3] = {40, 24, 33};
    uint64_t off = 0;
    auto take = [&](int64_t floats) {
        const uint64_t o = off;
        off += (static_cast<uint64_t>(floats) * 4 + 255) / 256 * 256;
        return o;
    };
    const uint64_t x_off = take(K * M);
    const std::vector<float> x = fill(at<float>(x_off), K * M, 3, 0.03f);
    BatchBuilder bb;
    const uint32_t buf = bb.buffer(data_);
    const uint16_t tx = bb.tensor(buf, TSL_NPU_TYPE_F32, x_off, {K, M, 1, 1});
    std::vector<std::vector<float>> w(3), b(3);
    uint64_t d_off[3];
    std::vector<uint16_t> src(7, TSL_NPU_NONE), dst;
    src[1] = tx;
    for (int o = 0; o < 3; ++o) {
        const uint64_t w_off = take(K * ns[o]), b_off = take(ns[o]);
        d_off[o] = take(ns[o] * M);
        w[o] = fill(at<float>(w_off), K * ns[o], 11 * o, 0.01f);
        b[o] = fill(at<float>(b_off), ns[o], 5 + o, 0.2f);
        const size_t ws = o == 0 ? 0 : 1 + 2 * o;
        src[ws] = bb.tensor(buf, TSL_NPU_TYPE_F32, w_off, {K, ns[o], 1, 1});
        src[2 + 2 * o] = bb.tensor(buf, TSL_NPU_TYPE_F32, b_off, {ns[o], 1, 1, 1});
        dst.push_back(bb.tensor(buf, TSL_NPU_TYPE_F32, d_off[o], {ns[o], M, 1, 1}));
    }
    tsl_npu_op_desc& op = bb.op(TSL_NPU_OP_MUL_MAT, {}, {});
    std::copy(src.begin(), src.end(), op.src);
    std::copy(dst.begin(), dst.end(), op.dst);
    flat_kparams(op, K, M, 0);
    ASSERT_EQ(run(bb), TSL_NPU_OK);
    for (int o = 0; o < 3; ++o) {
        const float* d = at<float>(d_off[o]);
        for (int64_t m = 0; m < M; ++m)
            for (int64_t n = 0; n < ns[o]; ++n) {
                double want = 0.0;
                for (int64_t k = 0; k < K; ++k) want += static_cast<double>(w[o][n * K + k]) * x[m * K + k];
                want += b[o][n];
                ASSERT_NEAR(d[m * ns[o] + n], want, 1e-5 * (std::fabs(want) + 1.0)) << "output " << o << " (" << n << "," << m << ")";
            }
    }
}

/// An edit of the operands of MUL_MAT w [64, 16] . x [64, 5] -> dst [16, 5], and the status it gets.
struct Bad {
    const char* what;
    int32_t status;
    void (*edit)(BatchBuilder& bb, tsl_npu_op_desc& op, uint32_t buf);
};

TEST_F(NpuDeviceFusion, MatmulOperandsOutsideTheFormsAreRefused) {
    const Bad cases[] = {
        {"second weight of another K", TSL_NPU_ERR_BAD_TYPE,
         [](BatchBuilder& bb, tsl_npu_op_desc& op, uint32_t buf) {
             op.src[3] = bb.tensor(buf, TSL_NPU_TYPE_F32, 65536, {32, 16, 1, 1});
             op.dst[1] = bb.tensor(buf, TSL_NPU_TYPE_F32, 131072, {16, 5, 1, 1});
         }},
        {"second weight of another type", TSL_NPU_ERR_BAD_TYPE,
         [](BatchBuilder& bb, tsl_npu_op_desc& op, uint32_t buf) {
             op.src[3] = bb.tensor(buf, TSL_NPU_TYPE_F16, 65536, {64, 16, 1, 1});
             op.dst[1] = bb.tensor(buf, TSL_NPU_TYPE_F32, 131072, {16, 5, 1, 1});
         }},
        {"second dst of another N", TSL_NPU_ERR_BAD_TYPE,
         [](BatchBuilder& bb, tsl_npu_op_desc& op, uint32_t buf) {
             op.src[3] = bb.tensor(buf, TSL_NPU_TYPE_F32, 65536, {64, 16, 1, 1});
             op.dst[1] = bb.tensor(buf, TSL_NPU_TYPE_F32, 131072, {8, 5, 1, 1});
         }},
        {"second dst without its weight", TSL_NPU_ERR_BAD_DESC,
         [](BatchBuilder& bb, tsl_npu_op_desc& op, uint32_t buf) {
             op.dst[1] = bb.tensor(buf, TSL_NPU_TYPE_F32, 131072, {16, 5, 1, 1});
         }},
        {"a weight past the last output", TSL_NPU_ERR_BAD_DESC,
         [](BatchBuilder& bb, tsl_npu_op_desc& op, uint32_t buf) {
             op.src[3] = bb.tensor(buf, TSL_NPU_TYPE_F32, 65536, {64, 16, 1, 1});
         }},
        {"a bias past the last output", TSL_NPU_ERR_BAD_DESC,
         [](BatchBuilder& bb, tsl_npu_op_desc& op, uint32_t buf) {
             op.src[4] = bb.tensor(buf, TSL_NPU_TYPE_F32, 65536, {16, 1, 1, 1});
         }},
        {"a bias of another N", TSL_NPU_ERR_BAD_TYPE,
         [](BatchBuilder& bb, tsl_npu_op_desc& op, uint32_t buf) {
             op.src[2] = bb.tensor(buf, TSL_NPU_TYPE_F32, 65536, {15, 1, 1, 1});
         }},
        {"a bias of two rows", TSL_NPU_ERR_BAD_TYPE,
         [](BatchBuilder& bb, tsl_npu_op_desc& op, uint32_t buf) {
             op.src[2] = bb.tensor(buf, TSL_NPU_TYPE_F32, 65536, {16, 2, 1, 1});
         }},
        {"an F16 bias", TSL_NPU_ERR_BAD_TYPE,
         [](BatchBuilder& bb, tsl_npu_op_desc& op, uint32_t buf) {
             op.src[2] = bb.tensor(buf, TSL_NPU_TYPE_F16, 65536, {16, 1, 1, 1});
         }},
    };
    for (const Bad& c : cases) {
        BatchBuilder bb;
        const uint32_t buf = bb.buffer(data_);
        const uint16_t tw = bb.tensor(buf, TSL_NPU_TYPE_F32, 0, {64, 16, 1, 1});
        const uint16_t tx = bb.tensor(buf, TSL_NPU_TYPE_F32, 8192, {64, 5, 1, 1});
        const uint16_t td = bb.tensor(buf, TSL_NPU_TYPE_F32, 16384, {16, 5, 1, 1});
        tsl_npu_op_desc& op = bb.op(TSL_NPU_OP_MUL_MAT, {tw, tx}, {td});
        flat_kparams(op, 64, 5, 0);
        c.edit(bb, op, buf);
        EXPECT_EQ(run(bb), c.status) << c.what;
    }
}

TEST_F(NpuDeviceFusion, MatmulIdWithTwoOutputsSharingIdsMatchesTheReference) {
    const int64_t K = 64, U = 2, T = 4, E = 3;
    const int64_t ns[2] = {16, 40};
    const std::vector<float> x = fill(at<float>(0), K * U * T, 1, 0.03f);
    int32_t* ids = at<int32_t>(4096);
    const int32_t id_values[U * T] = {0, 2, 1, 1, 2, 7, 0, 1};  // 7: out of range, a zero column
    std::memcpy(ids, id_values, sizeof id_values);
    BatchBuilder bb;
    const uint32_t buf = bb.buffer(data_);
    const uint16_t tx = bb.tensor(buf, TSL_NPU_TYPE_F32, 0, {K, U, T, 1});
    const uint16_t tids = bb.tensor(buf, TSL_NPU_TYPE_I32, 4096, {U, T, 1, 1});
    std::vector<float> w[2];
    uint16_t tw[2], td[2];
    const uint64_t w_off[2] = {8192, 8192 + 65536}, d_off[2] = {262144, 262144 + 8192};
    for (int o = 0; o < 2; ++o) {
        w[o] = fill(at<float>(w_off[o]), K * ns[o] * E, 13 * o, 0.01f);
        tw[o] = bb.tensor(buf, TSL_NPU_TYPE_F32, w_off[o], {K, ns[o], E, 1});
        td[o] = bb.tensor(buf, TSL_NPU_TYPE_F32, d_off[o], {ns[o], U, T, 1});
    }
    tsl_npu_op_desc& op = bb.op(TSL_NPU_OP_MUL_MAT_ID, {tw[0], tx, tids, tw[1]}, {td[0], td[1]});
    flat_kparams(op, K, U * T, E);
    ASSERT_EQ(run(bb), TSL_NPU_OK);
    for (int o = 0; o < 2; ++o) {
        const float* d = at<float>(d_off[o]);
        for (int64_t t = 0; t < T; ++t)
            for (int64_t e = 0; e < U; ++e) {
                const int32_t id = id_values[t * U + e];
                for (int64_t n = 0; n < ns[o]; ++n) {
                    double want = 0.0;
                    if (id >= 0 && id < E)
                        for (int64_t k = 0; k < K; ++k)
                            want += static_cast<double>(w[o][(id * ns[o] + n) * K + k]) * x[(t * U + e % U) * K + k];
                    ASSERT_NEAR(d[(t * U + e) * ns[o] + n], want, 1e-5 * (std::fabs(want) + 1.0))
                        << "output " << o << " (" << n << "," << e << "," << t << ")";
                }
            }
    }
}

}  // namespace
}  // namespace tessel::test

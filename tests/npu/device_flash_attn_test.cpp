// The device's FLASH_ATTN_EXT (src/npu/device/ops_flash_attn.c) run through tsl_npu_device_run on
// the posix platform (2 workers), against attention computed here in double by the reference's
// formulas (src/cpu/ref/flash_attn.cpp) from the same F16 / Q8_0 values: the plain C kernel (the
// platform's isa bits cleared) always, the AVX-512 one too where the CPU has it, whose output must
// equal the C kernel's bit for bit; and the checks that refuse what the op does not take, and a
// plan stating too little scratch.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "core/fp16.hpp"
#include "npu/device_batch.hpp"

namespace tessel::test {
namespace {

constexpr uint64_t kQ8Block = 34;  // GGUF Q8_0: fp16 d, 32 int8

float pattern(int64_t i, float scale) { return static_cast<float>((i * 37) % 101 - 50) * scale + 0.05f; }

void set_f32(tsl_npu_op_desc& op, int i, float v) { std::memcpy(&op.params[i], &v, 4); }

void state_scratch(tsl_npu_op_desc& op, uint64_t bytes) {
    const tsl_npu_kparams_header h{static_cast<uint32_t>(bytes), 0};
    std::memcpy(op.kparams, &h, sizeof h);
}

// K or V [d, kv, heads] in F16 or Q8_0 (contiguous), and its values as the kernel reads them.
struct KvTensor {
    uint32_t type;
    int64_t d, kv, heads;
    uint64_t offset;
    std::vector<float> values;  // [d, kv, heads], dequantized

    uint64_t row_bytes() const { return type == TSL_NPU_TYPE_F16 ? d * 2 : d / 32 * kQ8Block; }
    uint64_t bytes() const { return row_bytes() * kv * heads; }

    void write(uint8_t* base, float scale) {
        values.resize(static_cast<size_t>(d * kv * heads));
        for (int64_t r = 0; r < kv * heads; ++r) {
            uint8_t* row = base + offset + r * row_bytes();
            for (int64_t i = 0; i < d; i += 32) {
                const int64_t n = std::min<int64_t>(32, d - i);
                if (type == TSL_NPU_TYPE_F16) {
                    for (int64_t e = 0; e < n; ++e) {
                        const uint16_t h = fp32_to_fp16(pattern(r * d + i + e, scale));
                        std::memcpy(row + (i + e) * 2, &h, 2);
                        values[static_cast<size_t>(r * d + i + e)] = fp16_to_fp32(h);
                    }
                    continue;
                }
                uint8_t* blk = row + i / 32 * kQ8Block;
                const uint16_t dh = fp32_to_fp16(scale);
                std::memcpy(blk, &dh, 2);
                for (int64_t e = 0; e < 32; ++e) {
                    const auto q = static_cast<int8_t>((r * 7 + e * 13) % 255 - 127);
                    blk[2 + e] = static_cast<uint8_t>(q);
                    values[static_cast<size_t>(r * d + i + e)] = static_cast<float>(q) * fp16_to_fp32(dh);
                }
            }
        }
    }
    uint16_t add(BatchBuilder& bb, uint32_t buf) const {
        const uint64_t eb = type == TSL_NPU_TYPE_F16 ? 2 : kQ8Block;
        const uint16_t id = bb.tensor(buf, type, offset, {d, kv, heads, 1}, {eb, row_bytes(), row_bytes() * kv, bytes()});
        bb.tensors.back().size = bytes();
        return id;
    }
};

struct Attn {
    int64_t D, Dv, T, H, KV;
    float scale, softcap;
    double m0;  // ALiBi base of every head (n_head_log2 = H: slope m0^(h + 1)); 1 = no ALiBi
};

// out[Dv, H, T] in double, the reference's formulas; mask [KV, T] F32 shared by the heads.
std::vector<double> attention(const Attn& a, const std::vector<float>& q, const KvTensor& k, const KvTensor& v,
                              const std::vector<float>& mask, const std::vector<float>* sinks) {
    const int64_t group = a.H / k.heads;
    std::vector<double> out(static_cast<size_t>(a.Dv * a.H * a.T), 0.0);
    for (int64_t h = 0; h < a.H; ++h) {
        const double slope = std::pow(a.m0, static_cast<double>(h + 1));
        for (int64_t t = 0; t < a.T; ++t) {
            std::vector<double> s(static_cast<size_t>(a.KV));
            double max = sinks ? (*sinks)[h] : -INFINITY;
            for (int64_t j = 0; j < a.KV; ++j) {
                const float mv = mask[static_cast<size_t>(t * a.KV + j)];
                if (std::isinf(mv)) {
                    s[j] = -INFINITY;
                    continue;
                }
                double dot = 0.0;
                for (int64_t e = 0; e < a.D; ++e)
                    dot += static_cast<double>(q[(h * a.T + t) * a.D + e]) * k.values[(h / group * a.KV + j) * a.D + e];
                double score = dot * a.scale;
                if (a.softcap != 0.0f) score = a.softcap * std::tanh(score / a.softcap);
                s[j] = score + slope * mv;
                max = std::max(max, s[j]);
            }
            if (max == -INFINITY) continue;
            double sum = sinks ? std::exp((*sinks)[h] - max) : 0.0;
            double* o = &out[static_cast<size_t>((t * a.H + h) * a.Dv)];
            for (int64_t j = 0; j < a.KV; ++j) {
                if (s[j] == -INFINITY) continue;
                const double w = std::exp(s[j] - max);
                sum += w;
                for (int64_t e = 0; e < a.Dv; ++e) o[e] += w * v.values[(h / group * a.KV + j) * a.Dv + e];
            }
            for (int64_t e = 0; e < a.Dv; ++e) o[e] /= sum;
        }
    }
    return out;
}

class NpuDeviceFlashAttn : public DeviceTest {
protected:
    // Runs the case with the plain C kernel, then with each ISA build the platform has (AVX2,
    // AVX-512): every build gives the C kernel's bits.
    void run_and_compare(const Attn& a, uint32_t kv_type, int64_t h_kv, bool with_sinks, uint32_t q_tile = 0) {
        const uint32_t host_isa = device_->platform.isa;
        tsl_npu_device_use_isa(device_.get(), 0);
        std::vector<float> c_out;
        ASSERT_NO_FATAL_FAILURE(run_kernel(a, kv_type, h_kv, with_sinks, q_tile, c_out));
        for (const uint32_t isa : {TSL_NPU_ISA_AVX2, TSL_NPU_ISA_AVX512}) {
            if (!(host_isa & isa)) continue;  // no such build to compare on this CPU
            tsl_npu_device_use_isa(device_.get(), isa);
            std::vector<float> isa_out;
            ASSERT_NO_FATAL_FAILURE(run_kernel(a, kv_type, h_kv, with_sinks, q_tile, isa_out));
            ASSERT_EQ(std::memcmp(isa_out.data(), c_out.data(), c_out.size() * 4), 0) << "isa " << isa;
        }
        tsl_npu_device_use_isa(device_.get(), host_isa);
    }
    void run_kernel(const Attn& a, uint32_t kv_type, int64_t h_kv, bool with_sinks, uint32_t q_tile,
                    std::vector<float>& got);
};

// Runs the op over q [D, T, H] F32, k, v, mask [KV, T] F32 (optional sinks [H]) and compares
// with attention() in double: every output within 1e-5 of the reference (values of order 1).
// The output [Dv, H, T] goes to `got`.
void NpuDeviceFlashAttn::run_kernel(const Attn& a, uint32_t kv_type, int64_t h_kv, bool with_sinks, uint32_t q_tile,
                                    std::vector<float>& got) {
    uint8_t* base = at<uint8_t>(0);
    std::vector<float> q(static_cast<size_t>(a.D * a.T * a.H)), mask(static_cast<size_t>(a.KV * a.T));
    for (size_t i = 0; i < q.size(); ++i) q[i] = pattern(static_cast<int64_t>(i) + 3, 0.02f);
    for (int64_t t = 0; t < a.T; ++t)
        for (int64_t j = 0; j < a.KV; ++j)  // causal -inf past t + KV - T; the last row fully masked
            mask[t * a.KV + j] = (j > t + a.KV - a.T || t == a.T - 1) ? -INFINITY : pattern(t * a.KV + j, 0.01f);
    std::vector<float> sinks(static_cast<size_t>(a.H));
    for (int64_t h = 0; h < a.H; ++h) sinks[h] = 0.5f - 0.3f * static_cast<float>(h);
    KvTensor k{kv_type, a.D, a.KV, h_kv, 0, {}}, v{kv_type, a.Dv, a.KV, h_kv, 0, {}};
    const uint64_t q_off = 0, mask_off = 128 * 1024, sink_off = 192 * 1024, out_off = 256 * 1024;
    k.offset = 384 * 1024;
    v.offset = 640 * 1024;
    ASSERT_LE(q.size() * 4, mask_off);
    ASSERT_LE(mask.size() * 4, sink_off - mask_off);
    ASSERT_LE(static_cast<uint64_t>(a.Dv * a.H * a.T) * 4, k.offset - out_off);
    ASSERT_LE(k.bytes(), v.offset - k.offset);
    ASSERT_LE(v.offset + v.bytes(), data_.size());
    std::memcpy(base + q_off, q.data(), q.size() * 4);
    std::memcpy(base + mask_off, mask.data(), mask.size() * 4);
    std::memcpy(base + sink_off, sinks.data(), sinks.size() * 4);
    k.write(base, 0.03f);
    v.write(base, 0.05f);

    BatchBuilder bb;
    const uint32_t buf = bb.buffer(data_);
    const uint16_t tq = bb.tensor(buf, TSL_NPU_TYPE_F32, q_off, {a.D, a.T, a.H, 1});
    const uint16_t tk = k.add(bb, buf);
    const uint16_t tv = v.add(bb, buf);
    const uint16_t tm = bb.tensor(buf, TSL_NPU_TYPE_F32, mask_off, {a.KV, a.T, 1, 1});
    const uint16_t ts = bb.tensor(buf, TSL_NPU_TYPE_F32, sink_off, {a.H, 1, 1, 1});
    const uint16_t td = bb.tensor(buf, TSL_NPU_TYPE_F32, out_off, {a.Dv, a.H, a.T, 1});
    tsl_npu_op_desc& op = with_sinks ? bb.op(TSL_NPU_OP_FLASH_ATTN_EXT, {tq, tk, tv, tm, ts}, {td})
                                     : bb.op(TSL_NPU_OP_FLASH_ATTN_EXT, {tq, tk, tv, tm}, {td});
    set_f32(op, 0, a.scale);
    set_f32(op, 2, a.softcap);
    const tsl_npu_flash_attn_kparams kp{{a.m0, a.m0, a.H}, q_tile, 0};
    std::memcpy(op.kparams + TSL_NPU_KPARAMS_BODY, &kp, sizeof kp);
    state_scratch(op, tsl_npu_flash_attn_scratch(a.D, a.Dv, q_tile, 2));
    ASSERT_EQ(run(bb), TSL_NPU_OK);
    const std::vector<double> want = attention(a, q, k, v, mask, with_sinks ? &sinks : nullptr);
    const float* out = at<float>(out_off);
    for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(out[i], want[i], 1e-5) << i;
    // the fully masked query row: zeros without a sink (a sink alone gives zeros too)
    for (int64_t e = 0; e < a.Dv * a.H; ++e) ASSERT_EQ(out[(a.T - 1) * a.H * a.Dv + e], 0.0f);
    got.assign(out, out + want.size());
}

TEST_F(NpuDeviceFlashAttn, F16GqaMaskAcrossBlocksOnBothWorkers) {
    // 24 query rows of 3 K/V heads, KV not a multiple of 16, head dims not multiples of 16
    run_and_compare(Attn{40, 24, 4, 6, 53, 0.158f, 0.0f, 1.0}, TSL_NPU_TYPE_F16, 2, false);
}

TEST_F(NpuDeviceFlashAttn, PromptShapeInRowGroupsOf8And4And2And1) {
    // the default model's attention (head dim 64, 9 query heads on 3 K/V heads) for a 47-token
    // prompt: runs of 47 rows per K/V head scored in groups of 8, 4, 2 and 1 rows
    run_and_compare(Attn{64, 64, 47, 9, 61, 0.125f, 0.0f, 1.0}, TSL_NPU_TYPE_F16, 3, false);
}

TEST_F(NpuDeviceFlashAttn, PlannedQueryTileOf5RowsGivesTheReferenceInItsSmallerScratch) {
    // a 47-token prompt in runs of 5 query rows (the host's plan for a small VTCM), the scratch
    // stated for 5-row tiles
    run_and_compare(Attn{64, 64, 47, 9, 61, 0.125f, 0.0f, 1.0}, TSL_NPU_TYPE_F16, 3, false, 5);
}

TEST_F(NpuDeviceFlashAttn, Q8SinksAlibiSoftcap) {
    run_and_compare(Attn{64, 64, 3, 4, 37, 0.125f, 2.5f, 0.7}, TSL_NPU_TYPE_Q8_0, 4, true);
}

TEST_F(NpuDeviceFlashAttn, ChecksRefuseWhatTheKernelDoesNotTake) {
    struct Variant {
        const char* name;
        uint32_t k_type;
        Ne k_ne, out_ne;
        uint64_t k_nb0;
        int32_t want;
    };
    const Variant variants[] = {
        {"ok", TSL_NPU_TYPE_F16, {32, 20, 2, 1}, {32, 4, 3, 1}, 2, TSL_NPU_OK},
        {"Q4_0 k", TSL_NPU_TYPE_Q4_0, {32, 20, 2, 1}, {32, 4, 3, 1}, 18, TSL_NPU_ERR_BAD_TYPE},
        {"3 k heads for 4", TSL_NPU_TYPE_F16, {32, 20, 3, 1}, {32, 4, 3, 1}, 2, TSL_NPU_ERR_BAD_TYPE},
        {"k dim != q dim", TSL_NPU_TYPE_F16, {16, 20, 2, 1}, {32, 4, 3, 1}, 2, TSL_NPU_ERR_BAD_TYPE},
        {"dst not [Dv, H, T]", TSL_NPU_TYPE_F16, {32, 20, 2, 1}, {32, 3, 4, 1}, 2, TSL_NPU_ERR_BAD_TYPE},
        {"Q8_0 k with element stride", TSL_NPU_TYPE_Q8_0, {32, 20, 2, 1}, {32, 4, 3, 1}, 1, TSL_NPU_ERR_BAD_TYPE},
    };
    for (const Variant& w : variants) {
        BatchBuilder bb;
        const uint32_t buf = bb.buffer(data_);
        const uint16_t tq = bb.tensor(buf, TSL_NPU_TYPE_F32, 0, {32, 3, 4, 1});
        const uint64_t row = w.k_type == TSL_NPU_TYPE_F16 ? 64 : 40;
        const uint16_t tk = bb.tensor(buf, TSL_NPU_TYPE_F32, 8192, w.k_ne,
                                      {w.k_nb0, row, row * static_cast<uint64_t>(w.k_ne[1]), 8192});
        bb.tensors.back().type = w.k_type;
        bb.tensors.back().size = row * static_cast<uint64_t>(w.k_ne[1] * w.k_ne[2]);
        const uint16_t tv = bb.tensor(buf, TSL_NPU_TYPE_F16, 16384, {32, 20, 2, 1});
        const uint16_t td = bb.tensor(buf, TSL_NPU_TYPE_F32, 32768, w.out_ne);
        state_scratch(bb.op(TSL_NPU_OP_FLASH_ATTN_EXT, {tq, tk, tv}, {td}), tsl_npu_flash_attn_scratch(32, 32, 0, 2));
        EXPECT_EQ(run(bb), w.want) << w.name;
    }
}

TEST_F(NpuDeviceFlashAttn, StatingTooLittleScratchFailsAtItsOp) {
    BatchBuilder bb;
    const uint32_t buf = bb.buffer(data_);
    const uint16_t tq = bb.tensor(buf, TSL_NPU_TYPE_F32, 0, {32, 3, 4, 1});
    const uint16_t tk = bb.tensor(buf, TSL_NPU_TYPE_F16, 8192, {32, 20, 2, 1});
    const uint16_t tv = bb.tensor(buf, TSL_NPU_TYPE_F16, 16384, {32, 20, 2, 1});
    const uint16_t td = bb.tensor(buf, TSL_NPU_TYPE_F32, 32768, {32, 4, 3, 1});
    state_scratch(bb.op(TSL_NPU_OP_FLASH_ATTN_EXT, {tq, tk, tv}, {td}), tsl_npu_flash_attn_scratch(32, 32, 0, 2) - 64);
    EXPECT_EQ(run(bb), TSL_NPU_ERR_NO_VTCM);
    EXPECT_EQ(rsp_.err_op, 0u);
}

}  // namespace
}  // namespace tessel::test

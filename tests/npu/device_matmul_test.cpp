// The device's int8 layer (src/npu/device/vec_i8.h) and its tiled matmul micro-kernel
// (ops_matmul.h): the Q8 quantizer bit-exact against tessel's Q8_0 reference quantizer
// (quant::quantize_row), the vector dot products against the scalar int8 dot, and the kernel (plain
// C, and AVX-512 VNNI where the CPU has it) against a double-precision sum over the reference
// dequantization of the weights (quant::dequantize_row) and of the Q8 activations; the matrix-unit
// kernel (AMX, where the CPU has it) the same way, after its reshape (checked byte by byte against
// the tile accessors); the flat kernel's F16 widening (exact) and F32 dot product against double;
// and the MUL_MAT / MUL_MAT_ID ops run on the device under host plans of small activation steps,
// claim chunks, worker counts and DMA modes (tsl_npu_matmul_kparams): every plan gives the bits of
// the one-step plan, which matches the reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/cpu_features.hpp"
#include "npu/device_batch.hpp"
#include "npu/host/tiled.hpp"
#include "quant/blocks.hpp"
#include "quant/quant.hpp"

extern "C" {
#include "npu/device/device.h"
#include "npu/device/ops_matmul.h"
#include "npu/posix/platform_posix.h"
#include "npu/device/vec_i8.h"
#include "npu/proto/proto.h"
}

namespace tessel::test {
namespace {

std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -4.0f, float hi = 4.0f) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(lo, hi);
    std::vector<float> v(n);
    for (float& x : v) x = u(rng);
    return v;
}

TEST(NpuDeviceMatmul, Q8QuantizerIsBitExactWithQ8_0Reference) {
    std::vector<float> x = random_floats(32 * 64, 7);
    // edge blocks: all zeros, all -0, halves (rounding ties at q = +-x.5), one huge value, tiny values
    for (int j = 0; j < 32; ++j) {
        x[j] = 0.0f;
        x[32 + j] = -0.0f;
        x[64 + j] = (j - 16) * 0.5f;  // amax 8 -> id 127/8: ties where x * id hits .5
        x[96 + j] = j == 5 ? 1e30f : 1.0f;
        x[128 + j] = 1e-30f * static_cast<float>(j - 16);
        x[160 + j] = static_cast<float>(j * 4 - 63);  // integer grid with a +-127-ish amax
    }
    const int64_t k = static_cast<int64_t>(x.size());
    std::vector<quant::block_q8_0> ref(static_cast<size_t>(k / 32));
    quant::quantize_row(DType::Q8_0, x.data(), ref.data(), k);
    for (int64_t b = 0; b < k / 32; ++b) {
        int8_t q[32];
        int32_t sum = 0;
        const uint16_t d = tsl_npu_quantize_q8_block(&x[static_cast<size_t>(b * 32)], q, &sum);
        ASSERT_EQ(d, ref[b].d) << "block " << b;
        ASSERT_EQ(std::memcmp(q, ref[b].qs, 32), 0) << "block " << b;
        int32_t want = 0;
        for (int j = 0; j < 32; ++j) want += ref[b].qs[j];
        ASSERT_EQ(sum, want) << "block " << b;
    }
}

bool has_avx512vnni();
bool has_avx2();

/// The matmul's row quantizer in both builds (plain C; AVX-512 where the CPU has it) against the
/// Q8_0 reference row: the same quants, the fp16 d widened to float, the quants' sums (blocks
/// holding a NaN: the same bits as the plain C form).
TEST(NpuDeviceMatmul, Q8RowQuantizerBothFormsAreBitExactWithQ8_0Reference) {
    // 101 blocks: six runs of 16 (the AVX-512 form's batches) and a tail of 5
    std::vector<float> x = random_floats(32 * 101, 17, -30.0f, 30.0f);
    for (int j = 0; j < 32; ++j) {
        x[j] = 0.0f;
        x[32 + j] = (j - 16) * 0.25f;                                           // ties at q = +-x.5
        x[64 + j] = j == 9 ? std::numeric_limits<float>::infinity() : 2.0f;      // d = Inf, 1/d = 0
        x[96 + j] = j == 3 ? -std::numeric_limits<float>::infinity() : -1.0f;
        x[128 + j] = std::numeric_limits<float>::denorm_min() * static_cast<float>(j - 16);  // 1/d = Inf
        x[160 + j] = 1e-39f * static_cast<float>(j % 7 - 3);                   // subnormal amax
        x[192 + j] = j == 0 ? 65504.0f * 127.0f * 1.01f : 1.0f;                 // d rounds to fp16 Inf
        x[224 + j] = static_cast<float>(j) - 15.5f;                             // .5 grid
        x[32 * 99 + j] = (j - 16) * 0.5f;                                      // ties in the tail
    }
    // NaN blocks (one in a batch of 16, one in the tail): the forms must agree with each other
    const std::vector<int64_t> nan_blocks{20, 97};
    for (int64_t b : nan_blocks) x[static_cast<size_t>(b * 32 + 7)] = std::numeric_limits<float>::quiet_NaN();
    const int64_t k = static_cast<int64_t>(x.size()), nb = k / 32;
    std::vector<quant::block_q8_0> ref(static_cast<size_t>(nb));
    quant::quantize_row(DType::Q8_0, x.data(), ref.data(), k);
    using Quantize = void (*)(const float*, int64_t, int8_t*, float*, int32_t*);
    std::vector<std::pair<const char*, Quantize>> forms{{"c", tsl_npu_mm_quantize_c}};
#if defined(__x86_64__) || defined(__i386__)
    if (has_avx512vnni()) forms.emplace_back("avx512vnni", tsl_npu_mm_quantize_avx512vnni);
    if (has_avx2()) forms.emplace_back("avx2", tsl_npu_mm_quantize_avx2);
#endif
    std::vector<int8_t> q0;
    std::vector<float> d0;
    std::vector<int32_t> sums0;
    for (const auto& [name, quantize] : forms) {
        std::vector<int8_t> q(static_cast<size_t>(k));
        std::vector<float> d(static_cast<size_t>(nb));
        std::vector<int32_t> sums(static_cast<size_t>(nb));
        quantize(x.data(), k, q.data(), d.data(), sums.data());
        if (q0.empty()) q0 = q, d0 = d, sums0 = sums;  // the plain C form
        for (int64_t b : nan_blocks) {
            ASSERT_EQ(std::memcmp(&d[b], &d0[b], 4), 0) << name << " NaN block " << b;
            ASSERT_EQ(std::memcmp(&q[b * 32], &q0[b * 32], 32), 0) << name << " NaN block " << b;
            ASSERT_EQ(sums[b], sums0[b]) << name << " NaN block " << b;
        }
        for (int64_t b = 0; b < nb; ++b) {
            if (std::find(nan_blocks.begin(), nan_blocks.end(), b) != nan_blocks.end()) continue;  // checked above
            const float want_d = tsl_npu_half_to_float(ref[b].d);
            ASSERT_EQ(std::memcmp(&d[b], &want_d, 4), 0) << name << " block " << b;
            ASSERT_EQ(std::memcmp(&q[b * 32], ref[b].qs, 32), 0) << name << " block " << b;
            int32_t want = 0;
            for (int j = 0; j < 32; ++j) want += ref[b].qs[j];
            ASSERT_EQ(sums[b], want) << name << " block " << b;
        }
    }
}

TEST(NpuDeviceMatmul, VectorDotProductsEqualTheScalarInt8Dot) {
    std::mt19937 rng(3);
    for (int trial = 0; trial < 200; ++trial) {
        uint8_t a[64];
        int8_t b[64];
        for (int i = 0; i < 64; ++i) {
            a[i] = static_cast<uint8_t>(rng());
            b[i] = static_cast<int8_t>(rng());
        }
        if (trial == 0) std::memset(a, 255, 64), std::memset(b, -128, 64);  // the extremes
        int32_t got[16], got_b[16];
        tsl_vi32_store(got, tsl_vi32_dot4(tsl_vi32_zero(), tsl_vu8_loadu(a), b));
        tsl_vi32_store(got_b, tsl_vi32_dot4_bcast(tsl_vi32_zero(), tsl_vu8_loadu(a), b + 8));
        for (int i = 0; i < 16; ++i) {
            int32_t want = 0, want_b = 0;
            for (int t = 0; t < 4; ++t) {
                want += a[4 * i + t] * b[4 * i + t];
                want_b += a[4 * i + t] * b[8 + t];
            }
            ASSERT_EQ(got[i], want) << trial << " lane " << i;
            ASSERT_EQ(got_b[i], want_b) << trial << " lane " << i;
        }
        ASSERT_EQ(tsl_npu_dot_i8(b, b + 32, 32), [&] {
            int32_t s = 0;
            for (int i = 0; i < 32; ++i) s += b[i] * b[32 + i];
            return s;
        }());
    }
}

bool has_avx512vnni() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vnni");
#else
    return false;
#endif
}

bool has_avx2() {
    const CpuFeatures& f = cpu_features();  // as detected (TESSEL_CPU_ISA does not cap the NPU)
    return f.avx2 && f.fma && f.f16c;
}

bool has_avx512vbmi() {
#if defined(__x86_64__) || defined(__i386__)
    return has_avx512vnni() && __builtin_cpu_supports("avx512vbmi");
#else
    return false;
#endif
}

bool has_amx_int8() {
    const CpuFeatures& f = cpu_features();
    return f.amx_tile && f.amx_int8 && f.avx512f && f.avx512bw && f.avx512vnni;
}

#if defined(__x86_64__) || defined(__i386__)
/// The matrix-unit kernel behind the vector kernel's interface: reshape the row tile, then run.
void amx_kernel(const tsl_npu_mm_tile_args* a) {
    std::vector<uint8_t> panel(static_cast<size_t>(a->n_kt) * TSL_NPU_MM_MATRIX_TILE_BYTES);
    tsl_npu_mm_amx_reshape(a->type, a->tile_bytes, a->n_kt, a->tiles, panel.data());
    tsl_npu_mm_tile_args b = *a;
    b.tiles = panel.data();
    tsl_npu_mm_amx_begin();
    tsl_npu_mm_tile_cols_amx(&b);
    tsl_npu_mm_amx_end();
}
#endif

/// One row tile (32 rows, N = 27 so 5 are padding) of K (default 96) against M activation columns
/// (rows of one buffer, evenly spaced; `reversed`: handed to the kernel last row first).
/// Returns the kernel's 32 x M results.
std::vector<float> check_tile_kernel(DType type, void (*kernel)(const tsl_npu_mm_tile_args*), int64_t M = 5,
                                     bool reversed = false, int64_t K = 96) {
    constexpr int64_t N = 27;
    const npu::tiled::Shape ne{K, N, 1, 1};
    const std::vector<float> wf = random_floats(static_cast<size_t>(K * N), 11);
    std::vector<uint8_t> gguf(dtype_row_bytes(type, K) * N);
    quant::quantize_rows(type, wf.data(), gguf.data(), N, K);
    std::vector<uint8_t> tiles(npu::tiled::tiled_size(type, ne));
    npu::tiled::repack(type, ne, gguf.data(), tiles.data());

    const std::vector<float> xf = random_floats(static_cast<size_t>(K * M), 12);
    const auto round64 = [](uint64_t n) { return (n + 63) / 64 * 64; };
    const uint64_t row_bytes = tsl_npu_q8_row_bytes(K), q_bytes = round64(K), s_bytes = round64(K / 32 * 4);
    EXPECT_EQ(row_bytes, q_bytes + 2 * s_bytes);
    std::vector<uint8_t> act(row_bytes * M);
    std::vector<const uint8_t*> cols(M);
    for (int64_t m = 0; m < M; ++m) {
        uint8_t* row = act.data() + m * row_bytes;
        tsl_npu_quantize_q8_row(&xf[static_cast<size_t>(m * K)], K, reinterpret_cast<int8_t*>(row),
                                reinterpret_cast<float*>(row + q_bytes), reinterpret_cast<int32_t*>(row + q_bytes + s_bytes));
        cols[static_cast<size_t>(reversed ? M - 1 - m : m)] = row;
    }
    std::vector<float> acc(32 * M, -1.0f);
    const tsl_npu_mm_tile_args a{static_cast<uint32_t>(type), tsl_npu_tile_bytes(static_cast<uint32_t>(type)), K / 32,
                                 tiles.data(), static_cast<uint32_t>(M), cols.data(), q_bytes, s_bytes, acc.data()};
    kernel(&a);

    // reference: the dequantized weights . the dequantized Q8 activations, in double
    std::vector<float> w(static_cast<size_t>(K * N));
    quant::dequantize_row(type, gguf.data(), w.data(), K * N);
    for (int64_t col = 0; col < M; ++col) {
        const int64_t m = reversed ? M - 1 - col : col;  // the activation row of kernel column col
        std::vector<quant::block_q8_0> xq(K / 32);
        quant::quantize_row(DType::Q8_0, &xf[static_cast<size_t>(m * K)], xq.data(), K);
        std::vector<float> x(K);
        quant::dequantize_row(DType::Q8_0, xq.data(), x.data(), K);
        for (int64_t n = 0; n < 32; ++n) {
            double want = 0.0, mag = 0.0;
            for (int64_t i = 0; n < N && i < K; ++i) {
                want += static_cast<double>(w[n * K + i]) * x[i];
                mag += std::fabs(static_cast<double>(w[n * K + i]) * x[i]);
            }
            // float sums over K / 32 blocks: about one rounding per block (and a few per term) of
            // the magnitude; 1e-6 of it at K = 96
            const double bound = std::max(1e-6, static_cast<double>(K / 32 + 4) * 1.2e-7) * mag;
            EXPECT_NEAR(acc[col * 32 + n], want, bound + 1e-30) << dtype_name(type) << " row " << n << " col " << col;
        }
    }
    return acc;
}

TEST(NpuDeviceMatmul, TileKernelMatchesTheReferenceDot) {
    // plain C always; the AVX-512 VNNI and VBMI builds of the same source and the AVX2 kernel
    // where this CPU has them. One column (M = 1) is the VBMI and AVX2 kernels' register path;
    // every build rounds the same operations in the same order, so its results equal the C
    // kernel's bit for bit.
    for (DType t : {DType::Q4_0, DType::Q4_1, DType::Q8_0, DType::IQ4_NL, DType::MXFP4}) {
        SCOPED_TRACE(dtype_name(t));
        const std::vector<float> c5 = check_tile_kernel(t, tsl_npu_mm_tile_cols_c);
        const std::vector<float> c1 = check_tile_kernel(t, tsl_npu_mm_tile_cols_c, 1);
#if defined(__x86_64__) || defined(__i386__)
        if (has_avx512vnni()) {
            EXPECT_EQ(check_tile_kernel(t, tsl_npu_mm_tile_cols_avx512vnni), c5);
        }
        if (has_avx512vbmi()) {
            EXPECT_EQ(check_tile_kernel(t, tsl_npu_mm_tile_cols_avx512vbmi), c5);
            EXPECT_EQ(check_tile_kernel(t, tsl_npu_mm_tile_cols_avx512vbmi, 1), c1);
        }
        if (has_avx2()) {
            EXPECT_EQ(check_tile_kernel(t, tsl_npu_mm_tile_cols_avx2), c5);
            EXPECT_EQ(check_tile_kernel(t, tsl_npu_mm_tile_cols_avx2, 1), c1);
        }
#endif
        (void)c5;
        (void)c1;
    }
}

#if defined(__x86_64__) || defined(__i386__)
/// The AVX2 kernel sums a tile's Q4 products in 16-bit lanes: at the extremes (every code 15,
/// every activation quant +127 or -127, one column and five) its sums must still equal the C
/// kernel's; also over 67 K tiles (the float accumulation of many blocks).
TEST(NpuDeviceMatmul, Avx2KernelAtTheQ4ExtremesAndLongKEqualsC) {
    if (!has_avx2()) GTEST_SKIP() << "no AVX2 on this CPU: the kernel is not offered";
    for (DType type : {DType::Q4_0, DType::Q4_1}) {
        SCOPED_TRACE(dtype_name(type));
        constexpr int64_t K = 64, N = 32;
        const size_t block = type == DType::Q4_0 ? 18 : 20;
        std::vector<uint8_t> gguf(block * (K / 32) * N, 0xff);  // every nibble 15
        for (size_t b = 0; b < gguf.size(); b += block) {
            gguf[b] = 0x00, gguf[b + 1] = 0x3c;                        // d = 1.0
            if (type == DType::Q4_1) gguf[b + 2] = 0, gguf[b + 3] = 0;  // m = 0
        }
        const npu::tiled::Shape ne{K, N, 1, 1};
        std::vector<uint8_t> tiles(npu::tiled::tiled_size(type, ne));
        npu::tiled::repack(type, ne, gguf.data(), tiles.data());
        for (float sign : {1.0f, -1.0f}) {
            const std::vector<float> x(K, sign);  // quants all +-127
            const uint64_t row_bytes = tsl_npu_q8_row_bytes(K), q_bytes = 64, s_bytes = 64;
            std::vector<uint8_t> act(row_bytes * 5);
            std::vector<const uint8_t*> cols(5);
            for (int m = 0; m < 5; ++m) {
                uint8_t* row = act.data() + m * row_bytes;
                tsl_npu_quantize_q8_row(x.data(), K, reinterpret_cast<int8_t*>(row), reinterpret_cast<float*>(row + q_bytes),
                                        reinterpret_cast<int32_t*>(row + q_bytes + s_bytes));
                ASSERT_EQ(static_cast<int8_t>(row[0]), sign > 0 ? 127 : -127);
                cols[static_cast<size_t>(m)] = row;
            }
            for (uint32_t n_cols : {1u, 5u}) {
                std::vector<float> want(32 * n_cols), got(32 * n_cols);
                tsl_npu_mm_tile_args a{static_cast<uint32_t>(type), tsl_npu_tile_bytes(static_cast<uint32_t>(type)), K / 32,
                                       tiles.data(), n_cols, cols.data(), q_bytes, s_bytes, want.data()};
                tsl_npu_mm_tile_cols_c(&a);
                a.acc = got.data();
                tsl_npu_mm_tile_cols_avx2(&a);
                EXPECT_EQ(got, want) << "columns " << n_cols << " sign " << sign;
                // code 15 (Q4_0: value 7) x 127 x the activation scale (1/127 in fp16) x K
                const float value = sign * (type == DType::Q4_0 ? 7.0f : 15.0f) * K;
                EXPECT_NEAR(want[0], value, 1e-3 * std::fabs(value));
            }
        }
        EXPECT_EQ(check_tile_kernel(type, tsl_npu_mm_tile_cols_avx2, 5, false, 32 * 67),
                  check_tile_kernel(type, tsl_npu_mm_tile_cols_c, 5, false, 32 * 67));
    }
    EXPECT_EQ(check_tile_kernel(DType::Q8_0, tsl_npu_mm_tile_cols_avx2, 1, false, 32 * 67),
              check_tile_kernel(DType::Q8_0, tsl_npu_mm_tile_cols_c, 1, false, 32 * 67));
}
#endif

#if defined(__x86_64__) || defined(__i386__)
/// The matrix unit's reshape of two tiles: each signed value (tsl_npu_tile_value) at its B-tile
/// byte, the row scales and mins as tsl_npu_tile_scales gives them.
void check_reshape() {
    constexpr int64_t K = 64, N = 32;
    const npu::tiled::Shape ne{K, N, 1, 1};
    for (DType type : {DType::Q4_0, DType::Q4_1, DType::Q8_0, DType::IQ4_NL, DType::MXFP4}) {
        const std::vector<float> wf = random_floats(static_cast<size_t>(K * N), 31);
        std::vector<uint8_t> gguf(dtype_row_bytes(type, K) * N);
        quant::quantize_rows(type, wf.data(), gguf.data(), N, K);
        std::vector<uint8_t> tiles(npu::tiled::tiled_size(type, ne));
        npu::tiled::repack(type, ne, gguf.data(), tiles.data());
        const uint32_t tb = tsl_npu_tile_bytes(static_cast<uint32_t>(type));
        std::vector<uint8_t> panel(2 * TSL_NPU_MM_MATRIX_TILE_BYTES);
        tsl_npu_mm_amx_reshape(static_cast<uint32_t>(type), tb, 2, tiles.data(), panel.data());
        for (int kt = 0; kt < 2; ++kt) {
            const uint8_t* tile = tiles.data() + kt * tb;
            const uint8_t* o = panel.data() + kt * TSL_NPU_MM_MATRIX_TILE_BYTES;
            for (int r = 0; r < 32; ++r)
                for (int j = 0; j < 32; ++j)
                    ASSERT_EQ(static_cast<int8_t>(o[(r / 16) * 512 + (j / 4) * 64 + 4 * (r % 16) + j % 4]),
                              tsl_npu_tile_value(static_cast<uint32_t>(type), tile, r, j))
                        << dtype_name(type) << " tile " << kt << " row " << r << " element " << j;
            float d[32], m[32], got_d[32], got_m[32];
            tsl_npu_tile_scales(static_cast<uint32_t>(type), tile, d, m);
            std::memcpy(got_d, o + 1024, sizeof got_d);
            std::memcpy(got_m, o + 1152, sizeof got_m);
            EXPECT_EQ(std::memcmp(got_d, d, sizeof d), 0) << dtype_name(type);
            EXPECT_EQ(std::memcmp(got_m, m, sizeof m), 0) << dtype_name(type);
        }
    }
}
#endif

TEST(NpuDeviceMatmul, MatrixUnitKernelMatchesTheReferenceDotOrIsNotOffered) {
    tsl_npu_platform platform{};
    ASSERT_EQ(tsl_npu_posix_platform_create(1, 0, &platform), TSL_NPU_OK);
    const bool amx = (platform.isa & TSL_NPU_ISA_AMX_INT8) != 0;
    EXPECT_EQ((platform.isa & TSL_NPU_ISA_AVX512VBMI) != 0, has_avx512vbmi());
    auto device = std::make_unique<tsl_npu_device>();
    ASSERT_EQ(tsl_npu_device_init(device.get(), &platform), TSL_NPU_OK);
    tsl_npu_hwinfo hw;
    tsl_npu_device_hwinfo(device.get(), &hw);
    tsl_npu_posix_platform_destroy(&platform);
    // the platform's answer agrees with tessel's own cpuid reading (core/cpu_features), and the
    // device offers a matrix unit exactly then (without one the host never plans MATRIX:
    // plan_matmul_test.cpp)
    EXPECT_EQ(amx, has_amx_int8());
    EXPECT_EQ(hw.matrix_unit, amx ? 1u : 0u);
#if defined(__x86_64__) || defined(__i386__)
    if (!amx) return;
    check_reshape();
    // M = 5: one gathered tail group; 37: two full groups loaded in place and a tail; reversed:
    // full groups gathered; K = 32 x 67: past one chunk of 64 blocks (the accumulators carried over)
    for (DType t : {DType::Q4_0, DType::Q4_1, DType::Q8_0, DType::IQ4_NL, DType::MXFP4})
        for (auto [m, reversed, k] : {std::tuple<int64_t, bool, int64_t>{5, false, 96}, {37, false, 96}, {37, true, 96},
                                      {37, false, 32 * 67}, {20, true, 32 * 67}}) {
            SCOPED_TRACE(std::string(dtype_name(t)) + " M=" + std::to_string(m) + (reversed ? " reversed" : "") +
                         " K=" + std::to_string(k));
            check_tile_kernel(t, amx_kernel, m, reversed, k);
        }
#endif
}

TEST(NpuDeviceMatmul, FlatPiecesWidenExactlyAndDotWithinFloatRounding) {
    std::vector<uint16_t> h(75);
    std::mt19937 rng(5);
    for (uint16_t& v : h) v = static_cast<uint16_t>(rng() & 0x7bff);  // finite halves of both signs
    using Widen = void (*)(const uint16_t*, float*, int64_t);
    using Dot = float (*)(const float*, const float*, int64_t);
    std::vector<std::pair<Widen, Dot>> variants{{tsl_npu_mm_widen_c, tsl_npu_mm_dot_c}};
#if defined(__x86_64__) || defined(__i386__)
    if (has_avx512vnni()) variants.emplace_back(tsl_npu_mm_widen_avx512vnni, tsl_npu_mm_dot_avx512vnni);
    if (has_avx512vbmi()) variants.emplace_back(tsl_npu_mm_widen_avx512vbmi, tsl_npu_mm_dot_avx512vbmi);
    if (has_avx2()) variants.emplace_back(tsl_npu_mm_widen_avx2, tsl_npu_mm_dot_avx2);
#endif
    const std::vector<float> a = random_floats(75, 21), b = random_floats(75, 22);
    for (const auto& [widen, dot] : variants) {
        std::vector<float> out(75);
        widen(h.data(), out.data(), 75);
        for (size_t i = 0; i < h.size(); ++i) ASSERT_EQ(out[i], tsl_npu_half_to_float(h[i])) << i;
        double want = 0.0, mag = 0.0;
        for (size_t i = 0; i < a.size(); ++i) {
            want += static_cast<double>(a[i]) * b[i];
            mag += std::fabs(static_cast<double>(a[i]) * b[i]);
        }
        EXPECT_NEAR(dot(a.data(), b.data(), 75), want, 1e-6 * mag);
    }
}

// MUL_MAT and MUL_MAT_ID ops on the device (posix platform, 2 workers) with a Q4_0 weight of 3 row
// tiles (N = 70) and K = 128, under several plans.
class NpuDeviceMatmulOp : public DeviceTest {
protected:
    static constexpr int64_t K = 128;
    static constexpr uint32_t kType = TSL_NPU_TYPE_Q4_0;
    static constexpr uint64_t kW = 0, kX = 64 * 1024, kIds = 192 * 1024, kOut = 256 * 1024;

    // Writes a Q4_0 weight [K, n, e] in tiles at kW; returns its dequantized values [K, n, e].
    std::vector<float> write_weight(int64_t n, int64_t e) {
        const npu::tiled::Shape ne{K, n, e, 1};
        const std::vector<float> wf = random_floats(static_cast<size_t>(K * n * e), 21);
        std::vector<uint8_t> gguf(dtype_row_bytes(DType::Q4_0, K) * n * e);
        quant::quantize_rows(DType::Q4_0, wf.data(), gguf.data(), n * e, K);
        EXPECT_LE(npu::tiled::tiled_size(DType::Q4_0, ne), kX - kW);
        npu::tiled::repack(DType::Q4_0, ne, gguf.data(), at<uint8_t>(kW));
        std::vector<float> w(wf.size());
        quant::dequantize_row(DType::Q4_0, gguf.data(), w.data(), K * n * e);
        return w;
    }
    uint16_t weight_tensor(BatchBuilder& bb, uint32_t buf, int64_t n, int64_t e) {
        const uint16_t t = bb.tensor(buf, TSL_NPU_TYPE_F32, kW, {K, n, e, 1});
        bb.tensors.back().type = kType;
        bb.tensors.back().flags = TSL_NPU_TENSOR_WEIGHT | TSL_NPU_TENSOR_REPACKED;
        bb.tensors.back().size = npu::tiled::tiled_size(DType::Q4_0, {K, n, e, 1});
        return t;
    }
    // Writes `rows` activation rows of K at kX; returns them as the kernel's Q8 dequantized.
    std::vector<float> write_x(int64_t rows) {
        const std::vector<float> xf = random_floats(static_cast<size_t>(K * rows), 22);
        std::memcpy(at<float>(kX), xf.data(), xf.size() * 4);
        std::vector<float> x(xf.size());
        for (int64_t r = 0; r < rows; ++r) {
            std::vector<quant::block_q8_0> q(K / 32);
            quant::quantize_row(DType::Q8_0, &xf[static_cast<size_t>(r * K)], q.data(), K);
            quant::dequantize_row(DType::Q8_0, q.data(), &x[static_cast<size_t>(r * K)], K);
        }
        return x;
    }
    // Runs op (its kparams `kp`, the scratch its plan states for `rows` src1 rows) and returns dst's floats.
    std::vector<float> run_plan(BatchBuilder bb, tsl_npu_matmul_kparams kp, int64_t rows, int64_t experts, size_t n_out) {
        tsl_npu_op_desc& op = bb.ops.back();
        const uint64_t step = kp.act_rows ? kp.act_rows : static_cast<uint64_t>(rows);
        const tsl_npu_kparams_header h{static_cast<uint32_t>(tsl_npu_matmul_scratch(
                                           kp.kernel, kp.dma, tsl_npu_tile_bytes(kType), K, static_cast<int64_t>(step),
                                           experts, kp.threads ? kp.threads : 2)),
                                       0};
        std::memcpy(op.kparams, &h, sizeof h);
        std::memcpy(op.kparams + TSL_NPU_KPARAMS_BODY, &kp, sizeof kp);
        std::fill(at<float>(kOut), at<float>(kOut) + n_out, -7.0f);
        EXPECT_EQ(run(bb), TSL_NPU_OK);
        return std::vector<float>(at<float>(kOut), at<float>(kOut) + n_out);
    }
    // Runs parts 0..n_parts-1 of op (tsl_npu_matmul_kparams.part) one by one: each writes exactly the
    // rows of its run of row tiles (dst rows are ne[0], N of them), leaving the rest as they were,
    // with the whole op's bits there.
    void expect_parts_split_the_rows(const BatchBuilder& bb, int64_t rows, int64_t experts, size_t n_out, int64_t n,
                                     const std::vector<float>& whole) {
        const int64_t n_rt = (n + 31) / 32;
        for (uint16_t n_parts : {2, 3, 4}) {
            std::vector<float> joined(n_out, -7.0f);
            for (uint16_t part = 0; part < n_parts; ++part) {
                SCOPED_TRACE("part " + std::to_string(part) + " of " + std::to_string(n_parts));
                tsl_npu_matmul_kparams kp = plans()[2];
                kp.part = part;
                kp.n_parts = n_parts;
                const std::vector<float> got = run_plan(bb, kp, rows, experts, n_out);
                const int64_t lo = n_rt * part / n_parts * 32, hi = n_rt * (part + 1) / n_parts * 32;
                size_t mine = 0, bad = 0;
                for (size_t i = 0; i < n_out; ++i) {
                    const int64_t row = static_cast<int64_t>(i) % n;
                    if (row >= lo && row < hi) {
                        ++mine;
                        bad += got[i] != whole[i];
                        joined[i] = got[i];
                    } else {
                        bad += got[i] != -7.0f;
                    }
                }
                EXPECT_EQ(bad, 0u);
                EXPECT_EQ(mine, static_cast<size_t>(std::min(hi, n) - std::min(lo, n)) * (n_out / static_cast<size_t>(n)));
            }
            EXPECT_EQ(joined, whole);
        }
        // a part outside the parts, or more parts than the limit: the op is refused
        tsl_npu_matmul_kparams kp = plans()[0];
        kp.part = 2;
        kp.n_parts = 2;
        BatchBuilder copy = bb;
        tsl_npu_op_desc& op = copy.ops.back();
        std::memcpy(op.kparams + TSL_NPU_KPARAMS_BODY, &kp, sizeof kp);
        EXPECT_EQ(run(copy), TSL_NPU_ERR_BAD_DESC);
        kp.part = 0;
        kp.n_parts = TSL_NPU_MM_MAX_PARTS + 1;
        std::memcpy(op.kparams + TSL_NPU_KPARAMS_BODY, &kp, sizeof kp);
        EXPECT_EQ(run(copy), TSL_NPU_ERR_BAD_DESC);
    }
    // The plans: one step (the kparams defaults), then steps of 5 rows on one worker in place, of 1
    // row with chunks of 3, of 13 rows as copies, of 20 rows with chunks of 1.
    static std::vector<tsl_npu_matmul_kparams> plans() {
        return {{TSL_NPU_MM_TILED, 1, 0, 0, 0, 0, 0},  {TSL_NPU_MM_TILED, 0, 5, 1, 1, 0, 0},
                {TSL_NPU_MM_TILED, 1, 1, 3, 2, 0, 0},  {TSL_NPU_MM_TILED, 2, 13, 2, 2, 0, 0},
                {TSL_NPU_MM_TILED, 1, 20, 1, 0, 0, 0}};
    }
};

// |got - want| within float rounding of the dot's magnitude (as check_tile_kernel).
void expect_dot(float got, const float* w, const float* x, const char* what, size_t i) {
    double want = 0.0, mag = 0.0;
    for (int64_t k = 0; k < 128; ++k) {
        want += static_cast<double>(w[k]) * x[k];
        mag += std::fabs(static_cast<double>(w[k]) * x[k]);
    }
    EXPECT_NEAR(got, want, 1e-6 * mag + 1e-30) << what << " " << i;
}

TEST_F(NpuDeviceMatmulOp, MulMatInPlannedStepsChunksAndWorkersGivesTheOneStepBits) {
    // weight [K, 70] broadcast over x [K, 13, 3]: steps of 5 and 20 rows end inside a batch
    constexpr int64_t N = 70, M = 13, B = 3;
    const std::vector<float> w = write_weight(N, 1);
    const std::vector<float> x = write_x(M * B);
    BatchBuilder bb;
    const uint32_t buf = bb.buffer(data_);
    const uint16_t tw = weight_tensor(bb, buf, N, 1);
    const uint16_t tx = bb.tensor(buf, TSL_NPU_TYPE_F32, kX, {K, M, B, 1});
    const uint16_t td = bb.tensor(buf, TSL_NPU_TYPE_F32, kOut, {N, M, B, 1});
    bb.op(TSL_NPU_OP_MUL_MAT, {tw, tx}, {td});
    const size_t n_out = static_cast<size_t>(N * M * B);
    const std::vector<float> one_step = run_plan(bb, plans()[0], M * B, 0, n_out);
    for (int64_t r = 0; r < M * B; ++r)
        for (int64_t n = 0; n < N; ++n)
            expect_dot(one_step[static_cast<size_t>(r * N + n)], &w[static_cast<size_t>(n * K)],
                       &x[static_cast<size_t>(r * K)], "MUL_MAT", static_cast<size_t>(r * N + n));
    for (const tsl_npu_matmul_kparams& kp : plans()) {
        SCOPED_TRACE("act_rows " + std::to_string(kp.act_rows) + " chunk " + std::to_string(kp.chunk) + " threads " +
                     std::to_string(kp.threads) + " dma " + std::to_string(kp.dma));
        EXPECT_EQ(run_plan(bb, kp, M * B, 0, n_out), one_step);
    }
    expect_parts_split_the_rows(bb, M * B, 0, n_out, N, one_step);
}

TEST_F(NpuDeviceMatmulOp, MulMatIdInPlannedStepsGivesTheOneStepBitsAndZeroColumnsForBadIds) {
    // 4 experts [K, 40]; x [K, 2, 9] (U = 2), ids [2, 9]: column (e, t) = expert ids[e, t] . x row
    // (e, t); token 4's second id is out of range (a zero column)
    constexpr int64_t N = 40, E = 4, U = 2, T = 9;
    const std::vector<float> w = write_weight(N, E);
    const std::vector<float> x = write_x(U * T);
    int32_t* ids = at<int32_t>(kIds);
    for (int64_t t = 0; t < T; ++t)
        for (int64_t e = 0; e < U; ++e) ids[t * U + e] = static_cast<int32_t>((t * 3 + e * 2) % E);
    ids[4 * U + 1] = 7;
    BatchBuilder bb;
    const uint32_t buf = bb.buffer(data_);
    const uint16_t tw = weight_tensor(bb, buf, N, E);
    const uint16_t tx = bb.tensor(buf, TSL_NPU_TYPE_F32, kX, {K, U, T, 1});
    const uint16_t ti = bb.tensor(buf, TSL_NPU_TYPE_I32, kIds, {U, T, 1, 1});
    const uint16_t td = bb.tensor(buf, TSL_NPU_TYPE_F32, kOut, {N, U, T, 1});
    bb.op(TSL_NPU_OP_MUL_MAT_ID, {tw, tx, ti}, {td});
    const size_t n_out = static_cast<size_t>(N * U * T);
    const std::vector<float> one_step = run_plan(bb, plans()[0], U * T, E, n_out);
    for (int64_t t = 0; t < T; ++t)
        for (int64_t e = 0; e < U; ++e) {
            const int32_t id = ids[t * U + e];
            for (int64_t n = 0; n < N; ++n) {
                const size_t i = static_cast<size_t>((t * U + e) * N + n);
                if (id >= E) {
                    EXPECT_EQ(one_step[i], 0.0f) << i;
                    continue;
                }
                expect_dot(one_step[i], &w[static_cast<size_t>((id * N + n) * K)], &x[static_cast<size_t>((t * U + e) * K)],
                           "MUL_MAT_ID", i);
            }
        }
    for (const tsl_npu_matmul_kparams& kp : plans()) {
        SCOPED_TRACE("act_rows " + std::to_string(kp.act_rows) + " chunk " + std::to_string(kp.chunk) + " threads " +
                     std::to_string(kp.threads) + " dma " + std::to_string(kp.dma));
        EXPECT_EQ(run_plan(bb, kp, U * T, E, n_out), one_step);
    }
    expect_parts_split_the_rows(bb, U * T, E, n_out, N, one_step);
}

TEST_F(NpuDeviceMatmulOp, StatingLessThanAStepsScratchFailsAtItsOp) {
    write_weight(70, 1);
    write_x(39);
    BatchBuilder bb;
    const uint32_t buf = bb.buffer(data_);
    const uint16_t tw = weight_tensor(bb, buf, 70, 1);
    const uint16_t tx = bb.tensor(buf, TSL_NPU_TYPE_F32, kX, {K, 39, 1, 1});
    const uint16_t td = bb.tensor(buf, TSL_NPU_TYPE_F32, kOut, {70, 39, 1, 1});
    tsl_npu_op_desc& op = bb.op(TSL_NPU_OP_MUL_MAT, {tw, tx}, {td});
    const tsl_npu_matmul_kparams kp{TSL_NPU_MM_TILED, 0, 10, 1, 2, 0, 0};
    const uint64_t need = tsl_npu_matmul_scratch(TSL_NPU_MM_TILED, 0, tsl_npu_tile_bytes(kType), K, 10, 0, 2);
    const tsl_npu_kparams_header h{static_cast<uint32_t>(need - 64), 0};
    std::memcpy(op.kparams, &h, sizeof h);
    std::memcpy(op.kparams + TSL_NPU_KPARAMS_BODY, &kp, sizeof kp);
    EXPECT_EQ(run(bb), TSL_NPU_ERR_NO_VTCM);
    EXPECT_EQ(rsp_.err_op, 0u);
}

}  // namespace
}  // namespace tessel::test

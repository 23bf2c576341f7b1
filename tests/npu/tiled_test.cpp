// Tiled NPU weights (src/npu/host/tiled.hpp, buffer.hpp): the layout checked quant by quant
// against the format's rules (GGUF block layouts, the tile order and nibble order documented in
// tiled.hpp), repack -> unpack round trips bit-exact for every tileable type and odd shapes,
// tiled sizes computed by hand, and an NPU0 weights buffer storing tiles while set_tensor /
// get_tensor speak GGUF bytes (whole writes, writes in pieces, random reads).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "backend/scheduler.hpp"
#include "model/weights.hpp"
#include "cpu/cpu_backend.hpp"
#include "graph/builder.hpp"
#include "npu/host/buffer.hpp"
#include "npu/host/device.hpp"
#include "npu/host/opbatch.hpp"
#include "npu/host/tiled.hpp"
#include "npu/host/translate.hpp"
#include "quant/quant.hpp"
#include "tessel/errors.hpp"

namespace tessel::npu {
namespace {

using tiled::Shape;

constexpr DType kTileable[] = {DType::Q4_0, DType::Q4_1, DType::Q8_0, DType::IQ4_NL, DType::MXFP4};

size_t gguf_bytes(DType type, const Shape& ne) { return dtype_row_bytes(type, ne[0]) * static_cast<size_t>(ne[1] * ne[2] * ne[3]); }

/// Random GGUF bytes of a tensor made valid: finite fp16 scales (and mins), E8M0 scales below 0xff.
std::vector<uint8_t> random_tensor(DType type, const Shape& ne, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<uint8_t> v(gguf_bytes(type, ne));
    for (uint8_t& b : v) b = static_cast<uint8_t>(rng());
    const size_t bb = dtype_info(type).block_bytes;
    for (size_t at = 0; at < v.size(); at += bb) {
        if (type == DType::MXFP4) {
            if (v[at] == 0xff) v[at] = 0x7f;
            continue;
        }
        const int halves = type == DType::Q4_1 ? 2 : 1;
        for (int h = 0; h < halves; ++h)
            if ((v[at + 2 * h + 1] & 0x7c) == 0x7c) v[at + 2 * h + 1] &= 0xbf;  // exponent all ones -> finite
    }
    return v;
}

/// Quant j (0..31) of a GGUF block, by the block layouts of the GGUF format.
uint8_t gguf_quant(DType type, const uint8_t* block, int j) {
    switch (type) {
    case DType::Q8_0: return block[2 + j];
    case DType::MXFP4: return j < 16 ? block[1 + j] & 15 : block[1 + j - 16] >> 4;
    case DType::Q4_1: return j < 16 ? block[4 + j] & 15 : block[4 + j - 16] >> 4;
    default: return j < 16 ? block[2 + j] & 15 : block[2 + j - 16] >> 4;  // Q4_0, IQ4_NL
    }
}

/// Quant j of row r of a tile, by tiled.hpp's rules.
uint8_t tile_quant(DType type, const uint8_t* tile, int r, int j) {
    if (type == DType::Q8_0) return tile[(j / 2) * 64 + 2 * r + j % 2];
    const uint8_t pair = tile[(j / 2) * 32 + r];
    return j % 2 ? pair >> 4 : pair & 15;
}

TEST(NpuTiled, TileSizesAndTileableTypes) {
    EXPECT_EQ(tiled::tile_bytes(DType::Q4_0), 576u);
    EXPECT_EQ(tiled::tile_bytes(DType::Q4_1), 640u);
    EXPECT_EQ(tiled::tile_bytes(DType::Q8_0), 1088u);
    EXPECT_EQ(tiled::tile_bytes(DType::IQ4_NL), 576u);
    EXPECT_EQ(tiled::tile_bytes(DType::MXFP4), 544u);
    for (DType t : {DType::F32, DType::F16, DType::Q6_K, DType::Q4_K, DType::Q5_0})
        EXPECT_FALSE(tiled::is_tileable(t)) << dtype_name(t);
    // By hand: ceil(rows / 32) row tiles x K / 32 K tiles x matrices x tile bytes.
    EXPECT_EQ(tiled::tiled_size(DType::Q4_0, {64, 33, 1, 1}), 2u * 2 * 576);
    EXPECT_EQ(tiled::tiled_size(DType::Q4_1, {96, 31, 1, 1}), 1u * 3 * 640);
    EXPECT_EQ(tiled::tiled_size(DType::Q8_0, {4128, 100, 1, 1}), 4u * 129 * 1088);
    EXPECT_EQ(tiled::tiled_size(DType::IQ4_NL, {32, 32, 1, 1}), 576u);
    EXPECT_EQ(tiled::tiled_size(DType::MXFP4, {32, 1, 3, 2}), 6u * 544);
    EXPECT_EQ(tiled::tiled_size(DType::Q4_1, {576, 49152, 1, 1}), 1536u * 18 * 640);  // SmolLM2's token_embd
    EXPECT_THROW(tiled::tiled_size(DType::F32, {32, 1, 1, 1}), Error);
    EXPECT_THROW(tiled::tiled_size(DType::Q4_0, {48, 1, 1, 1}), Error);
    EXPECT_THROW(tiled::tiled_size(DType::Q4_0, {32, 0, 1, 1}), Error);
}

TEST(NpuTiled, LayoutFollowsTheFormatQuantByQuant) {
    const Shape ne{96, 33, 2, 1};  // 2 row tiles (the second padded), 3 K tiles, 2 matrices
    for (DType type : kTileable) {
        SCOPED_TRACE(dtype_name(type));
        const std::vector<uint8_t> src = random_tensor(type, ne, 7);
        std::vector<uint8_t> dst(tiled::tiled_size(type, ne), 0xee);
        tiled::repack(type, ne, src.data(), dst.data());
        const size_t bb = dtype_info(type).block_bytes, tb = tiled::tile_bytes(type);
        const size_t quants = type == DType::Q8_0 ? 1024 : 512, scale = type == DType::MXFP4 ? 1 : 2;
        for (int64_t m = 0; m < 2; ++m)
            for (int64_t rt = 0; rt < 2; ++rt)
                for (int64_t kt = 0; kt < 3; ++kt) {
                    const uint8_t* tile = dst.data() + ((m * 2 + rt) * 3 + kt) * tb;
                    for (int r = 0; r < 32; ++r) {
                        const int64_t row = rt * 32 + r;
                        const uint8_t* block = row < 33 ? src.data() + ((m * 33 + row) * 3 + kt) * bb : nullptr;
                        for (int j = 0; j < 32; ++j)
                            ASSERT_EQ(tile_quant(type, tile, r, j), block ? gguf_quant(type, block, j) : 0) << m << " " << row << " " << j;
                        const uint8_t zero[2] = {0, 0};
                        ASSERT_EQ(0, std::memcmp(tile + quants + r * scale, block ? block : zero, scale)) << "scale of row " << row;
                        if (type == DType::Q4_1) {
                            ASSERT_EQ(0, std::memcmp(tile + quants + 64 + r * 2, block ? block + 2 : zero, 2)) << "min of row " << row;
                        }
                    }
                }
    }
}

TEST(NpuTiled, RoundTripsEveryTypeAndOddShapeBitExactly) {
    std::mt19937 rng(11);
    uint32_t seed = 1;
    for (DType type : kTileable)
        for (int64_t K : {32, 64, 96, 4096 + 32})
            for (int64_t rows : {1, 31, 33, 100}) {
                const Shape ne{K, rows, rows == 33 ? 2 : 1, 1};
                SCOPED_TRACE(std::string(dtype_name(type)) + " K=" + std::to_string(K) + " rows=" + std::to_string(rows));
                const std::vector<uint8_t> src = random_tensor(type, ne, seed++);
                std::vector<uint8_t> tiles(tiled::tiled_size(type, ne));
                tiled::repack(type, ne, src.data(), tiles.data());
                std::vector<uint8_t> back(src.size(), 0x5a);
                tiled::unpack(type, ne, tiles.data(), 0, back.size(), back.data());
                ASSERT_EQ(back, src);
                for (int i = 0; i < 20; ++i) {  // ranges starting and ending anywhere
                    const size_t off = rng() % src.size();
                    const size_t len = rng() % (src.size() - off + 1);
                    std::vector<uint8_t> part(len + 1, 0x5a);
                    tiled::unpack(type, ne, tiles.data(), off, len, part.data());
                    ASSERT_EQ(0, std::memcmp(part.data(), src.data() + off, len)) << off << "+" << len;
                    ASSERT_EQ(part[len], 0x5a) << "wrote past the range";
                }
                EXPECT_THROW(tiled::unpack(type, ne, tiles.data(), src.size() - 1, 2, back.data()), Error);
            }
}

/// NPU0 (in-process link) with a weights buffer holding one tensor of `type` and shape ne.
struct WeightsBuffer {
    NpuDevice dev{"NPU0", Config{}};
    Tensor t;
    std::unique_ptr<Buffer> buf;
    WeightsBuffer(DType type, const Shape& ne, BufferUsage usage = BufferUsage::Weights, bool host = false) {
        t.name = "w";
        t.set_shape(type, {ne[0], ne[1], ne[2], ne[3]});
        t.flags |= kFlagWeight;
        BufferType& bt = host ? dev.host_buffer_type() : dev.buffer_type();
        buf = bt.alloc_buffer(bt.alloc_size(t));
        buf->set_usage(usage);
        buf->init_tensor(t, 0);
    }
    std::vector<uint8_t> get(size_t off, size_t len) const {
        std::vector<uint8_t> v(len);
        buf->get_tensor(t, v.data(), off, len);
        return v;
    }
    const uint8_t* memory() const { return static_cast<const uint8_t*>(t.data); }
};

TEST(NpuTiledBuffer, WholeWriteStoresTilesAndReadsBackGguf) {
    std::mt19937 rng(3);
    for (DType type : kTileable) {
        SCOPED_TRACE(dtype_name(type));
        const Shape ne{160, 45, 1, 1};
        WeightsBuffer w(type, ne);
        EXPECT_EQ(w.dev.buffer_type().alloc_size(w.t), tiled::tiled_size(type, ne));
        const TiledTensor* rec = tiled_of(w.t);
        ASSERT_NE(rec, nullptr);
        EXPECT_EQ(rec->device_bytes, tiled::tiled_size(type, ne));
        const std::vector<uint8_t> src = random_tensor(type, ne, 21);
        w.buf->set_tensor(w.t, src.data(), 0, src.size());
        EXPECT_TRUE(rec->complete);
        std::vector<uint8_t> want(tiled::tiled_size(type, ne));
        tiled::repack(type, ne, src.data(), want.data());
        ASSERT_EQ(0, std::memcmp(w.memory(), want.data(), want.size())) << "device memory holds the tiles";
        ASSERT_EQ(w.get(0, src.size()), src);
        for (int i = 0; i < 30; ++i) {
            const size_t off = rng() % src.size(), len = rng() % (src.size() - off + 1);
            ASSERT_EQ(w.get(off, len), std::vector<uint8_t>(src.begin() + off, src.begin() + off + len)) << off << "+" << len;
        }
        // 2-D reads of row-aligned blocks: every other row, and rows 3..5 of every row pair's
        // neighbour, packed densely; a block past the end is refused before anything is copied
        const size_t row = src.size() / static_cast<size_t>(ne[1]);
        std::vector<uint8_t> rows(row * 22, 0xAB);
        w.buf->get_tensor_2d(w.t, rows.data(), row, row, 22, 2 * row, row);
        for (size_t i = 0; i < 22; ++i)
            ASSERT_EQ(0, std::memcmp(rows.data() + i * row, src.data() + (1 + 2 * i) * row, row)) << "row " << 1 + 2 * i;
        std::vector<uint8_t> two(3 * row * 4);
        w.buf->get_tensor_2d(w.t, two.data(), 3 * row, 3 * row, 4, 10 * row, 3 * row);
        for (size_t i = 0; i < 4; ++i)
            ASSERT_EQ(0, std::memcmp(two.data() + i * 3 * row, src.data() + (3 + 10 * i) * row, 3 * row)) << "block " << i;
        std::vector<uint8_t> untouched(row * 23, 0xCD);
        EXPECT_THROW(w.buf->get_tensor_2d(w.t, untouched.data(), row, row, 23, 2 * row, row), Error);
        EXPECT_EQ(untouched, std::vector<uint8_t>(row * 23, 0xCD));
        // The descriptor of a tiled operand: repacked, spanning the tiles.
        const Operand o = operand(w.t);
        EXPECT_TRUE(o.repacked);
        EXPECT_EQ(o.size, tiled::tiled_size(type, ne));
        OpBatch batch{BatchLimits{}};
        batch.add(TSL_NPU_OP_NOP, "NOP", {o}, {}, nullptr);
        EXPECT_EQ(batch.tensors()[0].flags, TSL_NPU_TENSOR_WEIGHT | TSL_NPU_TENSOR_REPACKED);
        EXPECT_EQ(batch.tensors()[0].size, tiled::tiled_size(type, ne));
    }
}

TEST(NpuTiledBuffer, PiecesAreStagedUntilComplete) {
    std::mt19937 rng(5);
    for (DType type : kTileable) {
        SCOPED_TRACE(dtype_name(type));
        const Shape ne{96, 33, 1, 1};
        WeightsBuffer w(type, ne);
        const std::vector<uint8_t> src = random_tensor(type, ne, 31);
        // Three pieces cut at random bytes, written in a random order.
        size_t a = 1 + rng() % (src.size() - 2), b = 1 + rng() % (src.size() - 2);
        if (a > b) std::swap(a, b);
        if (a == b) ++b;
        std::vector<std::pair<size_t, size_t>> pieces{{0, a}, {a, b}, {b, src.size()}};
        std::shuffle(pieces.begin(), pieces.end(), rng);
        for (size_t i = 0; i < pieces.size(); ++i) {
            const auto [from, to] = pieces[i];
            w.buf->set_tensor(w.t, src.data() + from, from, to - from);
            EXPECT_EQ(tiled_of(w.t)->complete, i + 1 == pieces.size());
            // Written bytes read back at once, staged or tiled.
            ASSERT_EQ(w.get(from, to - from), std::vector<uint8_t>(src.begin() + from, src.begin() + to));
        }
        std::vector<uint8_t> want(tiled::tiled_size(type, ne));
        tiled::repack(type, ne, src.data(), want.data());
        ASSERT_EQ(0, std::memcmp(w.memory(), want.data(), want.size()));
        EXPECT_TRUE(tiled_of(w.t)->staging.empty());
        // A partial rewrite of a complete tensor lands in the tiles too.
        std::vector<uint8_t> patched = src;
        for (size_t i = 7; i < 7 + 40; ++i) patched[i] = static_cast<uint8_t>(i);
        w.buf->set_tensor(w.t, patched.data() + 7, 7, 40);
        EXPECT_TRUE(tiled_of(w.t)->complete);
        ASSERT_EQ(w.get(0, patched.size()), patched);
    }
}

TEST(NpuTiledBuffer, OtherTensorsStayPlain) {
    struct Case {
        DType type;
        BufferUsage usage;
        bool host;
    };
    for (const Case& c : {Case{DType::F32, BufferUsage::Weights, false}, Case{DType::Q6_K, BufferUsage::Weights, false},
                          Case{DType::Q4_0, BufferUsage::Any, false}, Case{DType::Q4_0, BufferUsage::Weights, true}}) {
        SCOPED_TRACE(std::string(dtype_name(c.type)) + (c.host ? " host" : "") + (c.usage == BufferUsage::Any ? " any" : ""));
        const Shape ne{256, 3, 1, 1};
        WeightsBuffer w(c.type, ne, c.usage, c.host);
        EXPECT_EQ(tiled_of(w.t), nullptr);
        EXPECT_FALSE(operand(w.t).repacked);
        std::vector<uint8_t> src(w.t.n_bytes());
        for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 7 + 1);
        w.buf->set_tensor(w.t, src.data(), 0, src.size());
        ASSERT_EQ(0, std::memcmp(w.memory(), src.data(), src.size())) << "stored as given";
        ASSERT_EQ(w.get(0, src.size()), src);
    }
    // Not tileable or not a weight: the plain size.
    Tensor f;
    f.set_shape(DType::Q6_K, {256, 3});
    f.flags |= kFlagWeight;
    NpuDevice dev("NPU0", Config{});
    EXPECT_EQ(dev.buffer_type().alloc_size(f), f.n_bytes());
    f.set_shape(DType::Q4_0, {64, 3});
    f.flags = 0;
    EXPECT_EQ(dev.buffer_type().alloc_size(f), f.n_bytes());
    f.flags = kFlagWeight;
    EXPECT_EQ(dev.host_buffer_type().alloc_size(f), f.n_bytes());
}

/// y = W x with W a tiled Q4_0 weight in NPU0, on the backend the scheduler picks under `cfg`;
/// the result must match W x in double (x is quantized to Q8 per block on either side).
void check_tiled_mul_mat(const Config& cfg, bool npu_claims) {
    NpuDevice dev("NPU0", cfg);
    auto npu = dev.init_backend({});
    auto cpu = cpu::cpu_device().init_backend({1});
    Graph g;
    Tensor* w = g.new_tensor(DType::Q4_0, {96, 40}, "w");
    Tensor* x = g.new_tensor(DType::F32, {96, 3}, "x");
    x->flags |= kFlagInput;
    Tensor* y = build::mul_mat(g, w, x);
    y->flags |= kFlagOutput;
    g.expand(y);
    auto weights = allocate_weights(dev.buffer_type(), {w});
    ASSERT_NE(tiled_of(*w), nullptr);
    const std::vector<uint8_t> wq = random_tensor(DType::Q4_0, {96, 40, 1, 1}, 41);
    w->buffer->set_tensor(*w, wq.data(), 0, wq.size());
    EXPECT_EQ(dev.supports_op(*y), npu_claims);
    Scheduler s({npu.get(), cpu.get()});
    s.allocate(g);
    EXPECT_EQ(s.backend_of(*y), npu_claims ? npu.get() : cpu.get());
    std::vector<float> xs(96 * 3);
    for (size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>((i * 13) % 17) / 8.0f - 1.0f;
    x->buffer->set_tensor(*x, xs.data(), 0, xs.size() * 4);
    s.compute();
    std::vector<float> ys(40 * 3), wf(96);
    y->buffer->get_tensor(*y, ys.data(), 0, ys.size() * 4);
    for (int64_t n = 0; n < 40; ++n) {
        quant::dequantize_row(DType::Q4_0, wq.data() + n * dtype_row_bytes(DType::Q4_0, 96), wf.data(), 96);
        for (int64_t m = 0; m < 3; ++m) {
            double dot = 0, mag = 0;
            for (int64_t k = 0; k < 96; ++k) {
                dot += static_cast<double>(wf[k]) * xs[m * 96 + k];
                mag += std::abs(static_cast<double>(wf[k]) * xs[m * 96 + k]);
            }
            EXPECT_NEAR(ys[m * 40 + n], dot, 1e-2 * mag + 1e-6) << n << " " << m;
        }
    }
}

TEST(NpuTiledBuffer, MulMatOnTilesRunsOnTheNpu) { check_tiled_mul_mat(Config{}, true); }

TEST(NpuTiledBuffer, MulMatOnTilesRunsOnTheCpuWithGgufBytesWhenTheTiledKernelIsNotSelected) {
    // TESSEL_NPU_MM_SELECT=flat: the NPU declines, the scheduler copies W to the CPU through
    // get_tensor (GGUF bytes)
    Config cfg;
    cfg.mm_select = 1u << TSL_NPU_MM_FLAT;
    check_tiled_mul_mat(cfg, false);
}

}  // namespace
}  // namespace tessel::npu

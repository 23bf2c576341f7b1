// The CPU_PACKED buffer type (src/cpu/packed/buffer.hpp): sizes, set_tensor / get_tensor round
// trips (whole, staged partial writes in any order, partial reads), a plain tensor whose bytes
// imitate a packed header, a damaged header, and the chain's plan with a matrix-unit cap.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "core/cpu_features.hpp"
#include "cpu/packed/buffer.hpp"
#include "cpu/packed/kernel.hpp"
#include "quant/quant.hpp"
#include "tessel/errors.hpp"

namespace tessel::cpu::packed {
namespace {

std::vector<uint8_t> random_rows(DType t, int64_t n, int64_t k, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    std::vector<float> f(static_cast<size_t>(n * k));
    for (float& x : f) x = dist(rng);
    std::vector<uint8_t> out(static_cast<size_t>(dtype_row_bytes(t, k) * n));
    quant::quantize_rows(t, f.data(), out.data(), n, k);
    return out;
}

bool packing_here(DType t) { return !chain(t, usable_cpu_features(), RhsLayout::Packed).empty(); }

struct Placed {
    Tensor t;
    std::unique_ptr<Buffer> buf;
};

/// A tensor of shape dims placed alone in a CPU_PACKED weights buffer.
std::unique_ptr<Placed> place(DType type, std::initializer_list<int64_t> dims, BufferUsage usage = BufferUsage::Weights) {
    auto p = std::make_unique<Placed>();
    p->t.name = std::string(1, 'w');
    p->t.set_shape(type, dims);
    BufferType& bt = PackedBufferType::instance();
    p->buf = bt.alloc_buffer(bt.alloc_size(p->t));
    p->buf->set_usage(usage);
    p->buf->init_tensor(p->t, 0);
    return p;
}

TEST(PackedBuffer, WholeWriteRoundTripsBitExactly) {
    for (DType type : {DType::Q4_0, DType::Q4_1, DType::Q8_0, DType::F16}) {
        const auto p = place(type, {64, 37, 3});  // 37 rows: a partial last group per matrix
        ASSERT_EQ(packed_of(p->t) != nullptr, packing_here(type)) << dtype_name(type);
        if (!packing_here(type)) continue;
        EXPECT_GE(PackedBufferType::instance().alloc_size(p->t), sizeof(PackedHeader) + p->t.n_bytes());
        const std::vector<uint8_t> data = random_rows(type, 37 * 3, 64, 1);
        p->buf->set_tensor(p->t, data.data(), 0, data.size());
        EXPECT_NE(0, std::memcmp(static_cast<const uint8_t*>(p->t.data) + sizeof(PackedHeader), data.data(), 256))
            << "the buffer should hold the packed layout, not the GGUF bytes";
        std::vector<uint8_t> back(data.size());
        p->buf->get_tensor(p->t, back.data(), 0, back.size());
        EXPECT_EQ(data, back) << dtype_name(type);
        // reads of arbitrary ranges
        std::mt19937 rng(7);
        for (int i = 0; i < 50; ++i) {
            const size_t off = rng() % data.size(), len = 1 + rng() % (data.size() - off);
            std::vector<uint8_t> part(len);
            p->buf->get_tensor(p->t, part.data(), off, len);
            ASSERT_EQ(0, std::memcmp(part.data(), data.data() + off, len)) << dtype_name(type) << " @" << off << "+" << len;
        }
    }
}

TEST(PackedBuffer, PartialWritesAreStagedUntilComplete) {
    const auto p = place(DType::Q4_0, {96, 40});
    if (!packing_here(DType::Q4_0)) {  // no packed Q4_0 kernel on this CPU: the tensor stays plain
        EXPECT_EQ(packed_of(p->t), nullptr);
        return;
    }
    const std::vector<uint8_t> data = random_rows(DType::Q4_0, 40, 96, 2);
    const size_t a = 1000, b = 1500;  // three pieces written out of order, overlapping once
    p->buf->set_tensor(p->t, data.data() + b, b, data.size() - b);
    EXPECT_FALSE(packed_of(p->t)->complete);
    EXPECT_THROW(slot_data(p->t, *format_for(DType::Q4_0)), Error) << "an incomplete tensor must not be computed on";
    p->buf->set_tensor(p->t, data.data(), 0, a + 10);
    std::vector<uint8_t> part(a);
    p->buf->get_tensor(p->t, part.data(), 0, a);  // staged bytes are readable
    EXPECT_EQ(0, std::memcmp(part.data(), data.data(), a));
    p->buf->set_tensor(p->t, data.data() + a, a, b - a);
    EXPECT_TRUE(packed_of(p->t)->complete);
    std::vector<uint8_t> back(data.size());
    p->buf->get_tensor(p->t, back.data(), 0, back.size());
    EXPECT_EQ(data, back);
    // a partial rewrite of a packed tensor repacks it
    std::vector<uint8_t> patched = data;
    for (size_t i = 300; i < 400; ++i) patched[i] ^= 0x5a;
    p->buf->set_tensor(p->t, patched.data() + 300, 300, 100);
    p->buf->get_tensor(p->t, back.data(), 0, back.size());
    EXPECT_EQ(patched, back);
}

TEST(PackedBuffer, BytesImitatingAHeaderStayPlainData) {
    // An F32 tensor (no packed format) and a Q4_0 tensor in a compute buffer: never packed,
    // whatever their bytes say.
    for (auto [type, usage] : {std::pair{DType::F32, BufferUsage::Weights}, std::pair{DType::Q4_0, BufferUsage::Compute}}) {
        const auto p = place(type, {64, 4}, usage);
        EXPECT_EQ(packed_of(p->t), nullptr);
        std::vector<uint8_t> data(p->t.n_bytes(), 0);
        PackedHeader h{};
        std::memcpy(h.magic, "TSLPACK", 8);
        h.version = kHeaderVersion;
        h.slot_count = 1;
        h.slots[0] = {static_cast<uint32_t>(FormatId::Q4_0x16), 0, sizeof(PackedHeader), 16};
        std::memcpy(data.data(), &h, std::min(sizeof h, data.size()));
        p->buf->set_tensor(p->t, data.data(), 0, data.size());
        std::vector<uint8_t> back(data.size());
        p->buf->get_tensor(p->t, back.data(), 0, back.size());
        EXPECT_EQ(data, back);
        EXPECT_EQ(0, std::memcmp(p->t.data, data.data(), data.size())) << "stored as written";
        EXPECT_EQ(packed_of(p->t), nullptr);
    }
}

TEST(PackedBuffer, DamagedHeaderIsAnErrorNamingTheTensor) {
    const auto p = place(DType::Q8_0, {64, 16});
    if (!packing_here(DType::Q8_0)) {  // no packed Q8_0 kernel on this CPU: the tensor stays plain
        EXPECT_EQ(packed_of(p->t), nullptr);
        return;
    }
    const std::vector<uint8_t> data = random_rows(DType::Q8_0, 16, 64, 3);
    p->buf->set_tensor(p->t, data.data(), 0, data.size());
    EXPECT_NO_THROW(slot_data(p->t, *format_for(DType::Q8_0)));
    auto* h = static_cast<PackedHeader*>(p->t.data);
    h->slots[0].size = 1u << 30;  // past the allocation
    try {
        slot_data(p->t, *format_for(DType::Q8_0));
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("w [64, 16]"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("outside the allocation"), std::string::npos) << e.what();
    }
    h->slots[0].size = 16;
    h->magic[0] = 'X';
    EXPECT_THROW(slot_data(p->t, *format_for(DType::Q8_0)), Error);
}

Kernel fake(const char* name, bool matrix, int64_t min_m) {
    Kernel k{};
    k.name = k.gemv_name = name;
    k.matrix_unit = matrix;
    k.min_m = min_m;
    return k;
}

TEST(PackedChain, PlanPicksByRowsAndSplitsACappedMatrixUnit) {
    const Kernel amx = fake("amx", true, 16), vnni = fake("vnni", false, 1);
    const std::vector<const Kernel*> c = {&amx, &vnni};
    Plan p = plan(c, 512, 4, 0);
    EXPECT_EQ(p.main, &amx);
    EXPECT_EQ(p.fallback, nullptr);
    EXPECT_EQ(p.main_threads, 4);
    p = plan(c, 1, 4, 1);  // one row: the vector kernel, no split
    EXPECT_EQ(p.main, &vnni);
    EXPECT_EQ(p.fallback, nullptr);
    p = plan(c, 512, 4, 1);  // hybrid: one matrix-unit thread, three fallback threads
    EXPECT_EQ(p.main, &amx);
    EXPECT_EQ(p.fallback, &vnni);
    EXPECT_EQ(p.main_threads, 1);
    p = plan(c, 512, 2, 2);  // a cap at or above the thread count is no cap
    EXPECT_EQ(p.fallback, nullptr);
    EXPECT_EQ(p.main_threads, 2);
}

}  // namespace
}  // namespace tessel::cpu::packed

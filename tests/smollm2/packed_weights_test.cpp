// Every weight of the default model stored in CPU_PACKED reads back as its GGUF bytes, bit-exactly
// (issue 7: lossless packing), whole and in row-unaligned pieces.
#include <gtest/gtest.h>

#include <cstring>

#include "core/cpu_features.hpp"
#include "cpu/packed/buffer.hpp"
#include "cpu/packed/kernel.hpp"
#include "gguf/reader.hpp"
#include "support/smollm2.hpp"

namespace tessel {
namespace {

TEST(SmolLM2Packed, EveryWeightRoundTripsBitExactly) {
    TESSEL_REQUIRE_SMOLLM2();
    const gguf::File file = gguf::File::open(test::smollm2_path().string());
    BufferType& bt = cpu::packed::PackedBufferType::instance();
    int packed = 0;
    for (const gguf::TensorInfo& info : file.tensors()) {
        Tensor t;
        t.name = info.name;
        t.set_shape(info.type, {info.ne[0], info.ne[1], info.ne[2], info.ne[3]});
        auto buf = bt.alloc_buffer(bt.alloc_size(t));
        buf->set_usage(BufferUsage::Weights);
        buf->init_tensor(t, 0);
        const uint8_t* want = file.tensor_data(info);
        buf->set_tensor(t, want, 0, info.size);
        const bool is_packed = cpu::packed::packed_of(t) != nullptr;
        EXPECT_EQ(is_packed, !cpu::packed::chain(info.type, usable_cpu_features(), cpu::packed::RhsLayout::Packed).empty() && info.ne[0] % 32 == 0) << info.name;
        packed += is_packed;
        std::vector<uint8_t> got(info.size);
        buf->get_tensor(t, got.data(), 0, got.size());
        ASSERT_EQ(0, std::memcmp(got.data(), want, info.size)) << info.name;
        const size_t off = info.size / 3 + 5, len = info.size / 3;  // a piece starting mid-row
        buf->get_tensor(t, got.data(), off, len);
        ASSERT_EQ(0, std::memcmp(got.data(), want + off, len)) << info.name << " piece";
    }
    if (!cpu::packed::chain(DType::Q4_1, usable_cpu_features(), cpu::packed::RhsLayout::Packed).empty()) {
        EXPECT_GT(packed, 100) << "the Q4_1 model's matrices should be packed on this CPU";
    }
}

}  // namespace
}  // namespace tessel

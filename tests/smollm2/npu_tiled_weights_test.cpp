// Every tileable weight of the default model (Q4_1 matrices, plus whatever Q4_0/Q8_0 tensors it
// holds) round-trips through the NPU's 32x32 tiles bit-exactly (issue 9): whole, and in a piece
// that starts and ends mid-row; and through an NPU0 weights buffer written in two pieces.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "gguf/reader.hpp"
#include "npu/host/buffer.hpp"
#include "npu/host/device.hpp"
#include "npu/host/tiled.hpp"
#include "support/smollm2.hpp"

namespace tessel {
namespace {

TEST(SmolLM2NpuTiled, EveryTileableWeightRoundTripsBitExactly) {
    TESSEL_REQUIRE_SMOLLM2();
    const gguf::File file = gguf::File::open(test::smollm2_path().string());
    npu::NpuDevice dev("NPU0", npu::Config{});
    BufferType& bt = dev.buffer_type();
    int n_tiled = 0;
    for (const gguf::TensorInfo& info : file.tensors()) {
        if (!npu::tiled::is_tileable(info.type)) continue;
        SCOPED_TRACE(info.name);
        const npu::tiled::Shape ne{info.ne[0], info.ne[1], info.ne[2], info.ne[3]};
        const uint8_t* want = file.tensor_data(info);
        std::vector<uint8_t> tiles(npu::tiled::tiled_size(info.type, ne));
        npu::tiled::repack(info.type, ne, want, tiles.data());
        std::vector<uint8_t> got(info.size);
        npu::tiled::unpack(info.type, ne, tiles.data(), 0, got.size(), got.data());
        ASSERT_EQ(0, std::memcmp(got.data(), want, info.size));
        const size_t off = info.size / 3 + 5, len = info.size / 3;
        npu::tiled::unpack(info.type, ne, tiles.data(), off, len, got.data());
        ASSERT_EQ(0, std::memcmp(got.data(), want + off, len)) << "piece";

        Tensor t;
        t.name = info.name;
        t.set_shape(info.type, {info.ne[0], info.ne[1], info.ne[2], info.ne[3]});
        t.flags |= kFlagWeight;
        auto buf = bt.alloc_buffer(bt.alloc_size(t));
        buf->set_usage(BufferUsage::Weights);
        buf->init_tensor(t, 0);
        buf->set_tensor(t, want + off, off, info.size - off);
        buf->set_tensor(t, want, 0, off);
        ASSERT_TRUE(npu::tiled_of(t) && npu::tiled_of(t)->complete);
        ASSERT_EQ(0, std::memcmp(t.data, tiles.data(), tiles.size())) << "buffer tiles";
        std::fill(got.begin(), got.end(), 0);
        buf->get_tensor(t, got.data(), 0, got.size());
        ASSERT_EQ(0, std::memcmp(got.data(), want, info.size)) << "buffer";
        ++n_tiled;
    }
    EXPECT_GT(n_tiled, 100) << "the Q4_1 model's matrices are tileable";
}

}  // namespace
}  // namespace tessel

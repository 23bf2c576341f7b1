// quant::quantize_rows (src/quant/quant.cpp): a whole tensor, row after row, with the byte count
// of the GGUF layout (Q8_0: 34 bytes per 32 elements; Q4_K: 144 bytes per 256).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "quant/blocks.hpp"
#include "quant/quant.hpp"

using namespace tessel;
using namespace tessel::quant;

TEST(QuantRows, Q8_0RowsAreConsecutiveBlocks) {
    // Row r holds r+1 at every position, so its one Q8_0 block has d = (r+1)/127 (fp16, relative
    // error <= 2^-11) and every q = 127.
    const int64_t rows = 3, n = 32;
    std::vector<float> x(static_cast<size_t>(rows * n));
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t i = 0; i < n; ++i) x[static_cast<size_t>(r * n + i)] = static_cast<float>(r + 1);
    std::vector<block_q8_0> out(rows);
    EXPECT_EQ(quantize_rows(DType::Q8_0, x.data(), out.data(), rows, n), 3u * 34u);
    for (int64_t r = 0; r < rows; ++r) {
        std::vector<float> back(n);
        dequantize_row(DType::Q8_0, &out[static_cast<size_t>(r)], back.data(), n);
        for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(back[static_cast<size_t>(i)], r + 1.0f, (r + 1) * 1e-3f) << r << "," << i;
        for (int i = 0; i < 32; ++i) EXPECT_EQ(out[static_cast<size_t>(r)].qs[i], 127);
    }
}

TEST(QuantRows, ByteCountOfAKQuantTensor) {
    const int64_t rows = 2, n = 512;
    std::vector<float> x(static_cast<size_t>(rows * n), 0.5f);
    std::vector<uint8_t> out(2 * 2 * 144);
    EXPECT_EQ(quantize_rows(DType::Q4_K, x.data(), out.data(), rows, n), 2u * 2u * 144u);
}

// The wire format: fixed sizes (also checked at compile time in proto.h), field offsets both sides
// rely on, the batch block layout, and byte-level round trips of every descriptor.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <vector>

#include "npu/proto/proto.h"

namespace {

template <typename T>
T round_trip(const T& in) {
    std::vector<uint8_t> wire(sizeof(T));
    std::memcpy(wire.data(), &in, sizeof(T));
    T out;
    std::memcpy(&out, wire.data(), sizeof(T));
    return out;
}

TEST(NpuProto, SizesAreMultiplesOfEight) {
    EXPECT_EQ(sizeof(tsl_npu_buf_desc) % 8, 0u);
    EXPECT_EQ(sizeof(tsl_npu_tensor_desc) % 8, 0u);
    EXPECT_EQ(sizeof(tsl_npu_op_desc) % 8, 0u);
    EXPECT_EQ(sizeof(tsl_npu_batch_req) % 8, 0u);
    EXPECT_EQ(sizeof(tsl_npu_batch_rsp) % 8, 0u);
    EXPECT_EQ(sizeof(tsl_npu_profile) % 8, 0u);
    EXPECT_EQ(sizeof(tsl_npu_hwinfo) % 8, 0u);
}

TEST(NpuProto, FieldOffsets) {
    // The layout the issue fixes: params[16], a 256-byte kernel_params area, src[12] / dst[8] u16.
    EXPECT_EQ(offsetof(tsl_npu_op_desc, params), 8u);
    EXPECT_EQ(offsetof(tsl_npu_op_desc, kparams), 8u + 16 * 4);
    EXPECT_EQ(offsetof(tsl_npu_op_desc, src), 8u + 16 * 4 + 256);
    EXPECT_EQ(offsetof(tsl_npu_op_desc, dst), 8u + 16 * 4 + 256 + 12 * 2);
    EXPECT_EQ(offsetof(tsl_npu_tensor_desc, offset), 8u);
    EXPECT_EQ(offsetof(tsl_npu_tensor_desc, ne), 24u);
    EXPECT_EQ(offsetof(tsl_npu_tensor_desc, nb), 56u);
    EXPECT_EQ(offsetof(tsl_npu_profile, counters), 24u);
    EXPECT_EQ(sizeof(tsl_npu_fence_slot), 128u);
}

TEST(NpuProto, BlockLayout) {
    const uint32_t nb = 3, nt = 7, no = 5;
    EXPECT_EQ(tsl_npu_block_tensors_offset(nb), 3u * 16);
    EXPECT_EQ(tsl_npu_block_ops_offset(nb, nt), 3u * 16 + 7u * 96);
    EXPECT_EQ(tsl_npu_block_profile_offset(nb, nt, no), 3u * 16 + 7u * 96 + 5u * 368);
    EXPECT_EQ(tsl_npu_block_size(nb, nt, no), 3u * 16 + 7u * 96 + 5u * 368 + 5u * 88);
    EXPECT_EQ(tsl_npu_block_size(nb, nt, no) % 8, 0u);
}

TEST(NpuProto, DescriptorsRoundTrip) {
    tsl_npu_tensor_desc t{};
    t.buf = 2;
    t.type = TSL_NPU_TYPE_F16;
    t.offset = 0x1'0000'0040ull;  // past 4 GiB: offsets are u64 on both sides
    t.size = 4096;
    const int64_t ne[4] = {64, 16, 2, 1};
    for (int i = 0; i < 4; ++i) t.ne[i] = ne[i];
    t.nb[0] = 2;
    t.nb[1] = 128;
    t.nb[2] = 2048;
    t.nb[3] = 4096;
    t.flags = TSL_NPU_TENSOR_WEIGHT;
    const tsl_npu_tensor_desc t2 = round_trip(t);
    EXPECT_EQ(std::memcmp(&t, &t2, sizeof t), 0);
    EXPECT_EQ(t2.offset, 0x1'0000'0040ull);

    tsl_npu_op_desc o{};
    o.opcode = TSL_NPU_OP_SCALE;
    for (int i = 0; i < TSL_NPU_OP_PARAMS; ++i) o.params[i] = -i;
    for (int i = 0; i < TSL_NPU_KPARAMS_BYTES; ++i) o.kparams[i] = static_cast<uint8_t>(i * 7);
    for (int i = 0; i < TSL_NPU_MAX_SRC; ++i) o.src[i] = TSL_NPU_NONE;
    for (int i = 0; i < TSL_NPU_MAX_DST; ++i) o.dst[i] = TSL_NPU_NONE;
    o.src[0] = 0;
    o.dst[0] = 1;
    const tsl_npu_op_desc o2 = round_trip(o);
    EXPECT_EQ(std::memcmp(&o, &o2, sizeof o), 0);
    EXPECT_EQ(o2.src[1], TSL_NPU_NONE);
    EXPECT_EQ(o2.kparams[255], static_cast<uint8_t>(255 * 7));

    tsl_npu_batch_rsp r{};
    r.seq = 41;
    r.status = TSL_NPU_ERR_BAD_DESC;
    r.err_op = 3;
    const tsl_npu_batch_rsp r2 = round_trip(r);
    EXPECT_EQ(r2.seq, 41u);
    EXPECT_STREQ(tsl_npu_status_name(r2.status), "BAD_DESC");
    EXPECT_STREQ(tsl_npu_status_name(999), "UNKNOWN_STATUS");
}

}  // namespace

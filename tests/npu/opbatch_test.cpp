// The op batch: deduplication of buffers (by fd) and tensors (by pointer and by data + shape),
// the limits on ops, buffers, tensors and mapped bytes, and the block it writes (buffers ordered by
// size with the tensors' indices remapped).
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "npu/host/opbatch.hpp"
#include "npu/link/shm.hpp"
#include "tessel/errors.hpp"

namespace tessel::npu {
namespace {

struct Fixture {
    std::vector<std::unique_ptr<ShmBuffer>> bufs;
    std::vector<std::unique_ptr<Tensor>> tensors;

    ShmBuffer& buffer(size_t bytes) {
        bufs.push_back(std::make_unique<ShmBuffer>("opbatch-test", bytes));
        return *bufs.back();
    }
    Operand operand(ShmBuffer& b, uint64_t offset, std::initializer_list<int64_t> ne, Tensor* reuse = nullptr) {
        Tensor* t = reuse;
        if (!t) {
            tensors.push_back(std::make_unique<Tensor>());
            t = tensors.back().get();
            t->set_shape(DType::F32, ne);
        }
        Operand o;
        o.tensor = t;
        o.buffer = &b;
        o.offset = offset;
        o.size = t->n_bytes();
        return o;
    }
};

TEST(NpuOpBatch, DeduplicatesBuffersAndTensors) {
    Fixture f;
    ShmBuffer& b0 = f.buffer(4096);
    ShmBuffer& b1 = f.buffer(3 * 4096);
    OpBatch batch(BatchLimits{});
    const Operand x = f.operand(b0, 0, {16, 4});
    const Operand y = f.operand(b0, 256, {16, 4});
    const Operand z = f.operand(b1, 0, {16, 4});
    // A second Tensor object over the same bytes and shape as x: the same descriptor.
    const Operand x_alias = f.operand(b0, 0, {16, 4});
    // Same bytes, other shape: a descriptor of its own.
    const Operand x_reshaped = f.operand(b0, 0, {64});
    const int32_t params[TSL_NPU_OP_PARAMS] = {};
    batch.add(TSL_NPU_OP_ADD, "ADD", {x, y}, {z}, params);
    batch.add(TSL_NPU_OP_MUL, "MUL", {z, x_alias}, {y}, params);
    batch.add(TSL_NPU_OP_SCALE, "SCALE", {x_reshaped}, {x_reshaped}, params);
    EXPECT_EQ(batch.n_ops(), 3u);
    EXPECT_EQ(batch.n_bufs(), 2u);
    EXPECT_EQ(batch.n_tensors(), 4u);  // x, y, z, x_reshaped
    EXPECT_EQ(batch.mapped_bytes(), b0.size() + b1.size());
    EXPECT_EQ(batch.ops()[1].src[1], batch.ops()[0].src[0]);
    EXPECT_EQ(batch.ops()[2].src[0], 3u);
    EXPECT_EQ(batch.ops()[0].src[2], TSL_NPU_NONE);
    EXPECT_EQ(batch.ops()[0].dst[1], TSL_NPU_NONE);
    EXPECT_EQ(batch.op_names()[2], "SCALE");
}

TEST(NpuOpBatch, KeepsEachOpsNodes) {
    Fixture f;
    ShmBuffer& b0 = f.buffer(4096);
    OpBatch batch(BatchLimits{});
    const Operand x = f.operand(b0, 0, {16, 4});
    const Operand y = f.operand(b0, 256, {16, 4});
    const int32_t params[TSL_NPU_OP_PARAMS] = {};
    Tensor norm, mul;
    batch.add(TSL_NPU_OP_RMS_NORM, "RMS_NORM+MUL", {x, y}, {y}, params, {&norm, &mul});
    batch.add(TSL_NPU_OP_MEMCPY, "SET_TENSOR", {x}, {y}, params);
    ASSERT_EQ(batch.op_nodes().size(), 2u);
    EXPECT_EQ(batch.op_nodes()[0], (std::vector<const Tensor*>{&norm, &mul}));
    EXPECT_TRUE(batch.op_nodes()[1].empty());
    EXPECT_EQ(batch.op_names()[0], "RMS_NORM+MUL");
    batch.reset();
    EXPECT_TRUE(batch.op_nodes().empty());
}

TEST(NpuOpBatch, WriteOrdersBuffersBySizeAndRemapsTensors) {
    Fixture f;
    ShmBuffer& small = f.buffer(4096);
    ShmBuffer& big = f.buffer(5 * 4096);
    OpBatch batch(BatchLimits{});
    const int32_t params[TSL_NPU_OP_PARAMS] = {7, 8};
    batch.add(TSL_NPU_OP_CPY, "CPY", {f.operand(small, 128, {8})}, {f.operand(big, 4096, {8})}, params);
    ASSERT_EQ(batch.buffers()[0].fd, small.fd());  // first seen first

    std::vector<uint8_t> block(batch.block_size(), 0xee);
    tsl_npu_batch_req req{};
    batch.write(block.data(), req);
    EXPECT_EQ(req.n_bufs, 2u);
    EXPECT_EQ(req.n_tensors, 2u);
    EXPECT_EQ(req.n_ops, 1u);
    EXPECT_EQ(req.block_size, tsl_npu_block_size(2, 2, 1));
    const auto* b = reinterpret_cast<const tsl_npu_buf_desc*>(block.data());
    EXPECT_EQ(b[0].fd, big.fd());  // largest first
    EXPECT_EQ(b[0].size, big.size());
    EXPECT_EQ(b[1].fd, small.fd());
    const auto* t = reinterpret_cast<const tsl_npu_tensor_desc*>(block.data() + tsl_npu_block_tensors_offset(2));
    EXPECT_EQ(t[0].buf, 1u);  // the source, in `small`, now index 1
    EXPECT_EQ(t[0].offset, 128u);
    EXPECT_EQ(t[0].size, 32u);
    EXPECT_EQ(t[1].buf, 0u);
    EXPECT_EQ(t[1].offset, 4096u);
    EXPECT_EQ(t[1].ne[0], 8);
    EXPECT_EQ(t[1].nb[1], 32u);
    const auto* o = reinterpret_cast<const tsl_npu_op_desc*>(block.data() + tsl_npu_block_ops_offset(2, 2));
    EXPECT_EQ(o[0].opcode, static_cast<uint32_t>(TSL_NPU_OP_CPY));
    EXPECT_EQ(o[0].params[1], 8);
    EXPECT_EQ(o[0].src[0], 0u);
    EXPECT_EQ(o[0].dst[0], 1u);
    const auto* p = reinterpret_cast<const tsl_npu_profile*>(block.data() + tsl_npu_block_profile_offset(2, 2, 1));
    EXPECT_EQ(p[0].stop_ns, 0u);  // profile records start cleared
}

TEST(NpuOpBatch, LimitsAreCheckedByFit) {
    Fixture f;
    const int32_t params[TSL_NPU_OP_PARAMS] = {};
    {  // ops
        BatchLimits l;
        l.max_ops = 2;
        OpBatch batch(l);
        ShmBuffer& b = f.buffer(4096);
        const Operand x = f.operand(b, 0, {4});
        batch.add(TSL_NPU_OP_SCALE, "SCALE", {x}, {x}, params);
        batch.add(TSL_NPU_OP_SCALE, "SCALE", {x}, {x}, params);
        EXPECT_FALSE(batch.fit({x}));
        EXPECT_THROW(batch.add(TSL_NPU_OP_SCALE, "SCALE", {x}, {x}, params), Error);
        batch.reset();
        EXPECT_TRUE(batch.empty());
        EXPECT_TRUE(batch.fit({x}));
    }
    {  // buffers
        BatchLimits l;
        l.max_bufs = 2;
        OpBatch batch(l);
        const Operand a = f.operand(f.buffer(4096), 0, {4});
        const Operand b = f.operand(f.buffer(4096), 0, {4});
        const Operand c = f.operand(f.buffer(4096), 0, {4});
        batch.add(TSL_NPU_OP_CPY, "CPY", {a}, {b}, params);
        EXPECT_TRUE(batch.fit({a, b}));
        EXPECT_FALSE(batch.fit({c}));
    }
    {  // mapped bytes: two 8 KiB buffers under a 12 KiB budget
        BatchLimits l;
        l.max_mapped = 12 * 1024;
        OpBatch batch(l);
        const Operand a = f.operand(f.buffer(8192), 0, {4});
        const Operand b = f.operand(f.buffer(8192), 0, {4});
        EXPECT_FALSE(batch.fit({a, b}));
        batch.add(TSL_NPU_OP_SCALE, "SCALE", {a}, {a}, params);
        EXPECT_FALSE(batch.fit({b}));
        EXPECT_TRUE(batch.fit({a}));
    }
    {  // tensors: capacity from max_tensors
        BatchLimits l;
        l.max_tensors = 3;
        OpBatch batch(l);
        ShmBuffer& b = f.buffer(4096);
        const Operand x = f.operand(b, 0, {4}), y = f.operand(b, 64, {4}), z = f.operand(b, 128, {4}), w = f.operand(b, 192, {4});
        batch.add(TSL_NPU_OP_ADD, "ADD", {x, y}, {z}, params);
        EXPECT_TRUE(batch.fit({x, z}));
        EXPECT_FALSE(batch.fit({x, w}));
    }
    {  // too many operands for one descriptor
        OpBatch batch(BatchLimits{});
        ShmBuffer& b = f.buffer(4096);
        std::vector<Operand> srcs(TSL_NPU_MAX_SRC + 1, f.operand(b, 0, {4}));
        EXPECT_THROW(batch.add(TSL_NPU_OP_ADD, "ADD", srcs, {srcs[0]}, params), Error);
    }
}

TEST(NpuOpBatch, CapacityFollowsOpLimit) {
    BatchLimits l;
    l.max_ops = 4;
    EXPECT_EQ(OpBatch::tensor_capacity(l), 4u * (TSL_NPU_MAX_SRC + TSL_NPU_MAX_DST));
    EXPECT_EQ(OpBatch::max_block_size(l), tsl_npu_block_size(TSL_NPU_MAX_BUFS, 80, 4));
    l.max_ops = 16384;
    EXPECT_EQ(OpBatch::tensor_capacity(l), TSL_NPU_MAX_TENSORS);
}

}  // namespace
}  // namespace tessel::npu

// Test helper for the device runtime: a device on the posix platform (2 workers, 1 MiB of VTCM),
// shared buffers mapped on it by fd, and a builder that lays out a batch block by hand in a queue
// buffer.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <vector>

#include "npu/device/device.h"
#include "npu/posix/platform_posix.h"
#include "npu/link/shm.hpp"

namespace tessel::test {

using Ne = std::array<int64_t, 4>;
using Nb = std::array<uint64_t, 4>;

inline uint32_t type_bytes(uint32_t type) { return type == TSL_NPU_TYPE_F16 ? 2 : 4; }

/// Strides of a contiguous tensor of `type` with shape ne.
inline Nb contiguous(uint32_t type, Ne ne) {
    Nb nb{type_bytes(type), 0, 0, 0};
    for (int i = 1; i < 4; ++i) nb[i] = nb[i - 1] * static_cast<uint64_t>(ne[i - 1]);
    return nb;
}

/// Descriptors of one batch, written into a queue buffer by lay_out().
struct BatchBuilder {
    std::vector<tsl_npu_buf_desc> bufs;
    std::vector<tsl_npu_tensor_desc> tensors;
    std::vector<tsl_npu_op_desc> ops;

    uint32_t buffer(const npu::ShmBuffer& b) {
        bufs.push_back({b.fd(), 0, b.size()});
        return static_cast<uint32_t>(bufs.size() - 1);
    }
    /// A tensor at byte `offset` of buffer `buf`; its size is the span of its elements.
    uint16_t tensor(uint32_t buf, uint32_t type, uint64_t offset, Ne ne, Nb nb) {
        tsl_npu_tensor_desc t{};
        t.buf = buf;
        t.type = type;
        t.offset = offset;
        t.size = type_bytes(type);
        for (int i = 0; i < 4; ++i) {
            t.ne[i] = ne[i];
            t.nb[i] = nb[i];
            t.size += static_cast<uint64_t>(ne[i] - 1) * nb[i];
        }
        tensors.push_back(t);
        return static_cast<uint16_t>(tensors.size() - 1);
    }
    uint16_t tensor(uint32_t buf, uint32_t type, uint64_t offset, Ne ne) {
        return tensor(buf, type, offset, ne, contiguous(type, ne));
    }
    tsl_npu_op_desc& op(uint32_t opcode, std::initializer_list<uint16_t> src, std::initializer_list<uint16_t> dst) {
        tsl_npu_op_desc o{};
        o.opcode = opcode;
        std::fill(std::begin(o.src), std::end(o.src), TSL_NPU_NONE);
        std::fill(std::begin(o.dst), std::end(o.dst), TSL_NPU_NONE);
        std::copy(src.begin(), src.end(), o.src);
        std::copy(dst.begin(), dst.end(), o.dst);
        ops.push_back(o);
        return ops.back();
    }
    /// Writes the block at the start of `queue` and returns the request naming it.
    tsl_npu_batch_req lay_out(npu::ShmBuffer& queue, uint64_t seq = 1) const {
        const auto nb = static_cast<uint32_t>(bufs.size());
        const auto nt = static_cast<uint32_t>(tensors.size());
        const auto no = static_cast<uint32_t>(ops.size());
        const uint64_t size = tsl_npu_block_size(nb, nt, no);
        EXPECT_LE(size, queue.size());
        uint8_t* p = queue.data();
        std::memset(p, 0xa5, size);  // stale bytes: the device must overwrite the profile records
        if (nb) std::memcpy(p, bufs.data(), nb * sizeof(tsl_npu_buf_desc));
        if (nt) std::memcpy(p + tsl_npu_block_tensors_offset(nb), tensors.data(), nt * sizeof(tsl_npu_tensor_desc));
        if (no) std::memcpy(p + tsl_npu_block_ops_offset(nb, nt), ops.data(), no * sizeof(tsl_npu_op_desc));
        return tsl_npu_batch_req{seq, 0, size, nb, nt, no, 0};
    }
};

/// A device on the posix platform with a data buffer and a queue buffer, both mapped.
class DeviceTest : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_EQ(tsl_npu_posix_platform_create(2, kVtcmBytes, &platform_), TSL_NPU_OK);
        device_ = std::make_unique<tsl_npu_device>();
        ASSERT_EQ(tsl_npu_device_init(device_.get(), &platform_), TSL_NPU_OK);
        ASSERT_EQ(map(data_), TSL_NPU_OK);
    }
    void TearDown() override {
        tsl_npu_device_release(device_.get());
        tsl_npu_posix_platform_destroy(&platform_);
    }
    int32_t map(const npu::ShmBuffer& b) {
        return tsl_npu_device_map(device_.get(), b.fd(), b.fd(), b.size());
    }
    /// Runs batch `b` from the queue buffer; fills rsp_ and returns its status.
    int32_t run(const BatchBuilder& b, uint64_t seq = 1) {
        const tsl_npu_batch_req req = b.lay_out(queue_, seq);
        return tsl_npu_device_run(device_.get(), queue_.data(), &req, &rsp_, &heartbeat_, &cancel_);
    }
    const tsl_npu_profile* profile(const BatchBuilder& b) const {
        return reinterpret_cast<const tsl_npu_profile*>(
            queue_.data() + tsl_npu_block_profile_offset(static_cast<uint32_t>(b.bufs.size()),
                                                         static_cast<uint32_t>(b.tensors.size()),
                                                         static_cast<uint32_t>(b.ops.size())));
    }
    template <class T>
    T* at(uint64_t offset) {
        return reinterpret_cast<T*>(data_.data() + offset);
    }

    static constexpr uint64_t kVtcmBytes = 1u << 20;  ///< the test device's scratchpad
    tsl_npu_platform platform_{};
    std::unique_ptr<tsl_npu_device> device_;
    npu::ShmBuffer data_{"npu-device-test-data", 1 << 20};
    npu::ShmBuffer queue_{"npu-device-test-queue", 1 << 16};
    tsl_npu_batch_rsp rsp_{};
    volatile uint64_t heartbeat_ = 0;
    volatile uint32_t cancel_ = 0;
};

}  // namespace tessel::test

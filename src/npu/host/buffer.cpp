#include "npu/host/buffer.hpp"

#include <algorithm>
#include <cstring>

#include "npu/host/device.hpp"
#include "npu/host/session.hpp"
#include "tessel/errors.hpp"

namespace tessel::npu {

std::string NpuBufferType::name() const { return device_.name() + (host_ ? "-HOST" : ""); }

size_t NpuBufferType::max_size() const {
    return static_cast<size_t>(std::min<uint64_t>(uint64_t{1} << 31, device_.config().max_mapped / 4));
}

std::unique_ptr<Buffer> NpuBufferType::alloc_buffer(size_t size) {
    if (size > max_size())
        throw Error(ErrorCode::InvalidArgument, name() + ": a buffer of " + std::to_string(size) + " bytes exceeds the " +
                                                    std::to_string(max_size()) + "-byte limit of one device mapping (a quarter of TESSEL_NPU_VMEM, at most 2 GiB)");
    return std::make_unique<NpuBuffer>(*this, size);
}

NpuBuffer::NpuBuffer(NpuBufferType& type, size_t size) : Buffer(type, size), npu_type_(type) {
    shm_ = std::make_unique<ShmBuffer>(type.name(), size);
    type.device().session().map(*shm_, wire_flags());
}

NpuBuffer::~NpuBuffer() { npu_type_.device().session().unmap(*shm_); }

uint32_t NpuBuffer::wire_flags() const {
    uint32_t f = npu_type_.is_host() ? TSL_NPU_BUF_HOST : 0;
    if (usage() == BufferUsage::Weights) f |= TSL_NPU_BUF_WEIGHTS;
    return f;
}

void NpuBuffer::set_tensor(Tensor& t, const void* src, size_t offset, size_t size) {
    check_range(t, offset, size, "set_tensor");
    std::memcpy(static_cast<uint8_t*>(t.data) + offset, src, size);
}

void NpuBuffer::get_tensor(const Tensor& t, void* dst, size_t offset, size_t size) const {
    check_range(t, offset, size, "get_tensor");
    std::memcpy(dst, static_cast<const uint8_t*>(t.data) + offset, size);
}

void NpuBuffer::clear(uint8_t value) { std::memset(shm_->data(), value, this->size()); }

const NpuBuffer* npu_buffer_of(const Tensor& t) {
    return dynamic_cast<const NpuBuffer*>(t.buffer);
}

}  // namespace tessel::npu

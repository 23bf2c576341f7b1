#include "backend/buffer.hpp"

#include <algorithm>

#include "tessel/errors.hpp"

namespace tessel {

void Buffer::init_tensor(Tensor& t, size_t offset) {
    if (t.view_src) {
        if (!t.view_src->buffer)
            throw Error(ErrorCode::InvalidArgument, "view " + describe(t) + " initialised before its source " + describe(*t.view_src));
        t.buffer = t.view_src->buffer;
        t.data = static_cast<uint8_t*>(t.view_src->data) + t.view_offset;
        return;
    }
    const size_t align = type_.alignment();
    const size_t need = type_.alloc_size(t);
    if (offset % align != 0 || offset > size_ || need > size_ - offset)
        throw Error(ErrorCode::InvalidArgument, "tensor " + describe(t) + " (" + std::to_string(need) + " bytes at offset " +
                                                    std::to_string(offset) + ") does not fit buffer " + type_.name() + " of " +
                                                    std::to_string(size_) + " bytes with alignment " + std::to_string(align));
    t.buffer = this;
    t.data = static_cast<uint8_t*>(base()) + offset;
}

void Buffer::get_tensor_2d(const Tensor& t, void* dst, size_t offset, size_t size, size_t n_copies, size_t stride_tensor,
                           size_t stride_data) const {
    if (n_copies == 0) return;
    const size_t n = t.n_bytes();
    if (stride_tensor != 0 && n_copies - 1 > (n - std::min(n, offset)) / stride_tensor)
        throw Error(ErrorCode::InvalidArgument, "get_tensor_2d of " + std::to_string(n_copies) + " blocks " +
                                                    std::to_string(stride_tensor) + " bytes apart from offset " +
                                                    std::to_string(offset) + " is outside tensor " + describe(t) + " (" +
                                                    std::to_string(n) + " bytes)");
    check_range(t, offset + (n_copies - 1) * stride_tensor, size, "get_tensor_2d");
    for (size_t i = 0; i < n_copies; ++i)
        get_tensor(t, static_cast<uint8_t*>(dst) + i * stride_data, offset + i * stride_tensor, size);
}

void Buffer::check_range(const Tensor& t, size_t offset, size_t size, const char* what) {
    const size_t n = t.n_bytes();
    if (offset > n || size > n - offset)
        throw Error(ErrorCode::InvalidArgument, std::string(what) + " of " + std::to_string(size) + " bytes at offset " +
                                                    std::to_string(offset) + " is outside tensor " + describe(t) + " (" +
                                                    std::to_string(n) + " bytes)");
}

size_t tensor_offset(const Tensor& t) {
    return static_cast<size_t>(static_cast<const uint8_t*>(t.data) - static_cast<const uint8_t*>(t.buffer->base()));
}

}  // namespace tessel

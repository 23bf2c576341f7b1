#include "graph/tensor.hpp"

#include <cstdint>

#include "tessel/errors.hpp"

namespace tessel {

std::array<uint64_t, kMaxDims> contiguous_strides(DType t, const std::array<int64_t, kMaxDims>& ne) {
    const DTypeInfo& info = dtype_info(t);
    std::array<uint64_t, kMaxDims> nb{};
    nb[0] = info.block_bytes;
    nb[1] = dtype_row_bytes(t, ne[0]);
    for (int d = 2; d < kMaxDims; ++d) nb[d] = nb[d - 1] * static_cast<uint64_t>(ne[d - 1]);
    return nb;
}

uint64_t Tensor::n_bytes() const {
    for (int64_t n : ne)
        if (n == 0) return 0;
    const DTypeInfo& info = dtype_info(type);
    // Offset of the last element (or block) plus its size. A block-quantized row is always
    // stored whole, so dim 0 counts ne[0] / block_size blocks of nb[0] bytes.
    uint64_t bytes = info.block_size == 1 ? info.block_bytes + static_cast<uint64_t>(ne[0] - 1) * nb[0]
                                          : static_cast<uint64_t>(ne[0]) / info.block_size * nb[0];
    for (int d = 1; d < kMaxDims; ++d) bytes += static_cast<uint64_t>(ne[d] - 1) * nb[d];
    return bytes;
}

bool Tensor::is_contiguous() const { return nb == contiguous_strides(type, ne); }

void Tensor::set_shape(DType t, std::initializer_list<int64_t> dims) {
    if (dims.size() == 0 || dims.size() > kMaxDims)
        throw Error(ErrorCode::InvalidArgument, "tensor '" + name + "': 1 to 4 dimensions expected, got " +
                                                    std::to_string(dims.size()));
    std::array<int64_t, kMaxDims> shape{1, 1, 1, 1};
    int d = 0;
    for (int64_t n : dims) {
        if (n < 1)
            throw Error(ErrorCode::InvalidArgument,
                        "tensor '" + name + "': dimension " + std::to_string(d) + " is " + std::to_string(n) + ", expected >= 1");
        shape[d++] = n;
    }
    const uint32_t block = dtype_info(t).block_size;
    if (shape[0] % block != 0)
        throw Error(ErrorCode::InvalidArgument, "tensor '" + name + "': ne[0] = " + std::to_string(shape[0]) +
                                                    " is not a multiple of the " + dtype_name(t) + " block size " +
                                                    std::to_string(block));
    // Element and byte counts must fit in 63 bits (GGUF tensors are checked the same way).
    int64_t elements = 1;
    uint64_t bytes = dtype_row_bytes(t, shape[0]);
    for (int i = 0; i < kMaxDims; ++i)
        if (__builtin_mul_overflow(elements, shape[i], &elements) ||
            (i > 0 && __builtin_mul_overflow(bytes, static_cast<uint64_t>(shape[i]), &bytes)) || bytes > INT64_MAX)
            throw Error(ErrorCode::InvalidArgument, "tensor '" + name + "': shape overflows 64-bit element/byte counts");
    type = t;
    ne = shape;
    nb = contiguous_strides(t, ne);
}

std::string describe(const Tensor& t) {
    std::string s = (t.name.empty() ? std::string("(unnamed)") : t.name) + " [";
    int last = kMaxDims - 1;
    while (last > 0 && t.ne[last] == 1) --last;
    for (int d = 0; d <= last; ++d) s += (d ? ", " : "") + std::to_string(t.ne[d]);
    return s + "] " + dtype_name(t.type);
}

}  // namespace tessel

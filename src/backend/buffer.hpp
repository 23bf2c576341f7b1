// Buffers and buffer types: where tensor data lives (DESIGN.md, "Core contracts").
//
// A BufferType is a kind of memory a device offers (host RAM, device memory, a repacking weight
// store); it allocates Buffers. A Buffer owns one allocation and places tensors in it: after
// init_tensor, tensor.buffer = this and tensor.data points into it. Data moves in and out only
// through set_tensor / get_tensor, so a buffer may keep tensors in a private layout (e.g. packed
// weights) and still hand back the original bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "graph/tensor.hpp"

namespace tessel {

class Buffer;

/// What a buffer holds; a repacking buffer type only repacks Weights buffers.
enum class BufferUsage { Any, Weights, Compute };

class BufferType {
public:
    virtual ~BufferType() = default;
    /// Stable name shown to users, e.g. "CPU", "CPU_PACKED", "NPU0".
    virtual std::string name() const = 0;
    /// Allocates `size` bytes. Throws tessel::Error(Io) when memory cannot be had, and
    /// tessel::Error(InvalidArgument) when size exceeds max_size().
    virtual std::unique_ptr<Buffer> alloc_buffer(size_t size) = 0;
    /// Alignment of tensor data inside buffers of this type, bytes (a power of two).
    virtual size_t alignment() const { return 64; }
    /// Largest single buffer, bytes; the weight loader spreads tensors over several buffers
    /// when one would exceed it.
    virtual size_t max_size() const { return SIZE_MAX; }
    /// Bytes this type needs for tensor t (a repacked layout may need more than t.n_bytes()).
    virtual size_t alloc_size(const Tensor& t) const { return t.n_bytes(); }
    /// True when tensor data is plain host memory the CPU can read and write directly.
    virtual bool is_host() const = 0;
    /// For weight buffer types: true when node `use`, reading a weight stored in this type, can
    /// run (a repacking type serves only the ops its kernels implement). Default: every op.
    virtual bool supports_use(const Tensor& use) const { (void)use; return true; }
};

class Buffer {
public:
    Buffer(BufferType& type, size_t size) : type_(type), size_(size) {}
    virtual ~Buffer() = default;
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;

    BufferType& type() const { return type_; }
    size_t size() const { return size_; }
    BufferUsage usage() const { return usage_; }
    void set_usage(BufferUsage u) { usage_ = u; }

    /// Start of the allocation (host address for host buffers; an opaque base otherwise).
    virtual void* base() = 0;

    /// Places tensor t at byte `offset` of this buffer (offset aligned to type().alignment(),
    /// offset + type().alloc_size(t) <= size()). Views get view_src's buffer and data + offset.
    /// Throws tessel::Error(InvalidArgument) naming the tensor when it does not fit.
    virtual void init_tensor(Tensor& t, size_t offset);

    /// Copies `size` bytes from `src` into t's data at byte `offset` (of t's plain layout).
    /// Throws tessel::Error(InvalidArgument) when offset + size exceeds t.n_bytes().
    virtual void set_tensor(Tensor& t, const void* src, size_t offset, size_t size) = 0;
    /// Copies `size` bytes of t's data at byte `offset` into `dst`; a repacking buffer returns the
    /// original (GGUF) bytes, bit-exact. Throws like set_tensor.
    virtual void get_tensor(const Tensor& t, void* dst, size_t offset, size_t size) const = 0;
    /// The 2-D read (ggml's get_tensor_2d shape): n_copies blocks of `size` bytes, block i from t's
    /// data at byte offset + i * stride_tensor into dst + i * stride_data (e.g. every k-th row of
    /// a weight: size = its row bytes, stride_tensor = k rows). Each block is a get_tensor, so a
    /// repacking buffer returns GGUF bytes here too. Throws tessel::Error(InvalidArgument) naming
    /// t, before copying anything, when a block lies outside t's n_bytes().
    void get_tensor_2d(const Tensor& t, void* dst, size_t offset, size_t size, size_t n_copies, size_t stride_tensor,
                       size_t stride_data) const;
    /// Fills the whole allocation with `value`.
    virtual void clear(uint8_t value) = 0;

protected:
    /// Throws unless [offset, offset + size) lies inside t's n_bytes().
    static void check_range(const Tensor& t, size_t offset, size_t size, const char* what);

private:
    BufferType& type_;
    size_t size_;
    BufferUsage usage_ = BufferUsage::Any;
};

/// Offset of t's data inside its buffer, bytes.
size_t tensor_offset(const Tensor& t);

}  // namespace tessel

// Tensor: one node or leaf of a compute graph (DESIGN.md, "Core contracts").
//
// Layout follows GGUF/ggml: ne[0] is the innermost dimension, nb[i] is the byte stride of
// dimension i. For a block-quantized type, nb[0] is the block's byte size and nb[1] the row
// size; ne[0] must then be a multiple of the block size. Unused trailing dims are 1.
// A view (VIEW, RESHAPE, PERMUTE, TRANSPOSE) shares storage with view_src at view_offset bytes.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <string>

#include "core/dtype.hpp"
#include "graph/op.hpp"

namespace tessel {

class Buffer;  // src/backend: owns the memory a tensor's data points into

inline constexpr int kMaxDims = 4;
inline constexpr int kMaxSrc = 10;
inline constexpr int kMaxOpParams = 16;

/// Tensor flags (bit set).
enum TensorFlag : uint32_t {
    kFlagInput = 1u << 0,    ///< set by the caller before compute
    kFlagOutput = 1u << 1,   ///< read by the caller after compute; never reused by the allocator
    kFlagWeight = 1u << 2,   ///< model weight: lives in a weights buffer
    kFlagCompute = 1u << 3,  ///< intermediate result: lives in a compute buffer
    kFlagSplitOutput = 1u << 4,  ///< read by a node of another scheduler split (set by Scheduler::allocate):
                                 ///< its backend must write it, even where it fuses the nodes around it
};

struct Tensor {
    DType type = DType::F32;
    std::array<int64_t, kMaxDims> ne{1, 1, 1, 1};  ///< elements per dim
    std::array<uint64_t, kMaxDims> nb{};           ///< bytes per step in each dim

    Op op = Op::NONE;
    std::array<int32_t, kMaxOpParams> op_params{};  ///< per-op parameters (see op.hpp)
    std::array<Tensor*, kMaxSrc> src{};             ///< inputs; unused slots are nullptr

    Tensor* view_src = nullptr;  ///< tensor whose storage this view shares
    uint64_t view_offset = 0;    ///< bytes into view_src's data

    Buffer* buffer = nullptr;  ///< buffer holding the data (nullptr until allocated)
    void* data = nullptr;      ///< first element (host address for host buffers, else backend-defined)
    std::string name;
    uint32_t flags = 0;
    void* extra = nullptr;  ///< backend-private per-tensor state (e.g. packed-layout info)

    /// Number of elements (product of ne).
    int64_t n_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
    /// Number of rows (product of ne[1..3]).
    int64_t n_rows() const { return ne[1] * ne[2] * ne[3]; }
    /// Bytes spanned by the data given ne and nb (for a contiguous tensor: rows × row bytes).
    uint64_t n_bytes() const;
    /// Bytes of one contiguous row of ne[0] elements.
    uint64_t row_bytes() const { return dtype_row_bytes(type, ne[0]); }
    /// True when rows are densely packed in ne order (nb are the contiguous strides).
    bool is_contiguous() const;
    /// True when op_params / shape make this a view of view_src (no storage of its own).
    bool is_view() const { return view_src != nullptr; }

    float op_param_f32(int i) const {
        float f;
        std::memcpy(&f, &op_params[i], sizeof f);
        return f;
    }
    void set_op_param_f32(int i, float f) { std::memcpy(&op_params[i], &f, sizeof f); }

    /// Sets ne (trailing dims default to 1) and contiguous strides for `type`.
    /// Throws tessel::Error(InvalidArgument) when a dim is < 1 or ne[0] is not a multiple of the
    /// type's block size (the message names the tensor).
    void set_shape(DType t, std::initializer_list<int64_t> dims);
};

/// Contiguous byte strides for type t and shape ne (nb[0] = block bytes, nb[1] = row bytes, ...).
std::array<uint64_t, kMaxDims> contiguous_strides(DType t, const std::array<int64_t, kMaxDims>& ne);

/// "name [ne0, ne1, ...] TYPE" for messages.
std::string describe(const Tensor& t);

}  // namespace tessel

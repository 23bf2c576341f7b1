// The CPU_PACKED weight buffer type (DESIGN.md, "The packed cpu path").
//
// A weight whose type has a chain of packed kernels on this CPU (kernel.hpp) is stored as
//
//   PackedHeader (128 bytes: magic "TSLPACK\0", version, slot count, per slot: format id, offset
//                 and size in bytes from the header's start)
//   slot 0 .. slot_count-1, each 64-byte aligned: the weight in one packed format (format.hpp),
//                 matrix after matrix ([K, N] per (i2, i3) of ne[2], ne[3]).
//
// There is one slot per distinct format in the weight type's chain (kernels that share a layout
// share its slot; every format is lossless). Whether a tensor is packed is recorded by the buffer
// (tensor.extra points at its PackedTensor record), never guessed from the bytes, so a plain
// tensor whose bytes imitate a header stays plain data. set_tensor packs once the whole tensor
// has been written (partial writes are staged until then); get_tensor unpacks, returning the
// original GGUF bytes bit-exactly. Other tensors in the buffer (e.g. test frames) are plain.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "backend/buffer.hpp"
#include "cpu/packed/format.hpp"

namespace tessel::cpu::packed {

constexpr uint32_t kHeaderVersion = 1;
constexpr int kMaxSlots = 3;

struct PackedSlot {
    uint32_t format;    ///< FormatId
    uint32_t reserved;  ///< 0
    uint64_t offset;    ///< bytes from the header's start (a multiple of 64)
    uint64_t size;      ///< bytes
};

struct alignas(64) PackedHeader {
    char magic[8];  ///< "TSLPACK\0"
    uint32_t version;
    uint32_t slot_count;
    PackedSlot slots[kMaxSlots];
};
static_assert(sizeof(PackedHeader) == 128, "the header keeps slot 0 at a 64-byte boundary");

/// The buffer's record of one packed tensor (tensor.extra).
struct PackedTensor {
    std::vector<const Format*> formats;  ///< one per slot
    std::vector<uint8_t> staging;        ///< GGUF bytes of a partially written tensor
    std::vector<std::pair<size_t, size_t>> written;  ///< staged byte ranges [begin, end), merged
    bool complete = false;               ///< all bytes written and packed
};

/// The packed layout of tensor t (its extra), or nullptr when t is not packed. Only tensors placed
/// in a CPU_PACKED buffer by init_tensor can be packed.
const PackedTensor* packed_of(const Tensor& t);

/// The slot of format f in packed tensor t (header checked: magic, version, slot count, offsets
/// and sizes inside the allocation), as a pointer to its first byte. Throws Error(InvalidArgument)
/// naming the tensor when the header is damaged, when the tensor is not complete, or when no
/// slot has format f.
const uint8_t* slot_data(const Tensor& t, const Format& f);

/// Bytes CPU_PACKED needs for t: header plus slots (0 when t is not packable).
size_t packed_alloc_size(const Tensor& t);

class PackedBufferType final : public BufferType {
public:
    std::string name() const override { return "CPU_PACKED"; }
    std::unique_ptr<Buffer> alloc_buffer(size_t size) override;
    bool is_host() const override { return true; }
    size_t alloc_size(const Tensor& t) const override;
    /// MUL_MAT, MUL_MAT_ID and GET_ROWS nodes whose weight type has a packed chain on this CPU, with F32
    /// activations in contiguous rows (see mul_mat.cpp).
    bool supports_use(const Tensor& use) const override;
    /// The process-wide instance.
    static PackedBufferType& instance();
};

/// Whether weights go to CPU_PACKED: false when TESSEL_CPU_PACKED=0 (read once; a value other
/// than 0 or 1, an empty one included, throws Error(Environment) naming it) or after set_packed_enabled(false)
/// (the CLI's --no-packed).
bool packed_enabled();
void set_packed_enabled(bool on);

}  // namespace tessel::cpu::packed

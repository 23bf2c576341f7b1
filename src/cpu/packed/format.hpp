// Packed weight formats of the CPU_PACKED buffer type (DESIGN.md, "The packed cpu path").
//
// A format is a lossless permutation of a weight's GGUF bytes: the quants and scales are kept as
// they are (fp16 scales stay fp16), only their order changes, so unpack(pack(x)) == x byte for
// byte. Every format interleaves groups of kGroupRows = 16 weight rows (N is padded up to a
// multiple of 16 with zero rows; padding is never read back):
//
//   q4_0x16, q4_1x16, q8_0x16  per group, per 32-element block b (16 x block_bytes each):
//        d[16]          fp16 scale of rows 0..15
//        m[16]          fp16 min of rows 0..15 (q4_1 only)
//        qs             the rows' quant bytes as "registers" of 64 bytes: register r holds, for
//                       row j = 0..15 at byte 4j, the row's quant bytes 4r .. 4r+3.
//                       Q4 bytes hold element i in the low nibble and i+16 in the high one, so a
//                       register's low nibbles are elements 4r..4r+3 and its high nibbles
//                       16+4r..16+4r+3 (4 registers per block); Q8_0 has 8 registers.
//   iq4_nlx16            as q4_0x16 (the nibbles index the non-linear table kvalues).
//   q5_0x16              as q4_0x16, with one more register between d and the nibbles: row j's
//                       4 high-bit bytes qh at byte 4j (bit e of the little-endian 32-bit qh is
//                       bit 4 of element e), so a block is d[16], qh register, 4 nibble registers.
//   q4_Kx16              per group, per 256-element super-block (16 x 144 bytes): d[16], dmin[16]
//                       (fp16), then the rows' other 140 bytes as 35 registers: 3 of the 12
//                       packed 6-bit scale/min bytes, 32 of quant bytes. Quant byte 32c + l holds
//                       element 64c + l (low nibble) and 64c + 32 + l (high), so register
//                       8c + q has elements 64c + 4q.. (sub-block 2c) and 64c + 32 + 4q.. (2c + 1).
//   q5_Kx16              as q4_Kx16 (16 x 176 bytes) with the 32 qh bytes as 8 registers between the
//                       scale and quant registers: bit j of qh byte l is bit 4 of element 32j + l.
//   q6_Kx16              per group, per super-block (16 x 210 bytes): the rows' first 208 bytes as
//                       52 registers (32 of ql, 16 of qh, 4 of the int8 scales), then d[16].
//   f16x16               per group, per element k: the 16 rows' fp16 values (32 bytes).
//
// A register is one 512-bit vector whose 32-bit lane j belongs to weight row j: an int8 dot
// product over 4 K-elements per lane (VNNI vpdpbusd, AVX2 maddubs+madd) yields 16 output columns
// at once, and the same 64 bytes are one row of an AMX B tile (16 columns x 4 K-bytes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/dtype.hpp"

namespace tessel::cpu::packed {

/// Weight rows interleaved per group: the column step (n_step) of every packed kernel.
constexpr int64_t kGroupRows = 16;

/// Stable ids stored in packed headers; never renumber.
enum class FormatId : uint32_t { Q4_0x16 = 1, Q4_1x16 = 2, Q8_0x16 = 3, F16x16 = 4, Q5_0x16 = 5, Q4_Kx16 = 6, Q6_Kx16 = 7,
                              Q5_Kx16 = 8, IQ4_NLx16 = 9 };

struct Format {
    FormatId id;
    const char* name;  ///< e.g. "q4_0x16"
    DType weight;      ///< the GGUF type whose rows it holds
    /// Bytes of one group (16 rows) of k elements: 16 * dtype_row_bytes(weight, k).
    size_t (*group_bytes)(int64_t k);
    /// Packs n GGUF rows of k elements (row-major, dtype_row_bytes(weight, k) each) into dst
    /// (packed_bytes(n, k) bytes; padding rows are zero).
    void (*pack)(const uint8_t* src, uint8_t* dst, int64_t n, int64_t k);
    /// The inverse: writes the n original GGUF rows from the packed form.
    void (*unpack)(const uint8_t* src, uint8_t* dst, int64_t n, int64_t k);
};

/// Every format. Pure data; the pack/unpack code is scalar and architecture-neutral.
std::span<const Format> formats();
/// The format for GGUF type t, or nullptr when none packs it.
const Format* format_for(DType t);
/// The format with header id `id`, or nullptr.
const Format* format_by_id(uint32_t id);

/// Packed bytes of n rows of k elements: ceil(n / 16) groups.
size_t packed_bytes(const Format& f, int64_t n, int64_t k);
/// Byte offset of the group holding row n0 (n0 a multiple of 16).
size_t group_offset(const Format& f, int64_t n0, int64_t k);
/// Whether a [k, n] weight of f's type can be packed (k a positive multiple of the block size).
bool packable(const Format& f, int64_t k);

}  // namespace tessel::cpu::packed

// Tiled weights for the NPU (DESIGN.md, "The npu offload path"; docs/npu.md, "Tiled weights").
//
// A weight of type Q4_0, Q4_1, Q8_0, IQ4_NL or MXFP4 with shape ne (ne[0] = K elements per row,
// ne[1] = N rows, ne[2] x ne[3] matrices) is stored in an NPUn weights buffer as 32x32 tiles, the
// layout of the seed's Hexagon backend (repack_q4_0_tiled and friends: a fact of that format).
//
// Order: matrix after matrix (i2 + ne[2] * i3); in a matrix the row tiles rt = 0 .. ceil(N/32)-1
// outer and the K tiles kt = 0 .. K/32-1 inner: tile (rt, kt) starts at
//     matrix * tiles_per_matrix * tile_bytes + (rt * K/32 + kt) * tile_bytes.
// Tile (rt, kt) holds GGUF block kt of rows 32*rt .. 32*rt+31 (row r of the tile = row 32*rt + r).
// Rows past N (padding) have zero quants and zero scales (and mins). K is a multiple of 32 for
// every tileable type (one GGUF block), so no K padding arises.
//
// In a tile, q[r][j] is quant j (0..31, the element's K index in the block) of row r; in GGUF
// 4-bit blocks quant j < 16 is the low nibble of qs[j] and quant j >= 16 the high nibble of qs[j-16].
//  - 4-bit types (Q4_0, Q4_1, IQ4_NL, MXFP4): 512 bytes of nibble column pairs: byte
//    [c * 32 + r] = q[r][2c] | q[r][2c+1] << 4 for c = 0..15 (low nibble = even column).
//  - Q8_0: 1024 bytes of byte column pairs: bytes [c * 64 + 2r] = q[r][2c], [c * 64 + 2r + 1] = q[r][2c+1].
// Then the 32 row scales, as stored in GGUF (fp16 bits `d`, E8M0 byte `e` for MXFP4), row r at
// index r; for Q4_1 then the 32 mins (fp16 bits `m`), row r at index r. Tile bytes:
//     Q4_0 576 = 512 + 64, Q4_1 640 = 512 + 64 + 64, Q8_0 1088 = 1024 + 64, IQ4_NL 576, MXFP4 544 = 512 + 32.
// (The seed interleaves Q4_1's d and m per row; tessel keeps 32 scales then 32 mins, so a vector
// kernel loads each with one 64-byte load.)
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "core/dtype.hpp"

namespace tessel::npu::tiled {

using Shape = std::array<int64_t, 4>;

inline constexpr int64_t kTileRows = 32;  ///< rows (N) per tile
inline constexpr int64_t kTileK = 32;     ///< elements (K) per tile: one GGUF block

inline constexpr size_t kTileBytesQ4_0 = 32 * 32 / 2 + 32 * 2;
inline constexpr size_t kTileBytesQ4_1 = 32 * 32 / 2 + 32 * 2 + 32 * 2;
inline constexpr size_t kTileBytesQ8_0 = 32 * 32 + 32 * 2;
inline constexpr size_t kTileBytesIQ4_NL = 32 * 32 / 2 + 32 * 2;
inline constexpr size_t kTileBytesMXFP4 = 32 * 32 / 2 + 32;
static_assert(kTileBytesQ4_0 == 576 && kTileBytesQ4_1 == 640 && kTileBytesQ8_0 == 1088 && kTileBytesIQ4_NL == 576 &&
                  kTileBytesMXFP4 == 544,
              "tile sizes of the seed's format");

/// True for Q4_0, Q4_1, Q8_0, IQ4_NL and MXFP4.
bool is_tileable(DType type);

/// Bytes of one tile of `type` (above), 0 when the type is not tileable.
size_t tile_bytes(DType type);

/// Bytes of the tiled form of a tensor of `type` and shape ne, padding included:
/// ne[2] * ne[3] * ceil(ne[1] / 32) * (ne[0] / 32) * tile_bytes(type).
/// Throws tessel::Error(InvalidArgument) when the type is not tileable, a dim is < 1 or ne[0] is
/// not a multiple of 32.
size_t tiled_size(DType type, const Shape& ne);

/// Writes the tiled form (tiled_size bytes) of `src`, the tensor's GGUF bytes (contiguous rows,
/// dtype_row_bytes(type, ne[0]) * ne[1] * ne[2] * ne[3] bytes), to `dst`. Throws like tiled_size.
void repack(DType type, const Shape& ne, const uint8_t* src, uint8_t* dst);

/// Writes bytes [offset, offset + size) of the tensor's GGUF layout, read from its tiled form
/// `tiled`, to `dst` (any range: it need not start or end on a row or block). Bit-exact inverse
/// of repack. Throws like tiled_size, and Error(InvalidArgument) when the range exceeds the
/// tensor's GGUF byte count.
void unpack(DType type, const Shape& ne, const uint8_t* tiled, size_t offset, size_t size, uint8_t* dst);

}  // namespace tessel::npu::tiled

#include "npu/host/tiled.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "tessel/errors.hpp"

namespace tessel::npu::tiled {
namespace {

/// Where the parts of one GGUF block of a tileable type sit, and the tile's regions.
struct Layout {
    size_t block_bytes;  ///< GGUF block size
    size_t quant_at;     ///< offset of the quants in the GGUF block (the scale is at 0)
    size_t scale_bytes;  ///< 2 (fp16 d) or 1 (E8M0 e)
    bool has_min;        ///< Q4_1: fp16 m at block offset 2
    bool nibbles;        ///< 4-bit quants (else Q8_0's bytes)
    size_t quant_region() const { return nibbles ? 512 : 1024; }
    size_t tile() const { return quant_region() + 32 * scale_bytes + (has_min ? 64 : 0); }
};

const Layout* layout_of(DType type) {
    static const Layout q4_0{18, 2, 2, false, true};
    static const Layout q4_1{20, 4, 2, true, true};
    static const Layout q8_0{34, 2, 2, false, false};
    static const Layout mxfp4{17, 1, 1, false, true};
    switch (type) {
    case DType::Q4_0:
    case DType::IQ4_NL: return &q4_0;  // same block: fp16 d, 16 nibble bytes
    case DType::Q4_1: return &q4_1;
    case DType::Q8_0: return &q8_0;
    case DType::MXFP4: return &mxfp4;
    default: return nullptr;
    }
}

/// The layout of `type`, with the shape checked.
const Layout& checked(DType type, const Shape& ne) {
    const Layout* l = layout_of(type);
    if (!l) throw Error(ErrorCode::InvalidArgument, std::string("NPU tiled weights: type ") + dtype_name(type) + " is not tileable");
    for (int i = 0; i < 4; ++i)
        if (ne[i] < 1)
            throw Error(ErrorCode::InvalidArgument, "NPU tiled weights: dim " + std::to_string(i) + " is " + std::to_string(ne[i]) +
                                                        ", expected at least 1");
    if (ne[0] % kTileK != 0)
        throw Error(ErrorCode::InvalidArgument, "NPU tiled weights: ne[0] = " + std::to_string(ne[0]) + " is not a multiple of 32");
    return *l;
}

/// Geometry of one tensor in tiles.
struct Geometry {
    int64_t k_tiles, row_tiles, rows, matrices;
    size_t tile, matrix_bytes;
    Geometry(const Layout& l, const Shape& ne)
        : k_tiles(ne[0] / kTileK), row_tiles((ne[1] + kTileRows - 1) / kTileRows), rows(ne[1]), matrices(ne[2] * ne[3]),
          tile(l.tile()), matrix_bytes(static_cast<size_t>(k_tiles * row_tiles) * l.tile()) {}
    size_t tile_offset(int64_t matrix, int64_t row, int64_t kt) const {
        return static_cast<size_t>(matrix) * matrix_bytes + static_cast<size_t>((row / kTileRows) * k_tiles + kt) * tile;
    }
};

/// GGUF block `b` into row `r` of tile `t`.
void put_block(const Layout& l, const uint8_t* b, uint8_t* t, int64_t r) {
    const uint8_t* q = b + l.quant_at;
    if (l.nibbles) {
        for (int c = 0; c < 8; ++c)  // quants 2c, 2c+1: low nibbles of qs[2c], qs[2c+1]
            t[c * 32 + r] = static_cast<uint8_t>((q[2 * c] & 0x0f) | (q[2 * c + 1] << 4));
        for (int c = 8; c < 16; ++c)  // quants 2c, 2c+1: high nibbles of qs[2c-16], qs[2c-15]
            t[c * 32 + r] = static_cast<uint8_t>((q[2 * c - 16] >> 4) | (q[2 * c - 15] & 0xf0));
    } else {
        for (int c = 0; c < 16; ++c) std::memcpy(t + c * 64 + 2 * r, q + 2 * c, 2);
    }
    uint8_t* scales = t + l.quant_region();
    std::memcpy(scales + r * l.scale_bytes, b, l.scale_bytes);
    if (l.has_min) std::memcpy(scales + 64 + r * 2, b + 2, 2);
}

/// Row `r` of tile `t` as a GGUF block `b`.
void get_block(const Layout& l, const uint8_t* t, int64_t r, uint8_t* b) {
    uint8_t* q = b + l.quant_at;
    if (l.nibbles) {
        for (int i = 0; i < 16; i += 2) {
            const uint8_t lo = t[(i / 2) * 32 + r];      // quants i, i+1
            const uint8_t hi = t[(8 + i / 2) * 32 + r];  // quants i+16, i+17
            q[i] = static_cast<uint8_t>((lo & 0x0f) | (hi << 4));
            q[i + 1] = static_cast<uint8_t>((lo >> 4) | (hi & 0xf0));
        }
    } else {
        for (int c = 0; c < 16; ++c) std::memcpy(q + 2 * c, t + c * 64 + 2 * r, 2);
    }
    const uint8_t* scales = t + l.quant_region();
    std::memcpy(b, scales + r * l.scale_bytes, l.scale_bytes);
    if (l.has_min) std::memcpy(b + 2, scales + 64 + r * 2, 2);
}

}  // namespace

bool is_tileable(DType type) { return layout_of(type) != nullptr; }

size_t tile_bytes(DType type) {
    const Layout* l = layout_of(type);
    return l ? l->tile() : 0;
}

size_t tiled_size(DType type, const Shape& ne) {
    const Geometry g(checked(type, ne), ne);
    return static_cast<size_t>(g.matrices) * g.matrix_bytes;
}

void repack(DType type, const Shape& ne, const uint8_t* src, uint8_t* dst) {
    const Layout& l = checked(type, ne);
    const Geometry g(l, ne);
    for (int64_t m = 0; m < g.matrices; ++m) {
        if (g.rows % kTileRows != 0)  // the last row tiles hold padding rows: zero them first
            std::memset(dst + g.tile_offset(m, g.rows - 1, 0), 0, static_cast<size_t>(g.k_tiles) * g.tile);
        for (int64_t row = 0; row < g.rows; ++row)
            for (int64_t kt = 0; kt < g.k_tiles; ++kt, src += l.block_bytes)
                put_block(l, src, dst + g.tile_offset(m, row, kt), row % kTileRows);
    }
}

void unpack(DType type, const Shape& ne, const uint8_t* tiled, size_t offset, size_t size, uint8_t* dst) {
    const Layout& l = checked(type, ne);
    const Geometry g(l, ne);
    const size_t total = static_cast<size_t>(g.matrices * g.rows * g.k_tiles) * l.block_bytes;
    if (offset > total || size > total - offset)
        throw Error(ErrorCode::InvalidArgument, "NPU tiled weights: bytes [" + std::to_string(offset) + ", " +
                                                    std::to_string(offset + size) + ") outside the tensor's " +
                                                    std::to_string(total) + " bytes");
    if (size == 0) return;
    // Walk the GGUF blocks overlapping the range in order; (m, row, kt) follow the block index.
    size_t block = offset / l.block_bytes;
    int64_t kt = static_cast<int64_t>(block) % g.k_tiles;
    int64_t row = static_cast<int64_t>(block) / g.k_tiles % g.rows;
    int64_t m = static_cast<int64_t>(block) / (g.k_tiles * g.rows);
    uint8_t part[34];  // one GGUF block, for the range's partial first and last blocks
    size_t done = 0;
    while (done < size) {
        const size_t at = offset + done;
        const size_t skip = at - block * l.block_bytes;
        const size_t n = std::min(l.block_bytes - skip, size - done);
        const uint8_t* t = tiled + g.tile_offset(m, row, kt);
        if (n == l.block_bytes) {
            get_block(l, t, row % kTileRows, dst + done);
        } else {
            get_block(l, t, row % kTileRows, part);
            std::memcpy(dst + done, part + skip, n);
        }
        done += n;
        ++block;
        if (++kt == g.k_tiles) {
            kt = 0;
            if (++row == g.rows) {
                row = 0;
                ++m;
            }
        }
    }
}

}  // namespace tessel::npu::tiled

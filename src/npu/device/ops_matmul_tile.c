/* The matmul micro-kernels (tiled, and the flat pieces) in plain C (every target, Hexagon included), and the tile
 * accessors it shares with GET_ROWS. Tile layout: src/npu/host/tiled.hpp. */
#define TSL_MM_FN tsl_npu_mm_tile_cols_c
#define TSL_MM_WIDEN_FN tsl_npu_mm_widen_c
#define TSL_MM_DOT_FN tsl_npu_mm_dot_c
#include "npu/device/ops_matmul_tile.inc"

void tsl_npu_mm_quantize_c(const float* x, int64_t k, int8_t* q, float* d, int32_t* sums) {
    tsl_npu_quantize_q8_row(x, k, q, d, sums);
}

/* MXFP4's E8M0 exponent e as the float 2^(e - 128) (half the block scale 2^(e - 127), the GGUF
 * dequantization pairs it with twice the E2M1 value); e < 2 gives the subnormals 2^-128, 2^-127. */
static float e8m0_half(uint8_t e) {
    return tsl_npu_f32_of_bits(e < 2 ? (0x00200000u << e) : ((uint32_t)(e - 1) << 23));
}

static float f16_at(const uint8_t* p) {
    uint16_t h;
    __builtin_memcpy(&h, p, 2);
    return tsl_npu_half_to_float(h);
}

void tsl_npu_tile_scales(uint32_t type, const uint8_t* tile, float* d, float* m) {
    const uint32_t quant_bytes = type == TSL_NPU_TYPE_Q8_0 ? 1024u : 512u;
    for (int r = 0; r < 32; ++r) {
        d[r] = type == TSL_NPU_TYPE_MXFP4 ? e8m0_half(tile[512 + r]) : f16_at(tile + quant_bytes + 2 * r);
        m[r] = type == TSL_NPU_TYPE_Q4_1 ? f16_at(tile + 512 + 64 + 2 * r) : 0.0f;
    }
}

int32_t tsl_npu_tile_value(uint32_t type, const uint8_t* tile, int r, int j) {
    if (type == TSL_NPU_TYPE_Q8_0) return (int8_t)tile[(j / 2) * 64 + 2 * r + (j % 2)];
    const uint8_t b = tile[(j / 2) * 32 + r];
    const uint8_t q = (j % 2) ? (uint8_t)(b >> 4) : (uint8_t)(b & 15u);
    int32_t offset;
    const uint8_t* lut = mm_lut(type, &offset);
    return (int32_t)(lut ? lut[q] : q) - (type == TSL_NPU_TYPE_Q4_1 ? 0 : offset);
}

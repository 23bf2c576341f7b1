/* A Hexagon program (run under qemu-hexagon by kernels_test.cpp): the HVX integer code against the
 * plain C build of the same source, bit for bit.
 *   lanes: vec_i8.h's dot products and scaled accumulation, lane by lane (vec_i8_lanes.h), on random
 *          and extreme bytes;
 *   tile:  the tiled matmul kernel, tsl_npu_mm_tile_cols_hvx against tsl_npu_mm_tile_cols_c, for every
 *          tile type, 1..5 K tiles and 1..TSL_NPU_MM_COLS activation columns.
 * Prints one line per check ("lanes dot4 2000 ok", "tile Q4_0 kt=2 cols=3 ok") and "end"; on a
 * mismatch prints what differs and exits 1. */
#include "hexagon/vec_i8_lanes.h"
#include "npu/device/half.h"
#include "npu/device/ops_matmul.h"
#include "npu/hexagon/runtime.h"
#include "npu/proto/proto.h"

static uint32_t g_state = 0x2545f491u;

static uint32_t next(void) { /* xorshift32 */
    g_state ^= g_state << 13;
    g_state ^= g_state >> 17;
    g_state ^= g_state << 5;
    return g_state;
}

/* A float in about [-scale, scale]: an integer count of 1/1024ths. */
static float rnd(float scale) { return (float)((int32_t)(next() % 2049u) - 1024) * (scale / 1024.0f); }

static char g_msg[200];

static void say(const char* a, const char* b, int64_t n, const char* tail) {
    char* p = g_msg;
    for (const char* s = a; *s;) *p++ = *s++;
    for (const char* s = b; *s;) *p++ = *s++;
    *p++ = ' ';
    p = tsl_fmt_i64(p, n);
    for (const char* s = tail; *s;) *p++ = *s++;
    *p++ = '\n';
    *p = 0;
    tsl_puts(1, g_msg);
}

static int differs(const void* x, const void* y, uint32_t bytes, const char* what, int64_t index) {
    if (__builtin_memcmp(x, y, bytes) == 0) return 0;
    say("MISMATCH", what, index, "");
    return 1;
}

static int check_lanes(void) {
    _Alignas(128) uint8_t a[128];
    _Alignas(128) int8_t b[128];
    int32_t acc_h[32], acc_c[32];
    for (int n = 0; n < 2000; ++n) {
        const int extreme = n % 4 == 0; /* 255 x -128 in every lane: the largest products */
        for (int i = 0; i < 128; ++i) {
            a[i] = extreme ? 255u : (uint8_t)next();
            b[i] = extreme ? (int8_t)-128 : (int8_t)next();
        }
        for (int i = 0; i < 32; ++i) acc_h[i] = acc_c[i] = (int32_t)(next() % 200001u) - 100000;
        lanes_hvx_dot4(acc_h, a, b);
        lanes_c_dot4(acc_c, a, b);
        if (differs(acc_h, acc_c, sizeof acc_h, " dot4 case", n)) return 1;
        lanes_hvx_dot4_bcast(acc_h, a, b + 4 * (n % 32));
        lanes_c_dot4_bcast(acc_c, a, b + 4 * (n % 32));
        if (differs(acc_h, acc_c, sizeof acc_h, " dot4_bcast case", n)) return 1;
        float fh[32], fc[32], d[32], m[32];
        for (int i = 0; i < 32; ++i) {
            fh[i] = fc[i] = rnd(100.0f);
            d[i] = rnd(0.05f);
            m[i] = rnd(0.5f);
        }
        const float dx = rnd(0.02f), msx = rnd(3.0f);
        const int32_t off = (int32_t)(next() % 4097u);
        lanes_hvx_scale_acc(fh, acc_h, off, dx, d, (n & 1) ? m : 0, msx);
        lanes_c_scale_acc(fc, acc_c, off, dx, d, (n & 1) ? m : 0, msx);
        if (differs(fh, fc, sizeof fh, " scale_acc case", n)) return 1;
    }
    say("lanes ", "dot4 dot4_bcast scale_acc", 2000, " ok");
    return 0;
}

#define MAX_KT 5
#define MAX_COLS 4
static _Alignas(128) uint8_t g_tiles[MAX_KT * 1088];
static _Alignas(64) uint8_t g_act[TSL_NPU_MM_COLS][MAX_KT * 32 + 3 * 64];
static float g_x[MAX_KT * 32];
static float g_acc_h[TSL_NPU_MM_COLS * 32], g_acc_c[TSL_NPU_MM_COLS * 32];

static void random_tile(uint32_t type, uint8_t* t) {
    const uint32_t bytes = tsl_npu_tile_bytes(type);
    for (uint32_t i = 0; i < bytes; ++i) t[i] = (uint8_t)next();
    if (type == TSL_NPU_TYPE_MXFP4) { /* E8M0 scales 2^-27 .. 2^4, never the NaN code 255 */
        for (int r = 0; r < 32; ++r) t[512 + r] = (uint8_t)(100u + next() % 32u);
        return;
    }
    const uint32_t at = type == TSL_NPU_TYPE_Q8_0 ? 1024u : 512u;
    const int n = type == TSL_NPU_TYPE_Q4_1 ? 64 : 32; /* d, then Q4_1's mins */
    for (int r = 0; r < n; ++r) {
        const uint16_t h = tsl_npu_float_to_half(rnd(0.01f));
        __builtin_memcpy(t + at + 2 * r, &h, 2);
    }
}

static const char* type_name(uint32_t type) {
    switch (type) {
    case TSL_NPU_TYPE_Q4_0: return "Q4_0";
    case TSL_NPU_TYPE_Q4_1: return "Q4_1";
    case TSL_NPU_TYPE_Q8_0: return "Q8_0";
    case TSL_NPU_TYPE_IQ4_NL: return "IQ4_NL";
    default: return "MXFP4";
    }
}

static int check_tiles(void) {
    static const uint32_t k_types[] = {TSL_NPU_TYPE_Q4_0, TSL_NPU_TYPE_Q4_1, TSL_NPU_TYPE_Q8_0, TSL_NPU_TYPE_IQ4_NL,
                                       TSL_NPU_TYPE_MXFP4};
    static const uint32_t k_cols[] = {1, 2, 3, MAX_COLS};
    for (uint32_t ti = 0; ti < sizeof k_types / sizeof k_types[0]; ++ti) {
        const uint32_t type = k_types[ti];
        int checks = 0;
        for (int64_t n_kt = 1; n_kt <= MAX_KT; n_kt += 2)
            for (uint32_t ci = 0; ci < sizeof k_cols / sizeof k_cols[0]; ++ci) {
                const uint32_t n_cols = k_cols[ci];
                const int64_t k = 32 * n_kt;
                const uint64_t q_bytes = ((uint64_t)k + 63u) & ~63ull, s_bytes = ((uint64_t)n_kt * 4u + 63u) & ~63ull;
                for (int64_t kt = 0; kt < n_kt; ++kt) random_tile(type, g_tiles + kt * tsl_npu_tile_bytes(type));
                const uint8_t* act[TSL_NPU_MM_COLS];
                for (uint32_t c = 0; c < n_cols; ++c) {
                    for (int64_t i = 0; i < k; ++i) g_x[i] = rnd(4.0f);
                    tsl_npu_mm_quantize_c(g_x, k, (int8_t*)g_act[c], (float*)(g_act[c] + q_bytes),
                                          (int32_t*)(g_act[c] + q_bytes + s_bytes));
                    act[c] = g_act[c];
                }
                tsl_npu_mm_tile_args args = {type, tsl_npu_tile_bytes(type), n_kt, g_tiles, n_cols, act, q_bytes, s_bytes,
                                             g_acc_h};
                tsl_npu_mm_tile_cols_hvx(&args);
                args.acc = g_acc_c;
                tsl_npu_mm_tile_cols_c(&args);
                if (differs(g_acc_h, g_acc_c, n_cols * 32u * 4u, type_name(type), n_kt * 100 + n_cols)) return 1;
                ++checks;
            }
        say("tile ", type_name(type), checks, " shapes ok");
    }
    return 0;
}

int tsl_main(int argc, char** argv) {
    (void)argc;
    (void)argv;
    if (check_lanes() || check_tiles()) return 1;
    tsl_puts(1, "end\n");
    return 0;
}

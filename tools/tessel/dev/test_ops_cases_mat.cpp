// test-ops cases of matrix products (MUL_MAT, MUL_MAT_ID) and attention (ROPE, SOFT_MAX,
// FLASH_ATTN_EXT), and the perf-mode case list.
#include <algorithm>
#include <cmath>

#include "graph/builder.hpp"
#include "graph/builder_attn.hpp"
#include "test_ops.hpp"

namespace tessel::cli::test_ops {
namespace {

constexpr double kMatNmse = 5e-4;  // MUL_MAT, MUL_MAT_ID, FLASH_ATTN_EXT
/// Q8-grid activations (lossless in Q8_0): only the kernel's float rounding remains.
constexpr double kGridNmse = 1e-11;

Case make(Op op, std::string variant, std::function<Tensor*(Maker&)> build, bool core = false, double bound = 1e-7) {
    Case c;
    c.op = op;
    c.variant = std::move(variant);
    c.build = std::move(build);
    c.core = core;
    c.max_nmse = bound;
    return c;
}

/// A reduction length for type t: a multiple of its block, with a tail past a 256-multiple
/// where the block allows it (plain types: odd).
int64_t k_long(DType t) {
    switch (dtype_info(t).block_size) {
        case 1: return 291;
        case 256: return 768;
        default: return 288;  // 9 blocks of 32: 256 + a 32 tail
    }
}
int64_t k_short(DType t) {
    switch (dtype_info(t).block_size) {
        case 1: return 33;
        case 256: return 256;
        default: return 160;  // 5 blocks
    }
}

}  // namespace

void add_matmul_cases(std::vector<Case>& out) {
    for (DType t : weight_types()) {
        const bool common = t == DType::F32 || t == DType::F16 || t == DType::Q4_0 || t == DType::Q8_0 || t == DType::Q4_K;
        const int64_t kl = k_long(t), ks = k_short(t);
        out.push_back(make(Op::MUL_MAT, "M=1", [t, kl](Maker& m) {
            return build::mul_mat(m.g(), m.weight(t, {kl, 33}), m.input(DType::F32, {kl, 1}));
        }, true, kMatNmse));
        out.push_back(make(Op::MUL_MAT, "", [t, ks](Maker& m) {
            return build::mul_mat(m.g(), m.weight(t, {ks, 17}), m.input(DType::F32, {ks, 7}));
        }, true, kMatNmse));
        out.push_back(make(Op::MUL_MAT, "", [t, ks](Maker& m) {
            return build::mul_mat(m.g(), m.weight(t, {ks, 40}), m.input(DType::F32, {ks, 32}));
        }, common, kMatNmse));
        out.push_back(make(Op::MUL_MAT, "bcast", [t, ks](Maker& m) {
            return build::mul_mat(m.g(), m.weight(t, {ks, 12, 2, 1}), m.input(DType::F32, {ks, 5, 6, 2}));
        }, common, kMatNmse));
        out.push_back(make(Op::MUL_MAT, "bcast M=9", [t, ks](Maker& m) {  // a full GEMM tile per batch
            return build::mul_mat(m.g(), m.weight(t, {ks, 11, 2, 1}), m.input(DType::F32, {ks, 9, 4, 2}));
        }, false, kMatNmse));
        const int64_t kb = std::max<int64_t>(static_cast<int64_t>(dtype_info(t).block_size), 1);
        out.push_back(make(Op::MUL_MAT, "K=block", [t, kb](Maker& m) {  // K at the smallest legal size
            return build::mul_mat(m.g(), m.weight(t, {kb, 21}), m.input(DType::F32, {kb, 5}));
        }, true, kMatNmse));
        out.push_back(make(Op::MUL_MAT, "x-noncontig", [t, ks](Maker& m) {
            return build::mul_mat(m.g(), m.weight(t, {ks, 9}), m.input_t(DType::F32, {ks, 5}));
        }, false, kMatNmse));
    }
    // activations on the Q8 grid: weight types paired with Q8_0 activations must match the
    // reference to float rounding (exact integer products, exact block scales)
    for (DType t : {DType::Q8_0, DType::Q4_0, DType::Q5_0, DType::IQ4_NL, DType::MXFP4}) {
        out.push_back(make(Op::MUL_MAT, "x-q8-grid", [t](Maker& m) {
            return build::mul_mat(m.g(), m.weight(t, {256, 21}), m.q8_grid(DType::F32, {256, 5}));
        }, true, kGridNmse));
    }
    // larger tiles with ragged edges (full runs only)
    for (DType t : weight_types()) {
        const int64_t K = 4 * k_long(t);
        out.push_back(make(Op::MUL_MAT, "large", [t, K](Maker& m) {
            return build::mul_mat(m.g(), m.weight(t, {K, 67}), m.input(DType::F32, {K, 19}));
        }, false, kMatNmse));
    }
    // a prompt-sized batch: more than one 64-column pass, a ragged last 16-column group
    for (DType t : {DType::Q4_0, DType::Q4_1, DType::Q8_0, DType::IQ4_NL, DType::MXFP4}) {
        out.push_back(make(Op::MUL_MAT, "M=70", [t](Maker& m) {
            return build::mul_mat(m.g(), m.weight(t, {256, 45}), m.input(DType::F32, {256, 70}));
        }, true, kMatNmse));
    }
    // prompts whose Q8 activations outgrow a small VTCM (test_ops.npu_mm_small_vtcm): the planner
    // runs them in steps of rows, a step boundary falling inside a broadcast batch
    for (DType t : {DType::Q4_0, DType::Q8_0}) {
        out.push_back(make(Op::MUL_MAT, "prompt M=300", [t](Maker& m) {
            return build::mul_mat(m.g(), m.weight(t, {1024, 40}), m.input(DType::F32, {1024, 300}));
        }, true, kMatNmse));
    }
    out.push_back(make(Op::MUL_MAT, "prompt bcast", [](Maker& m) {
        return build::mul_mat(m.g(), m.weight(DType::Q4_1, {512, 24, 2, 1}), m.input(DType::F32, {512, 100, 4, 1}));
    }, true, kMatNmse));
    out.push_back(make(Op::MUL_MAT_ID, "prompt T=200", [](Maker& m) {
        return build::mul_mat_id(m.g(), m.weight(DType::Q4_1, {512, 35, 4}), m.input(DType::F32, {512, 2, 200}),
                                 m.ids(DType::I32, {2, 200}, 4, true));
    }, true, kMatNmse));
    // attention-style products: permuted K and Q, GQA broadcast over heads
    out.push_back(make(Op::MUL_MAT, "kq-permuted", [](Maker& m) {
        return build::mul_mat(m.g(), m.input_p(DType::F16, {64, 19, 2}), m.input_p(DType::F32, {64, 7, 8}));
    }, true, kMatNmse));
    out.push_back(make(Op::MUL_MAT, "kq-permuted", [](Maker& m) {
        return build::mul_mat(m.g(), m.input_p(DType::F32, {40, 11, 4}), m.input_p(DType::F32, {40, 1, 4}));
    }, false, kMatNmse));
    // a prompt's K.Q and V.softmax over an F16 cache: enough rows for the packed path's run-time
    // packing of the (strided, broadcast) F16 source
    out.push_back(make(Op::MUL_MAT, "kq-permuted M=24", [](Maker& m) {
        return build::mul_mat(m.g(), m.input_p(DType::F16, {64, 37, 3}), m.input_p(DType::F32, {64, 24, 9}));
    }, true, kMatNmse));

    // half-precision activations (e.g. a F16 KV cache read as the activation side)
    for (DType xt : {DType::F16, DType::BF16})
        out.push_back(make(Op::MUL_MAT, "x-half", [xt](Maker& m) {
            return build::mul_mat(m.g(), m.weight(DType::Q8_0, {64, 13}), m.input(xt, {64, 5}));
        }, true, kMatNmse));

    // MUL_MAT_ID: experts [K, N, E], x [K, U, T] (U = 1 or n_used), ids [n_used, T]
    for (DType t : weight_types()) {
        const bool common = t == DType::F32 || t == DType::Q4_0 || t == DType::Q4_K;
        const int64_t ks = k_short(t);
        out.push_back(make(Op::MUL_MAT_ID, "U=n_used", [t, ks](Maker& m) {
            return build::mul_mat_id(m.g(), m.weight(t, {ks, 19, 6}), m.input(DType::F32, {ks, 2, 5}),
                                     m.ids(DType::I32, {2, 5}, 6, true));
        }, true, kMatNmse));
        out.push_back(make(Op::MUL_MAT_ID, "U=1", [t, ks](Maker& m) {
            return build::mul_mat_id(m.g(), m.weight(t, {ks, 9, 8}), m.input(DType::F32, {ks, 1, 7}),
                                     m.ids(DType::I32, {4, 7}, 8, true));
        }, common, kMatNmse));
        // one token (the GEMV path), and many tokens on few experts (~12 rows each: full GEMM tiles)
        out.push_back(make(Op::MUL_MAT_ID, "T=1", [t, ks](Maker& m) {
            return build::mul_mat_id(m.g(), m.weight(t, {ks, 21, 6}), m.input(DType::F32, {ks, 1, 1}),
                                     m.ids(DType::I32, {3, 1}, 6, true));
        }, false, kMatNmse));
        out.push_back(make(Op::MUL_MAT_ID, "dense", [t, ks](Maker& m) {
            return build::mul_mat_id(m.g(), m.weight(t, {ks, 35, 4}), m.input(DType::F32, {ks, 2, 24}),
                                     m.ids(DType::I32, {2, 24}, 4, true));
        }, false, kMatNmse));
    }
    out.push_back(make(Op::MUL_MAT_ID, "T=40", [](Maker& m) {  // ~20 routed columns per expert
        return build::mul_mat_id(m.g(), m.weight(DType::Q4_0, {128, 35, 4}), m.input(DType::F32, {128, 2, 40}),
                                 m.ids(DType::I32, {2, 40}, 4, true));
    }, true, kMatNmse));
    out.push_back(make(Op::MUL_MAT_ID, "invalid ids", [](Maker& m) {
        return build::mul_mat_id(m.g(), m.weight(DType::F32, {64, 9, 4}), m.input(DType::F32, {64, 2, 6}),
                                 m.ids(DType::I32, {2, 6}, 4, true, 5));
    }, true, kMatNmse));
    out.push_back(make(Op::MUL_MAT_ID, "x-f16", [](Maker& m) {
        return build::mul_mat_id(m.g(), m.weight(DType::Q8_0, {64, 9, 4}), m.input(DType::F16, {64, 3, 5}),
                                 m.ids(DType::I32, {3, 5}, 4, true));
    }, false, kMatNmse));
}

void add_attention_cases(std::vector<Case>& out) {
    // ROPE: x [D, H, T, B], positions [T]
    struct RopeVariant {
        const char* name;
        int32_t mode;
        bool partial, factors, yarn;
    };
    const RopeVariant variants[] = {
        {"NORM", kRopeModeNorm, false, false, false}, {"NEOX", kRopeModeNeox, false, false, false},
        {"NORM partial", kRopeModeNorm, true, false, false}, {"NEOX partial", kRopeModeNeox, true, false, false},
        {"NEOX freq-factors", kRopeModeNeox, false, true, false}, {"NORM yarn", kRopeModeNorm, false, false, true},
        {"NEOX yarn", kRopeModeNeox, true, true, true},
    };
    for (const RopeVariant& v : variants) {
        for (DType t : {DType::F32, DType::F16}) {
            for (bool noncontig : {false, true}) {
                std::string name = v.name;
                if (noncontig) name += " noncontig";
                out.push_back(make(Op::ROPE, name, [v, t, noncontig](Maker& m) {
                    const int64_t D = 64, H = 5, T = 7;
                    Tensor* x = noncontig ? m.input_p(t, {D, H, T}) : m.input(t, {D, H, T});
                    build::RopeParams p;
                    p.n_dims = v.partial ? 32 : static_cast<int32_t>(D);
                    p.mode = v.mode;
                    if (v.yarn) {
                        p.n_ctx_orig = 4096;
                        p.freq_scale = 0.25f;
                        p.ext_factor = 1.0f;
                        p.attn_factor = 1.1f;
                    }
                    Tensor* ff = v.factors ? m.input(DType::F32, {p.n_dims / 2}, 0.5f, 2.0f) : nullptr;
                    return build::rope(m.g(), x, m.positions(T), p, ff);
                }, t == DType::F32 && !noncontig));
            }
        }
    }
    out.push_back(make(Op::ROPE, "NEOX large", [](Maker& m) {
        build::RopeParams p;
        p.n_dims = 128;
        p.mode = kRopeModeNeox;
        return build::rope(m.g(), m.input(DType::F32, {128, 8, 33}), m.positions(33), p);
    }, false));
    out.push_back(make(Op::ROPE, "NORM batch", [](Maker& m) {
        build::RopeParams p;
        p.n_dims = 40;
        return build::rope(m.g(), m.input(DType::F32, {40, 3, 5, 2}), m.positions(5), p);
    }, false));

    // SOFT_MAX: x [K, M, H, B]
    struct SmVariant {
        const char* name;
        DType mask;  // F32/F16, or I8 for none
        int64_t mask_h;
        bool sinks;
        float max_bias;
        bool inf_row;
    };
    const SmVariant sm[] = {
        {"plain", DType::I8, 1, false, 0.0f, false},      {"mask", DType::F32, 1, false, 0.0f, false},
        {"mask-f16", DType::F16, 1, false, 0.0f, false},  {"mask bcast-heads", DType::F32, 2, false, 0.0f, false},
        {"mask sinks", DType::F32, 1, true, 0.0f, false}, {"alibi", DType::F16, 1, false, 8.0f, false},
        {"all -inf row", DType::F32, 1, false, 0.0f, true}, {"all -inf row sinks", DType::F16, 1, true, 0.0f, true},
    };
    for (const SmVariant& v : sm) {
        for (int64_t K : {37, 256, 1029}) {
            out.push_back(make(Op::SOFT_MAX, v.name, [v, K](Maker& m) {
                const int64_t M = 7, H = 4, B = 2;
                Tensor* x = m.input(DType::F32, {K, M, H, B}, -4.0f, 4.0f);
                Tensor* mask = nullptr;
                if (v.mask != DType::I8)
                    mask = m.mask(v.mask, {K, M + 2, v.mask_h, 1}, 0.2f, v.inf_row ? std::vector<int64_t>{3} : std::vector<int64_t>{});
                Tensor* sinks = v.sinks ? m.input(DType::F32, {H}, -2.0f, 2.0f) : nullptr;
                return build::soft_max(m.g(), x, 0.625f, mask, v.max_bias, sinks);
            }, K == 37));
        }
    }
    // ALiBi over a head count that is not a power of two (the interleaved slopes), with a mask
    // broadcast over heads and batches and sinks
    out.push_back(make(Op::SOFT_MAX, "alibi H=6 sinks", [](Maker& m) {
        Tensor* x = m.input(DType::F32, {45, 3, 6, 2}, -4.0f, 4.0f);
        return build::soft_max(m.g(), x, 0.5f, m.mask(DType::F32, {45, 4, 3, 1}, 0.2f), 4.0f,
                               m.input(DType::F32, {6}, -2.0f, 2.0f));
    }, true));
    out.push_back(make(Op::SOFT_MAX, "wide logits", [](Maker& m) {  // exp arguments down to -120
        return build::soft_max(m.g(), m.input(DType::F32, {300, 3, 2, 1}, -60.0f, 60.0f), 1.0f, nullptr, 0.0f, nullptr);
    }, true));

    // FLASH_ATTN_EXT: q [D, T, H, B], k [D, KV, H_kv, B], v [Dv, KV, H_kv, B] (v of type vt),
    // mask [KV, T + 3, M2, M3] of type mask (I8: none)
    struct FaVariant {
        const char* name;
        DType kv, vt, mask;
        int64_t D, Dv, T, H, H_kv, KV, B, M2, M3;
        bool sinks, inf_row, q_permuted;
        float max_bias, softcap;
        bool core;
    };
    constexpr DType F16 = DType::F16, F32 = DType::F32, Q8 = DType::Q8_0, Q4 = DType::Q4_0, None = DType::I8;
    const FaVariant fa[] = {
        {"decode", F16, F16, F16, 64, 64, 1, 4, 4, 37, 1, 1, 1, false, false, false, 0.0f, 0.0f, true},
        {"gqa", F16, F16, F16, 64, 64, 7, 8, 2, 64, 1, 1, 1, false, false, false, 0.0f, 0.0f, true},
        {"f32 kv", F32, F32, F16, 40, 40, 5, 4, 1, 33, 2, 1, 1, false, false, false, 0.0f, 0.0f, true},
        {"q8_0 kv", Q8, Q8, F16, 64, 64, 3, 4, 2, 48, 1, 1, 1, false, false, false, 0.0f, 0.0f, true},
        {"q4_0 kv", Q4, Q4, F16, 64, 64, 2, 2, 1, 40, 1, 1, 1, false, false, false, 0.0f, 0.0f, false},
        {"k f16 v q8_0", F16, Q8, F16, 64, 64, 2, 4, 2, 45, 1, 1, 1, false, false, false, 0.0f, 0.0f, false},
        {"Dv!=D", F16, F16, F16, 64, 32, 4, 4, 2, 29, 1, 1, 1, false, false, false, 0.0f, 0.0f, true},
        {"odd D", F16, F16, F32, 36, 20, 4, 4, 2, 27, 1, 2, 1, false, false, false, 0.0f, 0.0f, false},
        {"no mask", F16, F16, None, 32, 32, 3, 2, 2, 19, 1, 1, 1, false, false, false, 0.0f, 0.0f, false},
        {"mask bcast", F16, F16, F32, 64, 64, 3, 6, 2, 45, 2, 3, 2, false, false, false, 0.0f, 0.0f, true},
        {"sinks", F16, F16, F16, 64, 64, 4, 4, 2, 37, 1, 1, 1, true, false, false, 0.0f, 0.0f, true},
        {"softcap", F16, F16, F16, 64, 64, 3, 4, 4, 37, 1, 1, 1, false, false, false, 0.0f, 30.0f, false},
        {"alibi", F32, F32, F16, 32, 32, 3, 8, 8, 21, 1, 1, 1, false, false, false, 8.0f, 0.0f, false},
        {"alibi H=6 sinks", F16, F16, F16, 64, 64, 2, 6, 3, 50, 1, 6, 1, true, false, false, 4.0f, 0.0f, false},
        {"all -inf row", F16, F16, F16, 64, 64, 5, 4, 2, 37, 1, 1, 1, false, true, false, 0.0f, 0.0f, true},
        {"all -inf row sinks", F16, F16, F16, 64, 64, 5, 4, 2, 37, 1, 1, 1, true, true, false, 0.0f, 0.0f, false},
        {"q permuted", F16, F16, F16, 64, 64, 6, 4, 2, 37, 1, 1, 1, false, false, true, 0.0f, 0.0f, false},
        {"T=16 gqa", Q8, Q8, F16, 64, 64, 16, 9, 3, 70, 1, 1, 1, false, false, false, 0.0f, 0.0f, false},
        {"T=32", F16, F16, F16, 128, 128, 32, 4, 2, 131, 1, 1, 1, false, false, false, 0.0f, 0.0f, false},
        {"large", F16, F16, F16, 128, 128, 19, 8, 2, 300, 1, 1, 1, true, false, false, 0.0f, 0.0f, false},
        {"large decode", Q8, Q8, F16, 128, 128, 1, 8, 2, 513, 2, 1, 1, false, false, false, 0.0f, 0.0f, false},
        // blocks of query rows (GQA heads × tokens) not a multiple of 16, KV not of 32
        {"gqa=1 T=19", F16, F16, F16, 64, 64, 19, 2, 2, 45, 1, 1, 1, false, true, false, 0.0f, 0.0f, true},
        {"gqa=3 D=128", F16, F16, F16, 128, 128, 11, 6, 2, 70, 1, 1, 1, true, true, false, 0.0f, 0.0f, true},
        {"decode gqa=8", F16, F16, F16, 128, 128, 1, 16, 2, 100, 1, 1, 1, false, false, false, 0.0f, 0.0f, false},
        {"decode gqa=16", F16, F16, F16, 64, 64, 1, 16, 1, 100, 1, 1, 1, false, false, false, 0.0f, 0.0f, false},
        // the variants above at T = 16 (a full block of 16 query rows or more per head group)
        {"q4_0 kv T=16", Q4, Q4, F16, 64, 64, 16, 2, 1, 40, 1, 1, 1, false, false, false, 0.0f, 0.0f, false},
        {"odd D T=16", F16, F16, F32, 36, 20, 16, 4, 2, 27, 1, 2, 1, false, false, false, 0.0f, 0.0f, false},
        {"softcap T=16", F16, F16, F16, 64, 64, 16, 4, 4, 37, 1, 1, 1, false, false, false, 0.0f, 30.0f, false},
        {"alibi T=16 sinks", F16, F16, F16, 64, 64, 16, 6, 3, 50, 1, 6, 1, true, false, false, 4.0f, 0.0f, false},
        {"q permuted T=16", F16, F16, F16, 64, 64, 16, 4, 2, 37, 1, 1, 1, false, false, true, 0.0f, 0.0f, false},
    };
    for (const FaVariant& v : fa) {
        out.push_back(make(Op::FLASH_ATTN_EXT, v.name, [v](Maker& m) {
            Tensor* q = v.q_permuted ? m.input_p(DType::F32, {v.D, v.T, v.H, v.B}) : m.input(DType::F32, {v.D, v.T, v.H, v.B});
            Tensor* k = m.input(v.kv, {v.D, v.KV, v.H_kv, v.B});
            Tensor* val = m.input(v.vt, {v.Dv, v.KV, v.H_kv, v.B});
            Tensor* mask = v.mask != DType::I8 ? m.mask(v.mask, {v.KV, v.T + 3, v.M2, v.M3}, 0.2f,
                                                       v.inf_row ? std::vector<int64_t>{v.T - 1} : std::vector<int64_t>{})
                                               : nullptr;
            Tensor* sinks = v.sinks ? m.input(DType::F32, {v.H}, -2.0f, 2.0f) : nullptr;
            const float scale = 1.0f / std::sqrt(static_cast<float>(v.D));
            return build::flash_attn_ext(m.g(), q, k, val, mask, scale, v.max_bias, v.softcap, sinks);
        }, v.core, kMatNmse));
    }
    // causal masks (0 or -inf, as a model's): whole tiles of keys masked for every query of a
    // block, tiles without a mask, and the diagonal; with an all -inf row
    struct FaCausal {
        const char* name;
        DType kv;
        int64_t D, T, H, H_kv, KV, past;
        bool core;
    };
    const FaCausal causal[] = {
        {"causal gqa=3 D=64", F16, 64, 37, 9, 3, 75, 38, true},
        {"causal gqa=1 D=128", F16, 128, 45, 4, 4, 77, 32, true},
        {"causal prompt gqa=3", F16, 64, 70, 9, 3, 96, 0, false},
        {"causal q8_0 D=128", Q8, 128, 21, 6, 2, 53, 32, false},
    };
    for (const FaCausal& v : causal) {
        out.push_back(make(Op::FLASH_ATTN_EXT, v.name, [v](Maker& m) {
            Tensor* q = m.input(DType::F32, {v.D, v.T, v.H});
            Tensor* mask = m.causal_mask(DType::F16, {v.KV, v.T}, v.past, {v.T / 2});
            const float scale = 1.0f / std::sqrt(static_cast<float>(v.D));
            return build::flash_attn_ext(m.g(), q, m.input(v.kv, {v.D, v.KV, v.H_kv}), m.input(v.kv, {v.D, v.KV, v.H_kv}),
                                         mask, scale);
        }, v.core, kMatNmse));
    }
    // scores with a spread of several units (peaked softmax, the running maximum moves), plain
    // and soft-capped into tanh's saturation
    for (int64_t T : {4, 16}) {
        for (float softcap : {0.0f, 5.0f}) {
            std::string name = softcap == 0.0f ? "wide logits" : "wide logits softcap";
            if (T != 4) name += " T=" + std::to_string(T);
            out.push_back(make(Op::FLASH_ATTN_EXT, name, [softcap, T](Maker& m) {
                Tensor* q = m.input(DType::F32, {64, T, 4}, -8.0f, 8.0f);
                Tensor* mask = m.mask(DType::F16, {100, T, 1, 1}, 0.2f);
                return build::flash_attn_ext(m.g(), q, m.input(DType::Q8_0, {64, 100, 2}),
                                             m.input(DType::F16, {64, 100, 2}), mask, 0.125f, 0.0f, softcap);
            }, false, kMatNmse));
        }
    }
}

std::vector<Case> perf_cases() {
    std::vector<Case> out;
    for (DType t : {DType::F32, DType::F16, DType::BF16, DType::Q4_0, DType::Q5_0, DType::Q8_0, DType::Q4_K, DType::Q6_K,
                    DType::IQ4_NL, DType::MXFP4}) {
        for (int64_t M : {1, 32}) {
            out.push_back(make(Op::MUL_MAT, M == 1 ? "M=1" : "M=32", [t, M](Maker& m) {
                return build::mul_mat(m.g(), m.weight(t, {2048, 1024}), m.input(DType::F32, {2048, M}));
            }, true, kMatNmse));
        }
    }
    for (DType t : {DType::F16, DType::Q4_0, DType::Q4_K}) {
        out.push_back(make(Op::MUL_MAT_ID, "", [t](Maker& m) {
            return build::mul_mat_id(m.g(), m.weight(t, {1024, 512, 8}), m.input(DType::F32, {1024, 2, 8}),
                                     m.ids(DType::I32, {2, 8}, 8, true));
        }, true, kMatNmse));
    }
    for (int64_t T : {1, 16}) {
        out.push_back(make(Op::FLASH_ATTN_EXT, T == 1 ? "decode" : "T=16", [T](Maker& m) {
            return build::flash_attn_ext(m.g(), m.input(DType::F32, {128, T, 8}), m.input(DType::F16, {128, 512, 2}),
                                         m.input(DType::F16, {128, 512, 2}), m.mask(DType::F16, {512, T, 1, 1}, 0.0f),
                                         0.088f);
        }, true, kMatNmse));
    }
    // SmolLM2-135M attention: D = 64, 9 query heads over 3 K/V heads, 512 cached tokens
    for (DType kv : {DType::F16, DType::Q8_0}) {
        for (int64_t T : {1, 128}) {
            const std::string name = std::string(T == 1 ? "decode" : "T=128") + " D=64 gqa";
            out.push_back(make(Op::FLASH_ATTN_EXT, name, [kv, T](Maker& m) {
                return build::flash_attn_ext(m.g(), m.input(DType::F32, {64, T, 9}), m.input(kv, {64, 512, 3}),
                                             m.input(kv, {64, 512, 3}), m.mask(DType::F16, {512, T, 1, 1}, 0.0f), 0.125f);
            }, true, kMatNmse));
        }
    }
    out.push_back(make(Op::GET_ROWS, "", [](Maker& m) {
        return build::get_rows(m.g(), m.weight(DType::Q4_0, {4096, 1000}), m.ids(DType::I32, {32}, 1000));
    }, true));
    out.push_back(make(Op::GET_ROWS, "", [](Maker& m) {  // a token-embedding lookup
        return build::get_rows(m.g(), m.weight(DType::Q4_1, {576, 49152}), m.ids(DType::I32, {32}, 49152));
    }, true));
    out.push_back(make(Op::SET_ROWS, "", [](Maker& m) {  // a KV-cache write: 32 tokens of 3 heads of 64
        Tensor* cache = m.input(DType::F16, {64 * 3, 1024});
        return build::set_rows(m.g(), cache, m.input(DType::F32, {64 * 3, 32}), m.ids(DType::I64, {32}, 1024, true));
    }, true));
    out.push_back(make(Op::ADD, "", [](Maker& m) {
        return build::add(m.g(), m.input(DType::F32, {4096, 64}), m.input(DType::F32, {4096, 64}));
    }, true));
    out.push_back(make(Op::MUL, "bcast-row", [](Maker& m) {
        return build::mul(m.g(), m.input(DType::F32, {4096, 64}), m.input(DType::F32, {4096}));
    }, true));
    out.push_back(make(Op::RMS_NORM, "", [](Maker& m) { return build::rms_norm(m.g(), m.input(DType::F32, {4096, 64}), 1e-6f); }, true));
    out.push_back(make(Op::UNARY, "SILU", [](Maker& m) { return build::unary(m.g(), m.input(DType::F32, {4096, 64}), UnaryOp::SILU); }, true));
    out.push_back(make(Op::GLU, "SWIGLU", [](Maker& m) { return build::swiglu(m.g(), m.input(DType::F32, {8192, 32})); }, true));
    out.push_back(make(Op::SOFT_MAX, "mask", [](Maker& m) {
        return build::soft_max(m.g(), m.input(DType::F32, {512, 32, 8}), 0.125f, m.mask(DType::F16, {512, 32}, 0.1f));
    }, true));
    out.push_back(make(Op::ROPE, "NEOX", [](Maker& m) {
        build::RopeParams p;
        p.n_dims = 128;
        p.mode = kRopeModeNeox;
        return build::rope(m.g(), m.input(DType::F32, {128, 32, 16}), m.positions(16), p);
    }, true));
    for (DType t : {DType::F32, DType::F16}) {  // NORM over SmolLM2-135M query heads, one 128-token batch
        out.push_back(make(Op::ROPE, "NORM", [t](Maker& m) {
            build::RopeParams p;
            p.n_dims = 64;
            return build::rope(m.g(), m.input(t, {64, 9, 128}), m.positions(128), p);
        }, true));
    }
    out.push_back(make(Op::CPY, "", [](Maker& m) {
        return build::cpy(m.g(), m.input(DType::F32, {4096, 64}), m.input(DType::F16, {4096, 64}));
    }, true));
    out.push_back(make(Op::CPY, "", [](Maker& m) {
        return build::cpy(m.g(), m.input(DType::F32, {4096, 512}), m.input(DType::F16, {4096, 512}));
    }, true));
    out.push_back(make(Op::ARGSORT, "desc", [](Maker& m) {
        return build::argsort(m.g(), m.input(DType::F32, {1024, 32}), build::SortOrder::Descending);
    }, true));
    return out;
}

}  // namespace tessel::cli::test_ops

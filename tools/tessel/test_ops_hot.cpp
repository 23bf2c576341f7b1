// The hot-path rule of test-ops: which nodes the CPU backend must run on a fast kernel when the
// usable features include the avx2 tier (TESSEL_CPU_ISA=scalar, or a CPU without AVX2, lifts it).
// These are the paths a transformer's forward pass spends its time in, in the layouts the model
// graphs use (F32 activations with contiguous rows); other layouts may run the reference kernels.
#include "cpu/kernels/kernel.hpp"
#include "test_ops.hpp"

namespace tessel::cli::test_ops {
namespace {

bool f32_rows(const Tensor* t) { return t && t->type == DType::F32 && t->nb[0] == sizeof(float); }

/// Weight of a matrix product: rows of whole blocks, stored contiguously, K a block multiple.
bool plain_weight(const Tensor& w, std::initializer_list<DType> types) {
    for (DType t : types)
        if (w.type == t) return w.nb[0] == dtype_info(t).block_bytes && w.ne[0] % dtype_info(t).block_size == 0;
    return false;
}

/// Quantized weight types with fast matrix-product kernels (K-quants need K % 256 == 0).
bool quant_weight(const Tensor& w) {
    return plain_weight(w, {DType::Q4_0, DType::Q4_1, DType::Q8_0, DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K,
                            DType::Q6_K, DType::IQ4_XS});
}

}  // namespace

bool must_be_fast(const Tensor& out) {
    const Tensor* a = out.src[0];
    switch (out.op) {
        case Op::MUL_MAT:
            return f32_rows(out.src[1]) && f32_rows(&out) && (quant_weight(*a) || plain_weight(*a, {DType::F16, DType::F32}));
        case Op::MUL_MAT_ID:
            return f32_rows(out.src[1]) && f32_rows(&out) && quant_weight(*a);
        case Op::RMS_NORM:
            return f32_rows(a) && f32_rows(&out);
        case Op::ADD:
        case Op::MUL:
            return f32_rows(a) && f32_rows(out.src[1]) && f32_rows(&out) && out.src[1]->ne[0] == out.ne[0];
        case Op::SOFT_MAX:
            return f32_rows(a) && f32_rows(&out) && (!out.src[1] || out.src[1]->nb[0] == dtype_info(out.src[1]->type).block_bytes);
        case Op::ROPE:
            return (a->type == DType::F32 || a->type == DType::F16) && a->nb[0] == dtype_info(a->type).block_bytes;
        case Op::FLASH_ATTN_EXT:
            return f32_rows(a) && plain_weight(*out.src[1], {DType::F16, DType::Q8_0}) &&
                   plain_weight(*out.src[2], {DType::F16, DType::Q8_0});
        case Op::GET_ROWS:
            return out.type == DType::F32 &&
                   plain_weight(*a, {DType::F32, DType::F16, DType::BF16, DType::Q4_0, DType::Q4_1, DType::Q8_0});
        case Op::CPY: {
            const DType from = a->type, to = out.type;
            return (from == DType::F32 && (to == DType::F16 || to == DType::Q8_0)) || (from == DType::F16 && to == DType::F32);
        }
        case Op::GLU:
            return static_cast<GluOp>(out.op_params[0]) == GluOp::SWIGLU && f32_rows(a) && f32_rows(&out) &&
                   (!out.src[1] || f32_rows(out.src[1]));
        default:
            return false;
    }
}

}  // namespace tessel::cli::test_ops

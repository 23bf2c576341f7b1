#include "cpu/kernels/flash_attn_layout.hpp"

#include "cpu/kernels/kernel.hpp"
#include "quant/blocks.hpp"

namespace tessel::cpu {
namespace {

/// K / V rows with back-to-back elements (blocks) of a type the kernels decode.
bool kv_rows(const Tensor& t, int64_t max_dim) {
    if (t.ne[0] > max_dim) return false;
    switch (t.type) {
        case DType::F32: return t.nb[0] == sizeof(float);
        case DType::F16: return t.nb[0] == sizeof(uint16_t);
        case DType::Q8_0: return t.ne[0] % quant::QK8_0 == 0 && t.nb[0] == sizeof(quant::block_q8_0);
        case DType::Q4_0: return t.ne[0] % quant::QK4_0 == 0 && t.nb[0] == sizeof(quant::block_q4_0);
        default: return false;
    }
}

}  // namespace

bool flash_attn_layout_ok(const Tensor& dst, int64_t max_dim) {
    if (dst.op != Op::FLASH_ATTN_EXT || !f32_rows(dst)) return false;
    const Tensor* q = dst.src[0];
    const Tensor* k = dst.src[1];
    const Tensor* v = dst.src[2];
    const Tensor* mask = dst.src[3];
    const Tensor* sinks = dst.src[4];
    if (!q || !k || !v || !f32_rows(*q) || !kv_rows(*k, max_dim) || !kv_rows(*v, max_dim)) return false;
    const int64_t T = q->ne[1], H = q->ne[2], B = q->ne[3], KV = k->ne[1];
    if (k->ne[0] != q->ne[0] || v->ne[1] != KV) return false;
    if (H % k->ne[2] != 0 || B % k->ne[3] != 0 || H % v->ne[2] != 0 || B % v->ne[3] != 0) return false;
    if (mask) {
        const bool rows = (mask->type == DType::F16 && mask->nb[0] == 2) || (mask->type == DType::F32 && mask->nb[0] == 4);
        if (!rows || mask->ne[0] != KV || mask->ne[1] < T || H % mask->ne[2] != 0 || B % mask->ne[3] != 0) return false;
    }
    if (sinks && (sinks->type != DType::F32 || sinks->ne[0] != H || sinks->n_rows() != 1)) return false;
    return dst.ne[0] == v->ne[0] && dst.ne[1] == H && dst.ne[2] == T && dst.ne[3] == B;
}

}  // namespace tessel::cpu

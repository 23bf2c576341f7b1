// Which nodes the device implements, with which types, shapes and parameters (translate.hpp):
// exactly the combinations the device's op checks accept (src/npu/device/ops_*.c), so a node the
// device would refuse with BAD_TYPE is declined here and runs on the CPU instead. Also the
// opcode of each node, its operands in the device's src/dst order and kernel parameters the host
// plans (ROPE's angles, SOFT_MAX's ALiBi bases) in double from the node's op_params.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>

#include "npu/host/buffer.hpp"
#include "npu/host/translate.hpp"
#include "tessel/errors.hpp"

namespace tessel::npu {
namespace {

bool float_type(DType t) { return t == DType::F32 || t == DType::F16; }
bool floats(const Tensor* t) { return t && float_type(t->type); }
bool same_shape(const Tensor& a, const Tensor& b) { return a.ne == b.ne; }

constexpr int32_t kRopeMaxDims = 512;  // TSL_NPU_ROPE_MAX_DIMS of ops_rope.c

static_assert(TSL_NPU_UNARY_SILU == static_cast<int32_t>(UnaryOp::SILU) &&
              TSL_NPU_UNARY_GELU == static_cast<int32_t>(UnaryOp::GELU) &&
              TSL_NPU_UNARY_SIGMOID == static_cast<int32_t>(UnaryOp::SIGMOID) &&
              TSL_NPU_UNARY_NEG == static_cast<int32_t>(UnaryOp::NEG) &&
              TSL_NPU_UNARY_EXP == static_cast<int32_t>(UnaryOp::EXP) &&
              TSL_NPU_UNARY_TANH == static_cast<int32_t>(UnaryOp::TANH),
              "device UNARY kinds are tessel's UnaryOp numbers");
static_assert(TSL_NPU_GLU_SWIGLU == static_cast<int32_t>(GluOp::SWIGLU) &&
              TSL_NPU_GLU_GEGLU == static_cast<int32_t>(GluOp::GEGLU), "device GLU kinds are tessel's GluOp numbers");

bool binary_ok(const Tensor& t) {
    const Tensor* a = t.src[0];
    const Tensor* b = t.src[1];
    if (!floats(a) || !floats(b) || !float_type(t.type) || !same_shape(t, *a)) return false;
    for (int i = 0; i < kMaxDims; ++i)
        if (b->ne[i] < 1 || a->ne[i] % b->ne[i] != 0) return false;
    return true;
}

bool map_ok(const Tensor& t) { return floats(t.src[0]) && float_type(t.type) && same_shape(t, *t.src[0]); }

bool unary_ok(const Tensor& t) {
    switch (t.op_params[0]) {
    case TSL_NPU_UNARY_SILU:
    case TSL_NPU_UNARY_GELU:
    case TSL_NPU_UNARY_SIGMOID:
    case TSL_NPU_UNARY_NEG:
    case TSL_NPU_UNARY_EXP:
    case TSL_NPU_UNARY_TANH: return map_ok(t);
    default: return false;
    }
}

bool glu_ok(const Tensor& t) {
    const Tensor* a = t.src[0];
    const Tensor* b = t.src[1];
    const int32_t kind = t.op_params[0];
    if (kind != TSL_NPU_GLU_SWIGLU && kind != TSL_NPU_GLU_GEGLU) return false;
    if (!floats(a) || !float_type(t.type)) return false;
    if (b) return floats(b) && same_shape(*a, t) && same_shape(*b, t);
    return a->ne[0] == 2 * t.ne[0] && a->ne[1] == t.ne[1] && a->ne[2] == t.ne[2] && a->ne[3] == t.ne[3];
}

bool sum_rows_ok(const Tensor& t) {
    const Tensor* a = t.src[0];
    return floats(a) && float_type(t.type) && t.ne[0] == 1 && t.ne[1] == a->ne[1] && t.ne[2] == a->ne[2] &&
           t.ne[3] == a->ne[3];
}

bool soft_max_ok(const Tensor& t) {
    const Tensor* x = t.src[0];
    const Tensor* mask = t.src[1];
    const Tensor* sinks = t.src[2];
    if (!x || x->type != DType::F32 || t.type != DType::F32 || !same_shape(*x, t)) return false;
    if (mask && (!float_type(mask->type) || mask->ne[0] != x->ne[0] || mask->ne[1] < x->ne[1] ||
                 x->ne[2] % mask->ne[2] != 0 || x->ne[3] % mask->ne[3] != 0))
        return false;
    return !sinks || (sinks->type == DType::F32 && sinks->ne[0] == x->ne[2] && sinks->n_rows() == 1);
}

bool rope_ok(const Tensor& t) {
    const Tensor* x = t.src[0];
    const Tensor* pos = t.src[1];
    const Tensor* ff = t.src[2];
    const int32_t n_dims = t.op_params[1], mode = t.op_params[2];
    if (!floats(x) || !pos || t.type != x->type || !same_shape(*x, t)) return false;
    if (pos->type != DType::I32 || pos->ne[0] != x->ne[2] || pos->n_rows() != 1) return false;
    if (mode != kRopeModeNorm && mode != kRopeModeNeox) return false;
    if (n_dims <= 0 || n_dims % 2 != 0 || n_dims > x->ne[0] || n_dims > kRopeMaxDims) return false;
    return !ff || (ff->type == DType::F32 && ff->ne[0] >= n_dims / 2);
}

bool get_rows_ok(const Tensor& t) {
    const Tensor* table = t.src[0];
    const Tensor* ids = t.src[1];
    if (!table || !ids || ids->type != DType::I32 || t.type != DType::F32) return false;
    if (t.ne[0] != table->ne[0] || t.ne[1] != ids->ne[0] || t.ne[2] != ids->ne[1] || t.ne[3] != ids->ne[2] ||
        ids->ne[3] != 1 || table->ne[2] != ids->ne[1] || table->ne[3] != ids->ne[2])
        return false;
    if (stored_tiled(*table)) return true;  // any tileable type, read from its tiles
    if (float_type(table->type)) return true;
    const bool block = table->type == DType::Q4_0 || table->type == DType::Q4_1 || table->type == DType::Q8_0;
    return block && table->ne[0] % 32 == 0 && table->nb[0] == dtype_info(table->type).block_bytes;
}

/// src1 of a matmul: F32 with contiguous rows; dst F32.
bool activations_ok(const Tensor& t) {
    const Tensor* x = t.src[1];
    return x && x->type == DType::F32 && x->nb[0] == 4 && t.type == DType::F32;
}

/// The weight layouts the device's kernels read: tiles (the tensor itself), or plain F16/F32 rows.
bool weight_ok(const Tensor* w) {
    if (!w) return false;
    if (stored_tiled(*w)) return true;
    return float_type(w->type) && !reads_tiled(*w) && w->nb[0] == dtype_info(w->type).block_bytes;
}

bool mul_mat_ok(const Tensor& t) {
    const Tensor* w = t.src[0];
    const Tensor* x = t.src[1];
    if (!weight_ok(w) || !activations_ok(t)) return false;
    if (x->ne[0] != w->ne[0] || x->ne[2] % w->ne[2] != 0 || x->ne[3] % w->ne[3] != 0) return false;
    return t.ne[0] == w->ne[1] && t.ne[1] == x->ne[1] && t.ne[2] == x->ne[2] && t.ne[3] == x->ne[3];
}

bool mul_mat_id_ok(const Tensor& t) {
    const Tensor* w = t.src[0];
    const Tensor* x = t.src[1];
    const Tensor* ids = t.src[2];
    if (!weight_ok(w) || !activations_ok(t) || !ids || ids->type != DType::I32) return false;
    if (w->ne[3] != 1 || x->ne[3] != 1 || ids->ne[2] != 1 || ids->ne[3] != 1) return false;
    if (w->ne[0] != x->ne[0] || ids->ne[1] != x->ne[2] || ids->ne[0] % x->ne[1] != 0) return false;
    return t.ne[0] == w->ne[1] && t.ne[1] == ids->ne[0] && t.ne[2] == ids->ne[1] && t.ne[3] == 1;
}

tsl_npu_matmul_kparams matmul_kparams(const Tensor& t, const DeviceBudget& budget) {
    return matmul_kparams_of(plan_matmul(t, budget));
}

bool set_rows_ok(const Tensor& t) {
    const Tensor* rows = t.src[1];
    const Tensor* ids = t.src[2];
    // a Q8_0 destination: the quantized KV cache (-ctk / -ctv q8_0), blocks of 34 bytes
    const bool q8 = t.type == DType::Q8_0 && t.ne[0] % 32 == 0 && t.nb[0] == dtype_info(DType::Q8_0).block_bytes;
    if (!t.src[0] || !rows || !ids || rows->type != DType::F32 || !(float_type(t.type) || q8)) return false;
    if (ids->type != DType::I32 && ids->type != DType::I64) return false;
    return t.ne[0] == rows->ne[0] && t.ne[2] == rows->ne[2] && t.ne[3] == rows->ne[3] && rows->ne[1] == ids->ne[0] &&
           rows->ne[2] % ids->ne[1] == 0 && rows->ne[3] % ids->ne[2] == 0 && ids->ne[3] == 1;
}

// K/V operand of FLASH_ATTN_EXT: F32, F16, or Q8_0 blocks as the KV cache stores them.
bool attn_kv_ok(const Tensor* t) {
    if (!t) return false;
    if (float_type(t->type)) return true;
    return t->type == DType::Q8_0 && t->ne[0] % 32 == 0 && t->nb[0] == dtype_info(DType::Q8_0).block_bytes;
}

bool flash_attn_ok(const Tensor& t) {
    const Tensor* q = t.src[0];
    const Tensor* k = t.src[1];
    const Tensor* v = t.src[2];
    const Tensor* mask = t.src[3];
    const Tensor* sinks = t.src[4];
    if (!q || q->type != DType::F32 || t.type != DType::F32 || !attn_kv_ok(k) || !attn_kv_ok(v)) return false;
    const int64_t T = q->ne[1], H = q->ne[2], B = q->ne[3], KV = k->ne[1];
    if (k->ne[0] != q->ne[0] || v->ne[1] != KV || H % k->ne[2] != 0 || B % k->ne[3] != 0 || H % v->ne[2] != 0 ||
        B % v->ne[3] != 0)
        return false;
    if (t.ne[0] != v->ne[0] || t.ne[1] != H || t.ne[2] != T || t.ne[3] != B) return false;
    if (mask && (!float_type(mask->type) || mask->ne[0] != KV || mask->ne[1] < T || H % mask->ne[2] != 0 ||
                 B % mask->ne[3] != 0))
        return false;
    return !sinks || (sinks->type == DType::F32 && sinks->ne[0] == H && sinks->n_rows() == 1);
}

bool argsort_ok(const Tensor& t) {
    const Tensor* a = t.src[0];
    return floats(a) && t.type == DType::I32 && same_shape(*a, t) && a->ne[0] <= INT32_MAX &&
           (t.op_params[0] == 0 || t.op_params[0] == 1);
}

// Kernel parameters (formulas of src/cpu/ref/rope.cpp and cpu/ref/attention.cpp, in double),
// after the kparams header.
template <typename K>
void put_kparams(DeviceOp& d, const K& k) {
    static_assert(sizeof(K) <= TSL_NPU_KPARAMS_BYTES - TSL_NPU_KPARAMS_BODY);
    std::memcpy(d.kparams.data() + TSL_NPU_KPARAMS_BODY, &k, sizeof k);
}

tsl_npu_rope_kparams rope_kparams(const Tensor& t) {
    const double n_dims = t.op_params[1];
    const double freq_base = t.op_param_f32(5), freq_scale = t.op_param_f32(6), ext_factor = t.op_param_f32(7);
    const double beta_fast = t.op_param_f32(9), beta_slow = t.op_param_f32(10);
    const double n_ctx_orig = t.op_params[4];
    tsl_npu_rope_kparams k{};
    k.theta_scale = std::pow(freq_base, -2.0 / n_dims);
    k.freq_scale = freq_scale;
    k.ext_factor = ext_factor;
    k.mscale = t.op_param_f32(8);
    if (ext_factor != 0.0) {
        auto corr_dim = [&](double rotations) {
            return n_dims * std::log(n_ctx_orig / (rotations * 2.0 * std::numbers::pi)) / (2.0 * std::log(freq_base));
        };
        k.corr_lo = std::max(0.0, std::floor(corr_dim(beta_fast)));
        k.corr_hi = std::min(n_dims - 1.0, std::ceil(corr_dim(beta_slow)));
        k.mscale *= 1.0 + 0.1 * std::log(1.0 / freq_scale);
    }
    return k;
}

tsl_npu_softmax_kparams softmax_kparams(const Tensor& t) {
    const float max_bias = t.op_param_f32(1);
    tsl_npu_softmax_kparams k{1.0, 1.0, 0};
    if (!(max_bias > 0.0f)) return k;
    int64_t p = 1;  // largest power of two <= the head count
    while (p * 2 <= t.src[0]->ne[2]) p *= 2;
    k.m0 = std::exp2(-static_cast<double>(max_bias) / static_cast<double>(p));
    k.m1 = std::exp2(-static_cast<double>(max_bias) / static_cast<double>(2 * p));
    k.n_head_log2 = p;
    return k;
}

// A source the node reads as 32x32 tiles: a tiled weight or a view of one, also when not placed yet
// (stored_tiled).
bool tiled_source(const Tensor& s) { return reads_tiled(s) || stored_tiled(s.view_src ? *s.view_src : s); }

// The op, types, shapes and op_params the device implements (the budget aside).
bool op_supported(const Tensor& t) {
    // 32x32 tiles are read by MUL_MAT, MUL_MAT_ID and GET_ROWS as their src0 (the tiled tensor
    // itself, not a view); any other node reading tiles goes to the CPU, which gets the GGUF bytes
    // through get_tensor.
    const bool tiles_ok = t.op == Op::MUL_MAT || t.op == Op::MUL_MAT_ID || t.op == Op::GET_ROWS;
    for (int i = 0; i < kMaxSrc; ++i) {
        const Tensor* s = t.src[i];
        if (s && tiled_source(*s) && !(tiles_ok && i == 0 && stored_tiled(*s))) return false;
    }
    switch (t.op) {
    case Op::ADD:
    case Op::SUB:
    case Op::MUL:
    case Op::DIV: return binary_ok(t);
    case Op::SCALE:
    case Op::RMS_NORM:
    case Op::NORM: return map_ok(t) && (t.op == Op::SCALE || t.op_param_f32(0) >= 0.0f);
    case Op::CPY:
    case Op::CONT:
    case Op::DUP: return floats(t.src[0]) && float_type(t.type) && t.src[0]->n_elements() == t.n_elements();
    case Op::UNARY: return unary_ok(t);
    case Op::GLU: return glu_ok(t);
    case Op::SUM_ROWS: return sum_rows_ok(t);
    case Op::SOFT_MAX: return soft_max_ok(t);
    case Op::ROPE: return rope_ok(t);
    case Op::GET_ROWS: return get_rows_ok(t);
    case Op::SET_ROWS: return set_rows_ok(t);
    case Op::ARGSORT: return argsort_ok(t);
    case Op::MUL_MAT: return mul_mat_ok(t);
    case Op::MUL_MAT_ID: return mul_mat_id_ok(t);
    case Op::FLASH_ATTN_EXT: return flash_attn_ok(t);
    default: return false;
    }
}

}  // namespace

bool device_supports(const Tensor& t, const DeviceBudget& budget) {
    return op_supported(t) && plan_fits(t, budget);
}

DeviceOp translate(const Tensor& t, const DeviceBudget& budget) {
    if (!op_supported(t))
        throw Error(ErrorCode::Unsupported, "NPU: the device does not implement " + describe(t) + " (" + op_name(t.op) + ")");
    const tsl_npu_kparams_header header = plan_header(t, budget);
    DeviceOp d;
    std::memcpy(d.kparams.data(), &header, sizeof header);
    // src[] indices of the node's sources, in the device's order (-1: end)
    int order[5] = {0, -1, -1, -1, -1};
    switch (t.op) {
    case Op::ADD: d.opcode = TSL_NPU_OP_ADD; order[1] = 1; break;
    case Op::SUB: d.opcode = TSL_NPU_OP_SUB; order[1] = 1; break;
    case Op::MUL: d.opcode = TSL_NPU_OP_MUL; order[1] = 1; break;
    case Op::DIV: d.opcode = TSL_NPU_OP_DIV; order[1] = 1; break;
    case Op::SCALE: d.opcode = TSL_NPU_OP_SCALE; break;
    case Op::RMS_NORM: d.opcode = TSL_NPU_OP_RMS_NORM; break;
    case Op::NORM: d.opcode = TSL_NPU_OP_NORM; break;
    case Op::UNARY: d.opcode = TSL_NPU_OP_UNARY; break;
    case Op::GLU: d.opcode = TSL_NPU_OP_GLU; order[1] = 1; break;
    case Op::SUM_ROWS: d.opcode = TSL_NPU_OP_SUM_ROWS; break;
    case Op::SOFT_MAX:
        d.opcode = TSL_NPU_OP_SOFT_MAX;
        order[1] = 1;
        order[2] = 2;
        put_kparams(d, softmax_kparams(t));
        break;
    case Op::ROPE:
        d.opcode = TSL_NPU_OP_ROPE;
        order[1] = 1;
        order[2] = 2;
        put_kparams(d, rope_kparams(t));
        break;
    case Op::GET_ROWS: d.opcode = TSL_NPU_OP_GET_ROWS; order[1] = 1; break;
    case Op::SET_ROWS:  // the node is a view of src0: rows src1, ids src2 -> the node
        d.opcode = TSL_NPU_OP_SET_ROWS;
        order[0] = 1;
        order[1] = 2;
        break;
    case Op::ARGSORT: d.opcode = TSL_NPU_OP_ARGSORT; break;
    case Op::MUL_MAT:
        d.opcode = TSL_NPU_OP_MUL_MAT;
        order[1] = 1;
        put_kparams(d, matmul_kparams(t, budget));
        break;
    case Op::MUL_MAT_ID:
        d.opcode = TSL_NPU_OP_MUL_MAT_ID;
        order[1] = 1;
        order[2] = 2;
        put_kparams(d, matmul_kparams(t, budget));
        break;
    case Op::FLASH_ATTN_EXT:  // q, k, v, mask, sinks; the ALiBi bases as SOFT_MAX's (same rule, q's heads)
        d.opcode = TSL_NPU_OP_FLASH_ATTN_EXT;
        for (int i = 1; i < 5; ++i) order[i] = i;
        put_kparams(d, tsl_npu_flash_attn_kparams{softmax_kparams(t), plan_flash_attn_qtile(t, budget), 0});
        break;
    default: d.opcode = TSL_NPU_OP_CPY; break;  // CPY, CONT, DUP: element copy with conversion
    }
    // Optional sources (GLU's gate, SOFT_MAX's and FLASH_ATTN_EXT's mask and sinks, ROPE's factors)
    // keep their slot: a missing one before a present one travels as an empty slot.
    int last = 0;
    for (int i = 0; i < 5; ++i)
        if (order[i] >= 0 && t.src[order[i]]) last = i;
    for (int i = 0; i <= last; ++i) {
        const Tensor* s = order[i] >= 0 ? t.src[order[i]] : nullptr;
        d.srcs.push_back(s ? operand(*s) : Operand{});
    }
    d.dsts.push_back(operand(t));
    return d;
}

}  // namespace tessel::npu

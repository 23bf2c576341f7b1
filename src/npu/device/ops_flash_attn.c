/* FLASH_ATTN_EXT: attention of query rows against a K/V cache, one pass over the keys with an
 * online softmax (tessel's reference: src/cpu/ref/flash_attn.cpp; semantics in src/graph/op.hpp).
 *
 *   src0 q F32 [D, T, H, B] (any strides)
 *   src1 k [D, KV, H_k, B_k], src2 v [Dv, KV, H_v, B_v]: F32, F16 or Q8_0 each (Q8_0: GGUF blocks,
 *        D (Dv) a multiple of 32, nb[0] = 34 bytes, as the KV cache stores them); query head h
 *        reads K head h / (H / H_k) and batch b / (B / B_k) (grouped-query attention), V likewise
 *   src3 mask F16/F32 [KV, T' >= T, M2, M3] optional, used as mask[:, t, h % M2, b % M3]
 *   src4 sinks F32 [H] optional: an extra logit per head in the normaliser
 *   dst F32 [Dv, H, T, B]: out[:, h, t, b] for query (t, h, b)
 *   params: float bits [0] scale, [1] max_bias (the host plans the ALiBi bases into kparams as
 *   tsl_npu_softmax_kparams), [2] logit softcap
 * Scores s_j = scale (q . k_j), then softcap tanh(s_j / softcap) when softcap != 0, then
 * + slope(h) mask_j (a -inf mask entry masks the key); out = sum_j e^(s_j - m) v_j / (sum_j
 * e^(s_j - m) + e^(sink - m)). A query whose keys are all masked (and no sink) gets zeros.
 *
 * The kernel (ops_flash_attn.inc, built per ISA: ops_flash_attn.h): the workers split the query
 * rows (ordered t fastest, then h, then b) and walk the keys in blocks of 16 for runs of query rows
 * reading the same K/V heads (up to the host's q_tile rows a run, tsl_npu_flash_attn_kparams),
 * scoring several rows at once against each converted block. Query rows, accumulators and the
 * converted block sit in VTCM (tsl_npu_flash_attn_scratch bytes, stated in the kparams header). Float arithmetic (vec.h), where the reference sums in double. */
#include "npu/device/ops_flash_attn.h"

static uint32_t kv_type_ok(const tsl_npu_view* t) {
    if (t->type == TSL_NPU_TYPE_F32 || t->type == TSL_NPU_TYPE_F16) return 1;
    return t->type == TSL_NPU_TYPE_Q8_0 && t->ne[0] % 32 == 0 && t->nb[0] == TSL_NPU_Q8_0_BYTES;
}

int32_t tsl_npu_flash_attn_check(const tsl_npu_op_ctx* c) {
    const tsl_npu_view* q = &c->src[0];
    const tsl_npu_view* k = &c->src[1];
    const tsl_npu_view* v = &c->src[2];
    const tsl_npu_view* mask = &c->src[3];
    const tsl_npu_view* sinks = &c->src[4];
    const tsl_npu_view* d = &c->dst[0];
    const int64_t T = q->ne[1], H = q->ne[2], B = q->ne[3], KV = k->ne[1];
    if (q->type != TSL_NPU_TYPE_F32 || d->type != TSL_NPU_TYPE_F32 || !kv_type_ok(k) || !kv_type_ok(v))
        return TSL_NPU_ERR_BAD_TYPE;
    if (k->ne[0] != q->ne[0] || v->ne[1] != KV || H % k->ne[2] != 0 || B % k->ne[3] != 0 || H % v->ne[2] != 0 ||
        B % v->ne[3] != 0)
        return TSL_NPU_ERR_BAD_TYPE;
    if (d->ne[0] != v->ne[0] || d->ne[1] != H || d->ne[2] != T || d->ne[3] != B) return TSL_NPU_ERR_BAD_TYPE;
    if (mask->data && (!tsl_npu_is_float(mask->type) || mask->ne[0] != KV || mask->ne[1] < T ||
                       H % mask->ne[2] != 0 || B % mask->ne[3] != 0))
        return TSL_NPU_ERR_BAD_TYPE;
    if (sinks->data && (sinks->type != TSL_NPU_TYPE_F32 || sinks->ne[0] != H || tsl_npu_n_rows(sinks) != 1))
        return TSL_NPU_ERR_BAD_TYPE;
    if (k->type == TSL_NPU_TYPE_Q8_0 && !tsl_npu_block_rows_inside(k, (uint64_t)(k->ne[0] / 32) * TSL_NPU_Q8_0_BYTES))
        return TSL_NPU_ERR_BAD_DESC;
    if (v->type == TSL_NPU_TYPE_Q8_0 && !tsl_npu_block_rows_inside(v, (uint64_t)(v->ne[0] / 32) * TSL_NPU_Q8_0_BYTES))
        return TSL_NPU_ERR_BAD_DESC;
    return TSL_NPU_OK;
}

int32_t tsl_npu_flash_attn_run(tsl_npu_op_ctx* c) {
    const int64_t D = c->src[0].ne[0], Dv = c->src[2].ne[0];
    const uint32_t n_threads = c->platform->n_threads;
    tsl_npu_flash_attn_kparams kp;
    __builtin_memcpy(&kp, c->op->kparams + TSL_NPU_KPARAMS_BODY, sizeof kp);
    const uint32_t q_tile = kp.q_tile && kp.q_tile < TSL_NPU_FA_QTILE ? kp.q_tile : TSL_NPU_FA_QTILE;
    tsl_npu_fa_task t = {c, 0, tsl_npu_flash_attn_scratch(D, Dv, q_tile, 1) / 4u, 0, 0, (int)q_tile};
    t.Dp = (D + TSL_VF_LANES - 1) / TSL_VF_LANES * TSL_VF_LANES;
    t.Dvp = (Dv + TSL_VF_LANES - 1) / TSL_VF_LANES * TSL_VF_LANES;
    t.base = (float*)tsl_npu_vtcm_alloc(c->vtcm, tsl_npu_flash_attn_scratch(D, Dv, q_tile, n_threads), TSL_NPU_VTCM_ALIGN);
    if (!t.base) return TSL_NPU_ERR_NO_VTCM; /* the op stated less than its kernel takes */
    const tsl_npu_view* q = &c->src[0];
    tsl_npu_ops_parallel(c, tsl_npu_n_rows(q) * c->src[1].ne[1] * (D + Dv), c->kernels->fa_rows, &t);
    c->bytes = q->size + c->src[1].size + c->src[2].size + c->dst[0].size + (c->src[3].data ? c->src[3].size : 0);
    return TSL_NPU_OK;
}

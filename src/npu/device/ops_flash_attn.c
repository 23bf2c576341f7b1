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
 * The kernel: the workers split the query rows (ordered t fastest, then h, then b); a worker takes
 * runs of up to TSL_NPU_FA_QTILE consecutive rows that read the same K and V heads (a prompt's
 * tokens, or the heads of a GQA group when decoding) and walks the keys in blocks of 16: the block's
 * K rows are converted to float and stored transposed (D x 16, so one vector holds a key block's
 * scores after D multiply-adds) and its V rows to float (16 x Dv); then each query of the run
 * takes its 16 scores, rescales its accumulator when the running maximum grows, and adds the
 * block's V rows weighted by e^(s - m). Query rows, accumulators and the converted block sit in
 * VTCM (tsl_npu_flash_attn_scratch bytes, stated in the kparams header). Float arithmetic (vec.h),
 * where the reference sums in double. */
#include "npu/device/ops.h"

#define KB TSL_VF_LANES /* keys per block */

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

/* Row j of K/V head (h, b) as n floats into out. */
static void kv_row(const tsl_npu_view* t, int64_t j, int64_t h, int64_t b, int64_t n, float* out) {
    const uint8_t* p = tsl_npu_elem(t, 0, j, h, b);
    if (t->type != TSL_NPU_TYPE_Q8_0) {
        tsl_npu_row_to_floats(t, p, n, out);
        return;
    }
    for (int64_t i = 0; i < n; i += 32, p += TSL_NPU_Q8_0_BYTES) {
        uint16_t dh;
        __builtin_memcpy(&dh, p, 2);
        const float scale = tsl_npu_half_to_float(dh);
        for (int e = 0; e < 32; ++e) out[i + e] = (float)(int8_t)p[2 + e] * scale;
    }
}

/* One worker's scratch: nq query rows (Dp floats each, zero padded), their accumulators (Dvp
 * floats), the K block transposed (Dp x KB), the V block (KB x Dvp) and a conversion row. */
typedef struct fa_scratch {
    float* q;
    float* acc;
    float* kt;
    float* vb;
    float* row;
} fa_scratch;

typedef struct fa_task {
    const tsl_npu_op_ctx* c;
    float* base;
    uint64_t worker_floats;
    int64_t Dp, Dvp;
} fa_task;

static fa_scratch fa_scratch_of(const fa_task* t, uint32_t worker) {
    fa_scratch s;
    s.q = t->base + (uint64_t)worker * t->worker_floats;
    s.acc = s.q + TSL_NPU_FA_QTILE * t->Dp;
    s.kt = s.acc + TSL_NPU_FA_QTILE * t->Dvp;
    s.vb = s.kt + KB * t->Dp;
    s.row = s.vb + KB * t->Dvp;
    return s;
}

/* Converts keys [j0, j0 + n) of K head (hk, bk) transposed into kt and of V head (hv, bv) into vb;
 * the block's missing keys (n < KB) are zero. */
static void load_block(const fa_task* t, const fa_scratch* s, int64_t j0, int n, const int64_t kvh[4]) {
    const tsl_npu_view* k = &t->c->src[1];
    const tsl_npu_view* v = &t->c->src[2];
    const int64_t D = k->ne[0], Dv = v->ne[0];
    for (int j = 0; j < KB; ++j) {
        for (int64_t i = 0; i < t->Dp; ++i) s->row[i] = 0.0f;
        if (j < n) kv_row(k, j0 + j, kvh[0], kvh[1], D, s->row);
        for (int64_t i = 0; i < t->Dp; ++i) s->kt[i * KB + j] = s->row[i];
        float* vr = s->vb + (int64_t)j * t->Dvp;
        for (int64_t i = 0; i < t->Dvp; ++i) vr[i] = 0.0f;
        if (j < n) kv_row(v, j0 + j, kvh[2], kvh[3], Dv, vr);
    }
}

/* Query row r's coordinates (t fastest, then h, then b) and the K/V heads it reads. */
static void fa_row(const tsl_npu_op_ctx* c, int64_t r, int64_t* tq, int64_t* h, int64_t* b, int64_t kvh[4]) {
    const tsl_npu_view* q = &c->src[0];
    const tsl_npu_view* k = &c->src[1];
    const tsl_npu_view* v = &c->src[2];
    const int64_t T = q->ne[1], H = q->ne[2], B = q->ne[3];
    *tq = r % T;
    *h = r / T % H;
    *b = r / (T * H);
    kvh[0] = *h / (H / k->ne[2]);
    kvh[1] = *b / (B / k->ne[3]);
    kvh[2] = *h / (H / v->ne[2]);
    kvh[3] = *b / (B / v->ne[3]);
}

/* Whether the mask hides keys [j0, j0 + n) from all nq query rows (mrow: their mask rows): every
 * value -inf. A decode step over a mostly empty cache skips most blocks this way. */
static int block_masked(const tsl_npu_view* mask, const uint8_t* const* mrow, int nq, int64_t j0, int n) {
    for (int i = 0; i < nq; ++i) {
        const tsl_vf mv = tsl_npu_row_load(mask, mrow[i], j0, n, tsl_npu_f32_of_bits(0xff800000u));
        if (!(tsl_vf_hmax(mv) < -3.40282347e38f)) return 0;
    }
    return 1;
}

/* Query rows [r0, r0 + nq), all reading the K/V heads kvh. */
static void fa_run_tile(const fa_task* task, const fa_scratch* s, int64_t r0, int nq, const int64_t kvh[4]) {
    const tsl_npu_op_ctx* c = task->c;
    const tsl_npu_view* q = &c->src[0];
    const tsl_npu_view* mask = c->src[3].data ? &c->src[3] : 0;
    const tsl_npu_view* sinks = c->src[4].data ? &c->src[4] : 0;
    const tsl_npu_view* d = &c->dst[0];
    const int64_t D = q->ne[0], Dv = d->ne[0], KV = c->src[1].ne[1];
    const int64_t Dp = task->Dp, Dvp = task->Dvp;
    tsl_npu_softmax_kparams kp;
    __builtin_memcpy(&kp, c->op->kparams + TSL_NPU_KPARAMS_BODY, sizeof kp);
    const float scale = tsl_npu_f32_of_bits((uint32_t)c->op->params[0]);
    const float softcap = tsl_npu_f32_of_bits((uint32_t)c->op->params[2]);
    const float neg_inf = tsl_npu_f32_of_bits(0xff800000u);
    const tsl_vf vneg_inf = tsl_vf_splat(neg_inf), lowest = tsl_vf_splat(-3.40282347e38f);
    float m[TSL_NPU_FA_QTILE], l[TSL_NPU_FA_QTILE], slope[TSL_NPU_FA_QTILE];
    const uint8_t* mrow[TSL_NPU_FA_QTILE];
    for (int i = 0; i < nq; ++i) {
        int64_t tq, h, b, unused[4];
        fa_row(c, r0 + i, &tq, &h, &b, unused);
        float* qr = s->q + i * Dp;
        for (int64_t e = 0; e < Dp; e += TSL_VF_LANES) {
            tsl_vf_store(qr + e, tsl_npu_row_load(q, tsl_npu_elem(q, 0, tq, h, b), e, tsl_npu_chunk(D, e), 0.0f));
        }
        for (int64_t e = 0; e < Dvp; ++e) s->acc[i * Dvp + e] = 0.0f;
        /* a sink starts the running softmax: maximum the sink, normaliser e^0 */
        m[i] = sinks ? *(const float*)tsl_npu_elem(sinks, h, 0, 0, 0) : neg_inf;
        l[i] = m[i] == neg_inf ? 0.0f : 1.0f;
        slope[i] = (float)tsl_npu_alibi_slope(&kp, h);
        mrow[i] = mask ? tsl_npu_elem(mask, 0, tq, h % mask->ne[2], b % mask->ne[3]) : 0;
    }
    for (int64_t j0 = 0; j0 < KV; j0 += KB) {
        const int n = tsl_npu_chunk(KV, j0);
        if (mask && block_masked(mask, mrow, nq, j0, n)) continue; /* nothing to convert or add */
        load_block(task, s, j0, n, kvh);
        for (int i = 0; i < nq; ++i) {
            const float* qr = s->q + i * Dp;
            tsl_vf sc = tsl_vf_splat(0.0f);
            for (int64_t e = 0; e < D; ++e) sc = tsl_vf_madd(tsl_vf_splat(qr[e]), tsl_vf_load(s->kt + e * KB), sc);
            sc = tsl_vf_mul(sc, tsl_vf_splat(scale));
            if (softcap != 0.0f)
                sc = tsl_vf_mul(tsl_vf_splat(softcap), tsl_vf_tanh(tsl_vf_div(sc, tsl_vf_splat(softcap))));
            if (mask) {
                const tsl_vf mv = tsl_npu_row_load(mask, mrow[i], j0, n, 0.0f);
                sc = tsl_vf_select_lt(mv, lowest, vneg_inf, tsl_vf_madd(tsl_vf_splat(slope[i]), mv, sc));
            }
            sc = tsl_vf_keep_n(sc, n, neg_inf);
            const float bmax = tsl_vf_hmax(sc);
            if (bmax == neg_inf) continue; /* every key of the block masked */
            float* acc = s->acc + i * Dvp;
            if (bmax > m[i]) { /* the maximum grows: rescale what was summed */
                const float f = tsl_npu_expf(m[i] - bmax);
                l[i] *= f;
                for (int64_t e = 0; e < Dvp; e += TSL_VF_LANES)
                    tsl_vf_store(acc + e, tsl_vf_mul(tsl_vf_load(acc + e), tsl_vf_splat(f)));
                m[i] = bmax;
            }
            const tsl_vf p = tsl_vf_exp(tsl_vf_sub(sc, tsl_vf_splat(m[i])));
            l[i] += tsl_vf_hsum(p);
            for (int j = 0; j < n; ++j) {
                if (p.v[j] == 0.0f) continue;
                const tsl_vf w = tsl_vf_splat(p.v[j]);
                const float* vr = s->vb + (int64_t)j * Dvp;
                for (int64_t e = 0; e < Dvp; e += TSL_VF_LANES)
                    tsl_vf_store(acc + e, tsl_vf_madd(w, tsl_vf_load(vr + e), tsl_vf_load(acc + e)));
            }
        }
    }
    for (int i = 0; i < nq; ++i) {
        int64_t tq, h, b, unused[4];
        fa_row(c, r0 + i, &tq, &h, &b, unused);
        const float* acc = s->acc + i * Dvp;
        const tsl_vf inv = tsl_vf_splat(l[i] > 0.0f ? 1.0f / l[i] : 0.0f);
        uint8_t* out = tsl_npu_elem(d, 0, h, tq, b);
        for (int64_t e = 0; e < Dv; e += TSL_VF_LANES)
            tsl_npu_row_store(d, out, e, tsl_npu_chunk(Dv, e), tsl_vf_mul(tsl_vf_load(acc + e), inv));
    }
}

static void fa_rows(void* arg, uint32_t worker, uint32_t n_workers) {
    const fa_task* t = (const fa_task*)arg;
    const tsl_npu_view* q = &t->c->src[0];
    const fa_scratch s = fa_scratch_of(t, worker);
    int64_t begin, end;
    tsl_npu_split(tsl_npu_n_rows(q), worker, n_workers, &begin, &end);
    for (int64_t r = begin; r < end;) {
        int64_t tq, h, b, kvh[4], next[4];
        fa_row(t->c, r, &tq, &h, &b, kvh);
        int nq = 1;
        while (nq < TSL_NPU_FA_QTILE && r + nq < end) {
            fa_row(t->c, r + nq, &tq, &h, &b, next);
            if (next[0] != kvh[0] || next[1] != kvh[1] || next[2] != kvh[2] || next[3] != kvh[3]) break;
            ++nq;
        }
        fa_run_tile(t, &s, r, nq, kvh);
        r += nq;
    }
}

int32_t tsl_npu_flash_attn_run(tsl_npu_op_ctx* c) {
    const int64_t D = c->src[0].ne[0], Dv = c->src[2].ne[0];
    const uint32_t n_threads = c->platform->n_threads;
    fa_task t = {c, 0, tsl_npu_flash_attn_scratch(D, Dv, 1) / 4u, 0, 0};
    t.Dp = (D + TSL_VF_LANES - 1) / TSL_VF_LANES * TSL_VF_LANES;
    t.Dvp = (Dv + TSL_VF_LANES - 1) / TSL_VF_LANES * TSL_VF_LANES;
    t.base = (float*)tsl_npu_vtcm_alloc(c->vtcm, tsl_npu_flash_attn_scratch(D, Dv, n_threads), TSL_NPU_VTCM_ALIGN);
    if (!t.base) return TSL_NPU_ERR_NO_VTCM; /* the op stated less than its kernel takes */
    const tsl_npu_view* q = &c->src[0];
    tsl_npu_ops_parallel(c, tsl_npu_n_rows(q) * c->src[1].ne[1] * (D + Dv), fa_rows, &t);
    c->bytes = q->size + c->src[1].size + c->src[2].size + c->dst[0].size + (c->src[3].data ? c->src[3].size : 0);
    return TSL_NPU_OK;
}

/* ROPE: rotary position embedding of src0 x [D, H, T, B] (F32 or F16, any strides) with positions
 * src1 I32 [T] and optional frequency factors src2 F32 [>= n_dims/2], into dst (x's type and
 * shape). params[1] = n_dims (even, 2..min(D, TSL_NPU_ROPE_MAX_DIMS)), params[2] = mode (0 NORM:
 * pairs (2j, 2j+1); 2 NEOX: pairs (j, j + n_dims/2)); elements past n_dims are copied. The host
 * plans the rest in double (tsl_npu_rope_kparams, at TSL_NPU_KPARAMS_BODY of kparams). Pair j at
 * position p turns by
 *   theta = freq_scale * e                         e = p * theta_scale^j / ff_j
 *   theta = theta (1 - mix) + e mix                with YaRN (ext_factor != 0),
 *           mix = ext_factor (1 - clamp((j - corr_lo) / max(0.001, corr_hi - corr_lo), 0, 1))
 * and the pair is rotated by theta and scaled by mscale. Angles, sines and cosines are double
 * (dmath.h), the rotation double, rounded once to dst's type, as tessel's reference
 * (src/cpu/ref/rope.cpp); theta_scale^j is a running product (error ~j ulp in double). F16 rows
 * are converted a row at a time into float buffers (half.h's row helpers), not per element. */
#include "npu/device/dmath.h"
#include "npu/device/ops.h"

#define TSL_NPU_ROPE_MAX_DIMS 512

int32_t tsl_npu_rope_check(const tsl_npu_op_ctx* c) {
    const tsl_npu_view* x = &c->src[0];
    const tsl_npu_view* pos = &c->src[1];
    const tsl_npu_view* ff = &c->src[2];
    const tsl_npu_view* d = &c->dst[0];
    const int32_t n_dims = c->op->params[1];
    const int32_t mode = c->op->params[2];
    if (!tsl_npu_is_float(x->type) || d->type != x->type || !tsl_npu_same_shape(x, d)) return TSL_NPU_ERR_BAD_TYPE;
    if (pos->type != TSL_NPU_TYPE_I32 || pos->ne[0] != x->ne[2] || tsl_npu_n_rows(pos) != 1) return TSL_NPU_ERR_BAD_TYPE;
    if (mode != 0 && mode != 2) return TSL_NPU_ERR_BAD_TYPE;
    if (n_dims <= 0 || n_dims % 2 != 0 || n_dims > x->ne[0] || n_dims > TSL_NPU_ROPE_MAX_DIMS) return TSL_NPU_ERR_BAD_TYPE;
    if (ff->data && (ff->type != TSL_NPU_TYPE_F32 || ff->ne[0] < n_dims / 2)) return TSL_NPU_ERR_BAD_TYPE;
    return TSL_NPU_OK;
}

/* cos/sin (times mscale) of every pair at position p. */
static void rope_angles(const tsl_npu_op_ctx* c, const tsl_npu_rope_kparams* kp, double p, int64_t half, float* cs,
                        float* sn) {
    const tsl_npu_view* ff = c->src[2].data ? &c->src[2] : 0;
    double power = 1.0; /* theta_scale^j */
    const double span = kp->corr_hi - kp->corr_lo > 0.001 ? kp->corr_hi - kp->corr_lo : 0.001;
    for (int64_t j = 0; j < half; ++j, power *= kp->theta_scale) {
        const double factor = ff ? (double)*(const float*)tsl_npu_elem(ff, j, 0, 0, 0) : 1.0;
        const double extrap = p * power / factor;
        double theta = kp->freq_scale * extrap;
        if (kp->ext_factor != 0.0) {
            double y = ((double)j - kp->corr_lo) / span;
            y = y < 0.0 ? 0.0 : (y > 1.0 ? 1.0 : y);
            const double mix = kp->ext_factor * (1.0 - y);
            theta = theta * (1.0 - mix) + extrap * mix;
        }
        double s, co;
        tsl_npu_sincos(theta, &s, &co);
        cs[j] = (float)(co * kp->mscale);
        sn[j] = (float)(s * kp->mscale);
    }
}

static void rope_rows(void* arg, uint32_t worker, uint32_t n_workers) {
    const tsl_npu_op_ctx* c = (const tsl_npu_op_ctx*)arg;
    const tsl_npu_view* x = &c->src[0];
    const tsl_npu_view* pos = &c->src[1];
    const tsl_npu_view* d = &c->dst[0];
    tsl_npu_rope_kparams kp;
    __builtin_memcpy(&kp, c->op->kparams + TSL_NPU_KPARAMS_BODY, sizeof kp);
    const int64_t n_dims = c->op->params[1];
    const int neox = c->op->params[2] == 2;
    const int64_t half = n_dims / 2, D = x->ne[0];
    float cs[TSL_NPU_ROPE_MAX_DIMS / 2], sn[TSL_NPU_ROPE_MAX_DIMS / 2];
    float in[TSL_NPU_ROPE_MAX_DIMS], out[TSL_NPU_ROPE_MAX_DIMS]; /* one row's rotated dims as floats */
    int64_t cached = -1; /* the token whose angles cs/sn hold: rows of one token share them */
    int64_t begin, end, pending = 0;
    tsl_npu_split(tsl_npu_n_rows(d), worker, n_workers, &begin, &end);
    for (int64_t r = begin; r < end; ++r) {
        int64_t i1, i2, i3;
        tsl_npu_row_coords(d, r, &i1, &i2, &i3);
        tsl_npu_op_progress_work(c, &pending, 4 * D); /* the row before this one is done */
        if (i2 != cached) {
            cached = i2;
            rope_angles(c, &kp, (double)*(const int32_t*)tsl_npu_elem(pos, i2, 0, 0, 0), half, cs, sn);
        }
        const uint8_t* px = tsl_npu_elem(x, 0, i1, i2, i3);
        uint8_t* pd = tsl_npu_elem(d, 0, i1, i2, i3);
        /* the rotated dims: converted in, rotated in double, converted out, a row at a time */
        tsl_npu_row_to_floats(x, px, n_dims, in);
        for (int64_t j = 0; j < half; ++j) {
            const int64_t a = neox ? j : 2 * j, b = neox ? j + half : 2 * j + 1;
            const double x0 = in[a], x1 = in[b];
            out[a] = (float)(x0 * cs[j] - x1 * sn[j]);
            out[b] = (float)(x0 * sn[j] + x1 * cs[j]);
        }
        tsl_npu_row_from_floats(d, pd, n_dims, out);
        /* the others copied, in chunks of the row buffer */
        for (int64_t i0 = n_dims; i0 < D; i0 += TSL_NPU_ROPE_MAX_DIMS) {
            const int64_t n = D - i0 < TSL_NPU_ROPE_MAX_DIMS ? D - i0 : TSL_NPU_ROPE_MAX_DIMS;
            tsl_npu_row_to_floats(x, px + (uint64_t)i0 * x->nb[0], n, in);
            tsl_npu_row_from_floats(d, pd + (uint64_t)i0 * d->nb[0], n, in);
        }
    }
}

int32_t tsl_npu_rope_run(tsl_npu_op_ctx* c) {
    const int64_t n = tsl_npu_n_elements(&c->dst[0]);
    tsl_npu_ops_parallel(c, 4 * n, rope_rows, c);
    c->bytes = (uint64_t)n * 2u * tsl_npu_type_bytes(c->dst[0].type);
    return TSL_NPU_OK;
}

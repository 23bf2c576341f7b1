/* ARGSORT: dst I32 [K, ...] = for each row of src0 [K, ...] (F32 or F16, any strides) the indices
 * 0..K-1 in sorted order of their values, ascending (params[0] == 0) or descending (1); stable:
 * equal values keep index order; NaN sorts as the largest value. As tessel's reference
 * (src/cpu/ref/reduce.cpp, a stable sort). Here: an in-place heapsort of the dst row under the
 * strict total order (value, index), which yields exactly the stable order without scratch
 * memory, O(K log K). */
#include "npu/device/ops.h"

int32_t tsl_npu_argsort_check(const tsl_npu_op_ctx* c) {
    const tsl_npu_view* a = &c->src[0];
    const tsl_npu_view* d = &c->dst[0];
    if (!tsl_npu_is_float(a->type) || d->type != TSL_NPU_TYPE_I32 || !tsl_npu_same_shape(a, d)) return TSL_NPU_ERR_BAD_TYPE;
    if (a->ne[0] > 0x7fffffff || (c->op->params[0] != 0 && c->op->params[0] != 1)) return TSL_NPU_ERR_BAD_TYPE;
    return TSL_NPU_OK;
}

typedef struct sort_row {
    const tsl_npu_view* src;
    const uint8_t* values;
    uint8_t* out;
    uint64_t out_stride;
    int descending;
} sort_row;

static int32_t idx_at(const sort_row* s, int64_t i) { return *(const int32_t*)(s->out + (uint64_t)i * s->out_stride); }
static void idx_set(const sort_row* s, int64_t i, int32_t v) { *(int32_t*)(s->out + (uint64_t)i * s->out_stride) = v; }

static float value_of(const sort_row* s, int32_t idx) {
    return tsl_npu_load_float(s->src->type, s->values + (uint64_t)idx * s->src->nb[0]);
}

/* x before y in ascending value order, NaN largest. */
static int less_value(float x, float y) { return x < y || (y != y && x == x); }

/* Whether index a comes before index b in the output. */
static int comes_before(const sort_row* s, int32_t a, int32_t b) {
    const float va = value_of(s, a), vb = value_of(s, b);
    const int lt = s->descending ? less_value(vb, va) : less_value(va, vb);
    const int gt = s->descending ? less_value(va, vb) : less_value(vb, va);
    return lt || (!gt && a < b);
}

static void sift_down(const sort_row* s, int64_t root, int64_t n) {
    const int32_t moving = idx_at(s, root);
    for (;;) {
        int64_t child = 2 * root + 1;
        if (child >= n) break;
        if (child + 1 < n && comes_before(s, idx_at(s, child), idx_at(s, child + 1))) ++child;
        if (!comes_before(s, moving, idx_at(s, child))) break;
        idx_set(s, root, idx_at(s, child));
        root = child;
    }
    idx_set(s, root, moving);
}

static void argsort_row(const tsl_npu_op_ctx* c, int64_t i1, int64_t i2, int64_t i3) {
    const tsl_npu_view* a = &c->src[0];
    const tsl_npu_view* d = &c->dst[0];
    const int64_t n = a->ne[0];
    const sort_row s = {a, tsl_npu_elem(a, 0, i1, i2, i3), tsl_npu_elem(d, 0, i1, i2, i3), d->nb[0],
                        c->op->params[0] == 1};
    for (int64_t i = 0; i < n; ++i) idx_set(&s, i, (int32_t)i);
    for (int64_t i = n / 2 - 1; i >= 0; --i) sift_down(&s, i, n);
    for (int64_t last = n - 1; last > 0; --last) {
        const int32_t top = idx_at(&s, 0);
        idx_set(&s, 0, idx_at(&s, last));
        idx_set(&s, last, top);
        sift_down(&s, 0, last);
    }
}

int32_t tsl_npu_argsort_run(tsl_npu_op_ctx* c) {
    const int64_t n = tsl_npu_n_elements(&c->dst[0]);
    tsl_npu_for_rows(c, 8 * n, argsort_row);
    c->bytes = (uint64_t)n * (tsl_npu_type_bytes(c->src[0].type) + 4u);
    return TSL_NPU_OK;
}

// Reference kernel for FLASH_ATTN_EXT (semantics and op_params in graph/op.hpp).
//
// For query row q = q[:, t, h, b] (q [D, T, H, B]), with K/V head hk = h / (H / H_kv) and
// batch bk = b / (B / B_kv) (grouped-query attention; likewise for V):
//   s_j = scale · (q · k[:, j, hk, bk])                         j = 0 .. KV-1
//   s_j = softcap · tanh(s_j / softcap)                         if logit_softcap != 0
//   s_j = s_j + slope(h) · mask[j, t, h % M2, b % M3]            if a mask is given (-inf masks)
//   out[:, h, t, b] = Σ_j e^(s_j - m) v[:, j, hv, bv] / (Σ_j e^(s_j - m) + e^(sink_h - m))
// where m is the maximum of the s_j and the sink, slope is ALiBi's (1 when max_bias is 0) and
// the sink term is present only with sinks (not scaled). Plain two-pass softmax in double,
// K/V rows dequantized to float; all dot products and sums in double. A query whose scores
// are all -inf (fully masked, no sink) gets a zero output row, not NaN.
//
// Threads split query rows (ordered token-fastest, so a thread's rows mostly share one K/V
// head, whose dequantized rows it keeps); each output row is computed by one thread.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "cpu/ref/attention.hpp"
#include "cpu/ref/tensor_util.hpp"

namespace tessel::cpu::ref {
namespace {

bool supports_flash_attn(const Tensor& dst) {
    const Tensor* q = dst.src[0];
    const Tensor* k = dst.src[1];
    const Tensor* v = dst.src[2];
    const Tensor* mask = dst.src[3];
    const Tensor* sinks = dst.src[4];
    if (!q || !k || !v) return false;
    if (q->type != DType::F32 || dst.type != DType::F32 || !rows_readable(*k) || !rows_readable(*v)) return false;
    const int64_t T = q->ne[1], H = q->ne[2], B = q->ne[3], KV = k->ne[1];
    if (k->ne[0] != q->ne[0] || v->ne[1] != KV) return false;
    if (H % k->ne[2] != 0 || B % k->ne[3] != 0 || H % v->ne[2] != 0 || B % v->ne[3] != 0) return false;
    if (mask) {
        if (mask->type != DType::F16 && mask->type != DType::F32) return false;
        if (mask->ne[0] != KV || mask->ne[1] < T || H % mask->ne[2] != 0 || B % mask->ne[3] != 0) return false;
    }
    if (sinks && (sinks->type != DType::F32 || sinks->ne[0] != H || sinks->n_rows() != 1)) return false;
    return dst.ne[0] == v->ne[0] && dst.ne[1] == H && dst.ne[2] == T && dst.ne[3] == B;
}

// Dequantized rows of one K or V head, reloaded only when the head changes.
struct HeadCache {
    const Tensor& t;
    std::vector<float> rows;
    int64_t head = -1, batch = -1;

    explicit HeadCache(const Tensor& src) : t(src), rows(static_cast<size_t>(src.ne[0] * src.ne[1])) {}
    const float* row(int64_t j) const { return &rows[static_cast<size_t>(j * t.ne[0])]; }
    void select(int64_t h, int64_t b) {
        if (h == head && b == batch) return;
        head = h;
        batch = b;
        for (int64_t j = 0; j < t.ne[1]; ++j) load_row(t, elem_ptr(t, 0, j, h, b), &rows[static_cast<size_t>(j * t.ne[0])]);
    }
};

void run_flash_attn(Tensor& dst, ThreadContext& ctx) {
    const Tensor& q = *dst.src[0];
    const Tensor& k = *dst.src[1];
    const Tensor& v = *dst.src[2];
    const Tensor* mask = dst.src[3];
    const Tensor* sinks = dst.src[4];
    const double scale = dst.op_param_f32(0);
    const float max_bias = dst.op_param_f32(1);
    const double softcap = dst.op_param_f32(2);
    const int64_t D = q.ne[0], T = q.ne[1], H = q.ne[2], B = q.ne[3], KV = k.ne[1], Dv = v.ne[0];
    const double neg_inf = -std::numeric_limits<double>::infinity();

    HeadCache kc(k), vc(v);
    std::vector<float> qrow(static_cast<size_t>(D)), mrow(static_cast<size_t>(KV));
    std::vector<double> s(static_cast<size_t>(KV)), acc(static_cast<size_t>(Dv));
    const Range mine = thread_range(T * H * B, ctx);
    for (int64_t r = mine.begin; r < mine.end; ++r) {
        const int64_t t = r % T, h = (r / T) % H, b = r / (T * H);
        kc.select(h / (H / k.ne[2]), b / (B / k.ne[3]));
        load_row(q, elem_ptr(q, 0, t, h, b), qrow.data());
        if (mask) load_row(*mask, elem_ptr(*mask, 0, t, h % mask->ne[2], b % mask->ne[3]), mrow.data());
        const double slope = alibi_slope(h, H, max_bias);

        double max = sinks ? *reinterpret_cast<const float*>(elem_ptr(*sinks, h, 0)) : neg_inf;
        const double sink = max;
        for (int64_t j = 0; j < KV; ++j) {
            if (mask && std::isinf(mrow[j]) && mrow[j] < 0) {
                s[j] = neg_inf;
                continue;
            }
            double score = dot_f64(qrow.data(), kc.row(j), D) * scale;
            if (softcap != 0.0) score = softcap * std::tanh(score / softcap);
            if (mask) score += slope * mrow[j];
            s[j] = score;
            max = std::max(max, score);
        }

        std::fill(acc.begin(), acc.end(), 0.0);
        if (max != neg_inf) {
            vc.select(h / (H / v.ne[2]), b / (B / v.ne[3]));
            double sum = sinks ? std::exp(sink - max) : 0.0;
            for (int64_t j = 0; j < KV; ++j) {
                if (s[j] == neg_inf) continue;
                const double w = std::exp(s[j] - max);
                sum += w;
                const float* vr = vc.row(j);
                for (int64_t i = 0; i < Dv; ++i) acc[i] += w * static_cast<double>(vr[i]);
            }
            for (double& a : acc) a /= sum;
        }
        uint8_t* out = elem_ptr(dst, 0, h, t, b);
        for (int64_t i = 0; i < Dv; ++i) *reinterpret_cast<float*>(out + i * dst.nb[0]) = static_cast<float>(acc[i]);
    }
}

}  // namespace

void register_flash_attn_op(KernelTable& t) { t.set(Op::FLASH_ATTN_EXT, supports_flash_attn, run_flash_attn); }

}  // namespace tessel::cpu::ref

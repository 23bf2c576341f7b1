#include "graph/op_cost.hpp"

namespace tessel {

double op_flops(const Tensor& t) {
    const Tensor* s0 = t.src[0];
    switch (t.op) {
        case Op::MUL_MAT:
        case Op::MUL_MAT_ID: return 2.0 * static_cast<double>(s0->ne[0]) * static_cast<double>(t.n_elements());
        case Op::FLASH_ATTN_EXT: {
            const Tensor& q = *s0;
            const Tensor& k = *t.src[1];
            const Tensor& v = *t.src[2];
            return 2.0 * static_cast<double>(k.ne[1]) * static_cast<double>(q.ne[0] + v.ne[0]) *
                   static_cast<double>(q.ne[1] * q.ne[2] * q.ne[3]);
        }
        default: return 0.0;
    }
}

double op_bytes(const Tensor& t) {
    double b = static_cast<double>(t.n_bytes());
    for (const Tensor* s : t.src)
        if (s) b += static_cast<double>(s->n_bytes());
    return b;
}

}  // namespace tessel

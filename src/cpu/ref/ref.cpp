#include "cpu/ref/ref.hpp"

#include <string>

#include "tessel/errors.hpp"

namespace tessel::cpu::ref {
namespace {

const KernelTable& table() {
    static const KernelTable t = [] {
        KernelTable k;
        register_data_ops(k);
        register_elementwise_ops(k);
        register_reduce_ops(k);
        register_matmul_ops(k);
        register_attention_ops(k);
        return k;
    }();
    return t;
}

}  // namespace

bool supports(const Tensor& dst) {
    if (op_is_view(dst.op)) return true;
    const OpKernel& k = table().ops[static_cast<int>(dst.op)];
    return k.run && k.supports && k.supports(dst);
}

void compute(Tensor& dst, ThreadContext& ctx) {
    if (op_is_view(dst.op)) return;
    if (!supports(dst))
        throw Error(ErrorCode::Unsupported, std::string("reference CPU has no kernel for ") + op_name(dst.op) + " " + describe(dst));
    table().ops[static_cast<int>(dst.op)].run(dst, ctx);
}

}  // namespace tessel::cpu::ref

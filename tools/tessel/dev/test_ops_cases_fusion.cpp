// test-ops cases of several nodes: the chains a backend may fuse into one op (the NPU's
// enqueue-time fusion, docs/npu.md "Fusion"), each ending in the node the tool compares, with every
// fused-away intermediate read only inside the chain.
#include "graph/builder.hpp"
#include "graph/builder_attn.hpp"
#include "test_ops.hpp"

namespace tessel::cli::test_ops {
namespace {

constexpr double kFusedMatNmse = 5e-4;  // as MUL_MAT: activations quantized per 32-block

Case make(Op op, std::string variant, std::function<Tensor*(Maker&)> build, double bound) {
    Case c;
    c.op = op;
    c.variant = std::move(variant);
    c.build = std::move(build);
    c.max_nmse = bound;
    return c;
}

/// The weight types every NPU matmul kernel takes (tiles or flat floats) and the CPU's common ones.
const DType kTypes[] = {DType::F32, DType::F16, DType::Q4_0, DType::Q4_1, DType::Q8_0};

}  // namespace

void add_fusion_cases(std::vector<Case>& out) {
    // RMS_NORM / NORM then MUL by a weight row (the norms of a transformer block), and by a tensor
    // of the same shape with the weight first
    out.push_back(make(Op::MUL, "RMS_NORM+MUL", [](Maker& m) {
        return build::mul(m.g(), build::rms_norm(m.g(), m.input(DType::F32, {96, 7}), 1e-5f), m.input(DType::F32, {96}));
    }, 1e-10));
    out.push_back(make(Op::MUL, "NORM+MUL same-shape", [](Maker& m) {
        Tensor* w = m.input(DType::F32, {50, 3, 2});
        return build::mul(m.g(), w, build::norm(m.g(), m.input(DType::F32, {50, 3, 2}), 1e-5f));
    }, 1e-10));
    for (DType t : kTypes) {
        // MUL_MAT then its bias (qwen2's Q/K/V)
        out.push_back(make(Op::ADD, std::string("MUL_MAT+ADD ") + dtype_name(t), [t](Maker& m) {
            Tensor* y = build::mul_mat(m.g(), m.weight(t, {128, 40}), m.input(DType::F32, {128, 5}));
            return build::add(m.g(), y, m.input(DType::F32, {40}));
        }, kFusedMatNmse));
        // Q/K/V-like: three matmuls of one activation tensor with biases, summed into one output (the
        // node order puts the first apart: it fuses with its bias, the other two as one op)
        out.push_back(make(Op::ADD, std::string("MUL_MAT+ADD shared-x ") + dtype_name(t), [t](Maker& m) {
            Tensor* x = m.input(DType::F32, {128, 3});
            Tensor* sum = nullptr;
            for (int i = 0; i < 3; ++i) {
                Tensor* y = build::add(m.g(), build::mul_mat(m.g(), m.weight(t, {128, 64}), x), m.input(DType::F32, {64}));
                sum = sum ? build::add(m.g(), sum, y) : y;
            }
            return sum;
        }, kFusedMatNmse));
        // gate/up: two matmuls of one activation tensor into SWIGLU
        out.push_back(make(Op::GLU, std::string("MUL_MAT x2 ") + dtype_name(t), [t](Maker& m) {
            Tensor* x = m.input(DType::F32, {128, 17});
            return build::swiglu_split(m.g(), build::mul_mat(m.g(), m.weight(t, {128, 72}), x),
                                       build::mul_mat(m.g(), m.weight(t, {128, 72}), x));
        }, kFusedMatNmse));
        // MUL_MAT_ID: two expert matmuls of the same activations and ids
        out.push_back(make(Op::ADD, std::string("MUL_MAT_ID x2 ") + dtype_name(t), [t](Maker& m) {
            Tensor* x = m.input(DType::F32, {128, 2, 5});
            Tensor* ids = m.ids(DType::I32, {2, 5}, 4, true);
            return build::add(m.g(), build::mul_mat_id(m.g(), m.weight(t, {128, 40, 4}), x, ids),
                              build::mul_mat_id(m.g(), m.weight(t, {128, 40, 4}), x, ids));
        }, kFusedMatNmse));
    }
}

}  // namespace tessel::cli::test_ops

#include "npu/host/translate.hpp"

#include "backend/buffer.hpp"
#include "npu/host/buffer.hpp"
#include "tessel/errors.hpp"

namespace tessel::npu {
namespace {

bool float_type(DType t) { return t == DType::F32 || t == DType::F16; }

bool broadcasts(const Tensor& a, const Tensor& b) {
    for (int i = 0; i < kMaxDims; ++i)
        if (b.ne[i] < 1 || a.ne[i] % b.ne[i] != 0) return false;
    return true;
}

bool same_shape(const Tensor& a, const Tensor& b) { return a.ne == b.ne; }

}  // namespace

bool is_no_op(const Tensor& t) {
    switch (t.op) {
    case Op::NONE:
    case Op::VIEW:
    case Op::RESHAPE:
    case Op::PERMUTE:
    case Op::TRANSPOSE: return true;
    default: return false;
    }
}

bool device_supports(const Tensor& t) {
    // No device kernel reads 32x32 tiles yet: a node reading a tiled weight goes to the CPU, which
    // gets the GGUF bytes through get_tensor.
    for (const Tensor* s : t.src)
        if (s && reads_tiled(*s)) return false;
    const Tensor* a = t.src[0];
    const Tensor* b = t.src[1];
    switch (t.op) {
    case Op::ADD:
    case Op::MUL:
        return a && b && float_type(a->type) && float_type(b->type) && float_type(t.type) && same_shape(t, *a) &&
               broadcasts(*a, *b);
    case Op::SCALE: return a && float_type(a->type) && float_type(t.type) && same_shape(t, *a);
    case Op::CPY:
    case Op::CONT:
    case Op::DUP: return a && float_type(a->type) && float_type(t.type) && a->n_elements() == t.n_elements();
    default: return false;
    }
}

Operand operand(const Tensor& t) {
    const NpuBuffer* buf = npu_buffer_of(t);
    if (!buf)
        throw Error(ErrorCode::InvalidArgument, "NPU: tensor " + describe(t) + " is not in an NPU buffer (" +
                                                    (t.buffer ? t.buffer->type().name() : std::string("no buffer")) + ")");
    Operand o;
    o.tensor = &t;
    o.buffer = &buf->shm();
    o.buffer_flags = buf->wire_flags();
    o.offset = tensor_offset(t);
    o.size = t.n_bytes();
    if (const TiledTensor* rec = buf->tiled(t)) {
        o.repacked = true;
        o.size = rec->device_bytes;
    }
    return o;
}

DeviceOp translate(const Tensor& t) {
    if (!device_supports(t)) throw Error(ErrorCode::Unsupported, "NPU: the device does not implement " + describe(t) + " (" + op_name(t.op) + ")");
    DeviceOp d;
    switch (t.op) {
    case Op::ADD: d.opcode = TSL_NPU_OP_ADD; break;
    case Op::MUL: d.opcode = TSL_NPU_OP_MUL; break;
    case Op::SCALE: d.opcode = TSL_NPU_OP_SCALE; break;
    default: d.opcode = TSL_NPU_OP_CPY; break;  // CPY, CONT, DUP: element copy with conversion
    }
    d.srcs.push_back(operand(*t.src[0]));
    if (d.opcode == TSL_NPU_OP_ADD || d.opcode == TSL_NPU_OP_MUL) d.srcs.push_back(operand(*t.src[1]));
    d.dsts.push_back(operand(t));
    return d;
}

}  // namespace tessel::npu

// Operands of device ops and the nodes graph_compute skips (translate.hpp).
#include "npu/host/translate.hpp"

#include "backend/buffer.hpp"
#include "npu/host/buffer.hpp"
#include "tessel/errors.hpp"

namespace tessel::npu {

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

}  // namespace tessel::npu

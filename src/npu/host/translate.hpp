// Graph nodes -> device ops (DESIGN.md, "The npu offload path"): which tessel ops the device
// implements (and for which types and shapes), and how a node becomes an op descriptor: its
// opcode, its inputs and outputs as operands in shared buffers, its op_params copied verbatim.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "graph/tensor.hpp"
#include "npu/host/opbatch.hpp"
#include "npu/host/plan.hpp"

namespace tessel::npu {

/// True when the device runtime implements node t as it is (op, types, shapes, op_params):
/// ADD/SUB/MUL/DIV, SCALE, CPY/CONT/DUP, RMS_NORM/NORM, UNARY, GLU, SUM_ROWS, SOFT_MAX, ROPE,
/// GET_ROWS, SET_ROWS, ARGSORT, MUL_MAT, MUL_MAT_ID,
/// FLASH_ATTN_EXT in the combinations docs/npu.md lists
/// (translate_ops.cpp), when its plan fits `budget` (plan.hpp). Tiled weights (buffer.hpp) are
/// read only as src0 of MUL_MAT, MUL_MAT_ID and GET_ROWS (the tiled tensor itself); any other node
/// reading a tiled tensor or a view of one is declined. A weight not placed yet counts as tiled
/// when NPUn would tile it (stored_tiled): the weight loader asks before placing anything.
bool device_supports(const Tensor& t, const DeviceBudget& budget);

/// True when t computes nothing (a leaf or a view): graph_compute skips it.
bool is_no_op(const Tensor& t);

/// A node as a device op: opcode, operands (empty slots for absent optional inputs) and the
/// kernel parameters the host planned (tsl_npu_op_desc::kparams: the header with the op's scratch
/// bytes, then the op's own parameters at TSL_NPU_KPARAMS_BODY), ready for OpBatch::fit/add.
struct DeviceOp {
    uint32_t opcode = 0;
    std::vector<Operand> srcs, dsts;
    std::array<uint8_t, TSL_NPU_KPARAMS_BYTES> kparams{};
};

/// Builds node t's op for a device with `budget`. Throws tessel::Error(InvalidArgument) naming the
/// tensor when an operand is not in an NPU buffer, or Error(Unsupported) when the device does not
/// implement t or t's plan does not fit.
DeviceOp translate(const Tensor& t, const DeviceBudget& budget);

/// The operand for tensor t (its NPU buffer, offset and byte span). A tiled weight's operand is
/// marked repacked and spans its tiled bytes (tiled_size), not n_bytes.
Operand operand(const Tensor& t);

}  // namespace tessel::npu

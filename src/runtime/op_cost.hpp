// What an op costs, from the shapes of the nodes it computed: bytes moved and floating-point
// operations, for the GB/s and GFLOP/s columns of `tessel profile` (tessel::OpProfile).
#pragma once

#include <string>

#include "backend/backend.hpp"
#include "tessel/engine.hpp"

namespace tessel::runtime {

/// Bytes node reads and writes: every source's bytes plus its output's (GET_ROWS: the rows it
/// gathers, as many as its output holds, instead of the whole table; views: 0).
double node_bytes(const Tensor& node);

/// Floating-point operations of node: MUL_MAT and MUL_MAT_ID 2 K per output element (2 K N M);
/// FLASH_ATTN_EXT 2 (D + Dv) per query row and key, per head; views 0; any other op one per
/// output element.
double node_flops(const Tensor& node);

/// t as the public record of device `device`: ms, and the bytes and flops of its nodes (0 when
/// it names none).
OpProfile op_profile(const OpTiming& t, const std::string& device);

}  // namespace tessel::runtime

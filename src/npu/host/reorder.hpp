// The NPU's graph reorder (Backend::graph_optimize): a pure pass over one split's node list that
// keeps fusable chains together and stacks matmuls sharing an input, so enqueue-time fusion finds
// them adjacent. It never changes a result: sources stay before their users, and a node moves past
// another only when their byte ranges cannot conflict (docs/npu.md, "Reorder").
#pragma once

#include <cstddef>
#include <vector>

#include "graph/tensor.hpp"

namespace tessel::npu {

/// A node moves at most this many positions: a chain's consumer to its producer, a matmul to the
/// matmul sharing its input, both lie within this many consecutive nodes.
constexpr size_t kReorderWindow = 16;

/// Reorders `nodes` (a topological order; views and in-place writers such as SET_ROWS/CPY into the
/// KV cache included) in two steps:
///  1. a fusable chain's consumer moves up to just after its producer: MUL after the RMS_NORM it
///     reads, ADD of a bias (a weight) after the MUL_MAT it reads, GLU after the later of its
///     MUL_MATs; only when the producer's one reader is that consumer and no graph output;
///  2. a MUL_MAT (MUL_MAT_ID) moves, with the chain it heads, to just after the nearest earlier
///     one of the same op reading the same activations (src1: the same tensor or the same bytes;
///     MUL_MAT_ID also the same ids, src2).
/// A move happens only when no node it passes is a source of a moved node, writes bytes a moved
/// node reads or writes, or reads bytes a moved node writes. Bytes are compared per storage: the
/// storage owner's buffer (address ranges) once allocated, else the owner itself (view offsets).
/// Returns the number of nodes moved (0: `nodes` unchanged). Throws nothing.
size_t reorder_nodes(std::vector<Tensor*>& nodes);

}  // namespace tessel::npu

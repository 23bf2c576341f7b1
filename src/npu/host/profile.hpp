// Profiles of the NPU backend (Backend::set_profiling): the device's per-op records paired with
// the graph nodes they computed.
#pragma once

#include <vector>

#include "backend/backend.hpp"
#include "npu/host/opqueue.hpp"

namespace tessel::npu {

/// Nodes a device op named `name` computed: 1, a fused op's parts ("RMS_NORM+MUL": 2,
/// "MUL_MAT x3": 3), 0 for ops of no node (FENCE, SET_TENSOR, GET_TENSOR, ALLREDUCE, ALLREDUCE+ADD).
size_t nodes_of_op(const std::string& name);

/// The device's records in order, each with its time (stop - start) and the next nodes_of_op of
/// `nodes` (the device ops' nodes in the order they were sent). Once a record's first part does
/// not name its node's op (the order was lost), the rest get no nodes.
std::vector<OpTiming> pair_profile(const std::vector<OpProfile>& records, const std::vector<const Tensor*>& nodes);

}  // namespace tessel::npu

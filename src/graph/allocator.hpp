// Liveness allocator: plans where each tensor of a graph lives inside one compute buffer,
// reusing the memory of tensors whose last reader has run.
//
// Input: the nodes in execution order and a predicate saying which tensors need memory from this
// plan (typically: the nodes that run on one backend, plus copies of their inputs). A tensor is
// live from the step that writes it to the last step that reads it (directly or through a view);
// tensors flagged kFlagOutput or kFlagInput (or whose view is so flagged) are never released.
// Views take no memory of their own.
// Placement is best-fit in a free list with neighbour coalescing, offsets aligned to `alignment`.
#pragma once

#include <cstddef>
#include <functional>
#include <unordered_map>
#include <vector>

#include "graph/tensor.hpp"

namespace tessel {

struct AllocPlan {
    std::unordered_map<const Tensor*, size_t> offset;  ///< byte offset of each planned tensor
    size_t size = 0;        ///< buffer bytes needed (the high-water mark of the placement)
    size_t total_bytes = 0; ///< what the planned tensors would take without any reuse
};

/// Plans the tensors in `nodes` (and sources of theirs) for which needs_memory(t) is true.
/// `size_of(t)` gives each tensor's bytes (e.g. a buffer type's alloc_size).
/// `alignment` must be a power of two. Throws tessel::Error(InvalidArgument) otherwise.
AllocPlan plan_allocation(const std::vector<Tensor*>& nodes, const std::function<bool(const Tensor&)>& needs_memory,
                          const std::function<size_t(const Tensor&)>& size_of, size_t alignment);

}  // namespace tessel

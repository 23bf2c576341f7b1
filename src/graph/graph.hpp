// Graph: owns tensors and lists the nodes to compute in a topological order.
//
// Build a graph by creating leaves (inputs, weights) with new_tensor(), combining them with the
// op builders (graph/builder.hpp), then calling expand(output) for each result: expand appends
// every not-yet-listed ancestor before the node itself (depth-first, sources in slot order),
// so nodes() is always a valid execution order.
#pragma once

#include <cstdint>
#include <deque>
#include <initializer_list>
#include <string>
#include <unordered_set>
#include <vector>

#include "graph/tensor.hpp"

namespace tessel {

class Graph {
public:
    Graph() = default;
    Graph(const Graph&) = delete;
    Graph& operator=(const Graph&) = delete;

    /// A new leaf tensor (op NONE) with contiguous strides. Throws tessel::Error(InvalidArgument)
    /// for a bad shape (see Tensor::set_shape).
    Tensor* new_tensor(DType type, std::initializer_list<int64_t> ne, std::string name = {});

    /// A new node computing `op` from `srcs`, with the given type and contiguous shape.
    /// Used by the op builders; validates nothing beyond the shape.
    Tensor* new_node(Op op, DType type, const std::array<int64_t, kMaxDims>& ne, std::initializer_list<Tensor*> srcs);

    /// A new view node of `src` (op VIEW/RESHAPE/PERMUTE/TRANSPOSE) sharing its storage at
    /// byte offset `offset` with the given shape and strides.
    Tensor* new_view(Op op, Tensor* src, const std::array<int64_t, kMaxDims>& ne,
                     const std::array<uint64_t, kMaxDims>& nb, uint64_t offset);

    /// Appends `out` and its unlisted ancestors to nodes() (leaves go to leaves()).
    void expand(Tensor* out);

    /// Nodes to compute, in execution order (sources before users).
    const std::vector<Tensor*>& nodes() const { return nodes_; }
    /// Leaves (op NONE) reachable from the expanded outputs, in depth-first visiting order.
    const std::vector<Tensor*>& leaves() const { return leaves_; }
    /// Every tensor created in this graph, in creation order.
    const std::deque<Tensor>& tensors() const { return tensors_; }

    /// Graph identity: a 64-bit hash of everything that determines the computation — for each
    /// listed node and leaf its op, type, ne, nb, op_params, view offset, source positions,
    /// buffer and data address. Two graphs with equal uids compute the same thing on the same
    /// memory, so a backend may cache per-graph work (plans, packed batches) keyed by it; any
    /// change of a node, shape, op param or buffer changes it. Names and flags do not count.
    /// O(nodes); computed on each call.
    uint64_t uid() const;

private:
    void visit(Tensor* t);

    std::deque<Tensor> tensors_;  // stable addresses
    std::vector<Tensor*> nodes_;
    std::vector<Tensor*> leaves_;
    std::unordered_set<const Tensor*> listed_;  // nodes and leaves already in the lists
};

}  // namespace tessel

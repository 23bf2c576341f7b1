// The scheduler: runs one graph over several backends (DESIGN.md, "Core contracts").
//
// allocate(g):
//  1. assigns every node to a backend: an in-place writer (a node whose result is a view of a
//     tensor that already has memory, e.g. SET_ROWS or CPY into the KV cache) to the first
//     backend, in priority order, whose device addresses that memory (supports_buft) and supports
//     the op — never to one that would get a copy of the destination, whose writes would be lost
//     (a KV cache in NPUn-HOST memory, which CPU and NPU both address, lets the NPU write it);
//     otherwise first the backend whose buffers hold a weight the node reads (if that backend
//     supports the op), else the first backend in priority order whose device supports the op.
//     The CPU backend (required, last) supports every op, so a node an accelerator declines
//     always runs on the CPU — never an abort;
//  2. cuts the node list into splits of consecutive nodes on one backend (views follow their
//     source and compute nothing), and lets each split's backend reorder the split's nodes
//     (Backend::graph_optimize, e.g. the NPU stacking matmuls that share an input) — once per
//     allocate, so every compute() of the allocation (and each split's uid) runs that order;
//  3. for every split input stored where the split's device cannot read it, makes a copy in
//     that backend's buffer type (copied at the start of the split; a view input gets a copy of
//     its storage owner and a view into it), pointing the reading node at the copy until
//     release();
//  4. plans each backend's compute buffer with the liveness allocator over the reordered nodes
//     and places them;
//     leaves without a buffer (inputs) are placed in host memory. The CPU's compute memory comes
//     from the first accelerator whose device answers proc("cpu_compute_buffer_type") (an NPU
//     with TESSEL_NPU_HOSTBUF=1), so that device reads the CPU's results without copies.
// compute() then runs the splits in order; each split waits for the event of the split before
// it, copies its inputs, computes, and records its own event. It returns when all are done.
// An input computed by another split's backend is copied device to device when the split's
// backend takes it (Backend::cpy_tensor_async: NPU to NPU), else through host memory.
// While an accelerator's split runs, the CPU backend is told it is idle (Backend::set_idle), so
// its workers sleep rather than spin.
#pragma once

#include <memory>
#include <unordered_map>
#include <vector>

#include "backend/backend.hpp"
#include "graph/graph.hpp"

namespace tessel {

class Scheduler {
public:
    /// `backends` in priority order; must contain a CPU backend (the fallback), best placed last.
    /// Throws tessel::Error(InvalidArgument) when there is none.
    explicit Scheduler(std::vector<Backend*> backends);
    ~Scheduler();

    /// Assigns, splits and allocates g (see above). Input leaves can be written after this.
    /// Throws tessel::Error(Unsupported) when a node has no backend (with the CPU present: only an
    /// in-place writer into memory no backend that supports the op addresses).
    void allocate(Graph& g);
    /// Runs the graph allocated last; returns when every split is done.
    void compute();

    struct Split {
        Backend* backend;
        std::vector<Tensor*> nodes;
        std::vector<std::pair<Tensor*, Tensor*>> copies;  ///< (source elsewhere, local copy)
        uint64_t uid = 0;  ///< process-unique per split of an allocation (Backend::graph_compute)
    };
    const std::vector<Split>& splits() const { return splits_; }
    /// The backend node t was assigned to (nullptr for tensors outside the graph).
    Backend* backend_of(const Tensor& t) const;
    /// Compute-buffer bytes planned for backend b (0 when it runs nothing).
    size_t compute_buffer_size(const Backend& b) const;

    /// Gives the graph back as it was before allocate() (sources restored, scheduler memory
    /// detached from its tensors). Also done by the next allocate() and by the destructor.
    void release();

private:
    Backend* assign(const Tensor& node) const;
    /// The buffer type backend b's compute buffers and input copies use.
    BufferType& compute_type(const Backend& b) const;

    struct Rewrite {
        Tensor* node;
        int slot;
        Tensor* original;
    };

    std::vector<Backend*> backends_;
    Backend* cpu_ = nullptr;
    BufferType* cpu_compute_type_ = nullptr;
    std::vector<Split> splits_;
    std::unordered_map<const Tensor*, Backend*> assignment_;
    std::unordered_map<const Backend*, std::unique_ptr<Buffer>> compute_buffers_;
    std::vector<std::unique_ptr<Buffer>> staging_;       // copies and host inputs
    std::vector<std::unique_ptr<Tensor>> copy_tensors_;  // the local copies
    std::vector<std::unique_ptr<Event>> events_;          // one per split
    std::vector<Rewrite> rewrites_;                       // sources pointed at local copies
    std::vector<Tensor*> placed_;                         // graph tensors given scheduler memory
    std::vector<Tensor*> split_outputs_;                  // graph tensors given kFlagSplitOutput
    std::vector<uint8_t> copy_bytes_;                     // compute(): split inputs on their way (kept: no allocation per step)
};

}  // namespace tessel

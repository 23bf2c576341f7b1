// The all-reduce communicator of NPU sessions (DESIGN.md, "The npu offload path"; docs/npu.md,
// "All-reduce"): 2 to 4 ranks, each an NPU stream; a call sums one F32 tensor per rank, in place,
// on the devices, without the host touching the data or waiting.
//
// Each rank's stream gets, behind its queued work: a FENCE (entry: its input is ready), a
// FENCE_WAIT on every peer's entry fence, its ALLREDUCE share (proto.h), a FENCE (exit) and a
// FENCE_WAIT on every peer's exit fence. So no rank reads a peer's tensor before the peer wrote it,
// and no rank goes on before every share of its tensor is summed. All ranks end with the same bits.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "backend/backend.hpp"
#include "graph/tensor.hpp"

namespace tessel::npu {

class NpuBackend;

enum class AllReduceMode : uint32_t {
    Elements = 0,  ///< 1-D: contiguous tensors, elements split by rank in multiples of 128
    Rows = 1,      ///< 2-D: rows (ne[1..3]) split by rank; any row stride
};

class Communicator {
public:
    /// Ranks 0..n-1 are `streams` in order: 2 to 4 NPU backends, each on a device runtime of its own
    /// (not two virtual sessions of one device: it runs one batch at a time, and ranks wait for each other).
    /// Throws tessel::Error(InvalidArgument) naming the problem otherwise.
    explicit Communicator(std::span<Backend* const> streams);
    size_t size() const { return ranks_.size(); }

    /// Queues the all-reduce of `tensors` (tensor r on rank r's device memory; F32, equal shapes;
    /// contiguous for Elements) on every rank's stream and sends it; returns without waiting:
    /// synchronize a stream (or record an event on it) to use its result. Throws
    /// tessel::Error(InvalidArgument) naming the tensor for a wrong count, type, shape, layout or
    /// placement, and the session's error when a device failed.
    void allreduce(std::span<Tensor* const> tensors, AllReduceMode mode);

private:
    std::vector<NpuBackend*> ranks_;
};

/// The table NpuDevice::proc("allreduce_comm") returns: the communicator as plain entry points.
struct AllReduceApi {
    /// A communicator over `n` NPU streams (see Communicator); throws as its constructor.
    Communicator* (*init)(Backend* const* streams, int n);
    void (*free)(Communicator* comm);
    /// Communicator::allreduce over `n` tensors; mode 0 = Elements, 1 = Rows.
    void (*allreduce_tensor)(Communicator* comm, Tensor* const* tensors, int n, int mode);
};

const AllReduceApi& allreduce_api();

}  // namespace tessel::npu

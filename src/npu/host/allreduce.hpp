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

/// What an all-reduce communicator does, wherever its ranks run: this process's NPU sessions
/// (Communicator) or one process each (MpiCommunicator, allreduce_mpi.hpp, with TESSEL_MPI).
class AllReduceComm {
public:
    virtual ~AllReduceComm() = default;
    /// Ranks in all.
    virtual size_t size() const = 0;
    /// Sums one F32 tensor per rank in place: `tensors` holds this process's ranks' tensors, in
    /// rank order. Every rank ends with the same bits (each element summed in rank order).
    virtual void allreduce(std::span<Tensor* const> tensors, AllReduceMode mode) = 0;
};

class Communicator final : public AllReduceComm {
public:
    /// Ranks 0..n-1 are `streams` in order: 2 to 4 NPU backends, each on a device runtime of its own
    /// (not two virtual sessions of one device: it runs one batch at a time, and ranks wait for each other).
    /// Throws tessel::Error(InvalidArgument) naming the problem otherwise.
    explicit Communicator(std::span<Backend* const> streams);
    size_t size() const override { return ranks_.size(); }

    /// Queues the all-reduce of `tensors` (tensor r on rank r's device memory; F32, equal shapes;
    /// contiguous for Elements) on every rank's stream and sends it; returns without waiting:
    /// synchronize a stream (or record an event on it) to use its result. Throws
    /// tessel::Error(InvalidArgument) naming the tensor for a wrong count, type, shape, layout or
    /// placement, and the session's error when a device failed.
    void allreduce(std::span<Tensor* const> tensors, AllReduceMode mode) override;

private:
    std::vector<NpuBackend*> ranks_;
};

/// Ranks in other processes of which each computes a part of every weight matmul's rows (a model
/// split across MPI ranks: MpiCommunicator, allreduce_mpi.hpp). Part p of n holds row tiles
/// [n_rt * p / n, n_rt * (p + 1) / n) of every output (tsl_npu_matmul_kparams.part).
class RowParts {
public:
    virtual ~RowParts() = default;
    virtual int rank() const = 0;
    virtual int n_ranks() const = 0;
    /// Every rank has computed its part of F32 tensor t's rows (ne[0]) in host-visible memory
    /// (t.data); on return every rank holds all of them. A collective call. Throws
    /// tessel::Error(Device) when the exchange fails.
    virtual void gather_parts(const Tensor& t) = 0;
};

/// The table NpuDevice::proc("allreduce_comm") returns (proc("allreduce_comm_mpi"): the same
/// over MPI processes, allreduce_mpi.hpp): the communicator as plain entry points.
struct AllReduceApi {
    /// A communicator over the `n` streams of this process's ranks; throws as its constructor.
    AllReduceComm* (*init)(Backend* const* streams, int n);
    void (*free)(AllReduceComm* comm);
    /// AllReduceComm::allreduce over `n` tensors; mode 0 = Elements, 1 = Rows. Throws
    /// tessel::Error(InvalidArgument) for another mode.
    void (*allreduce_tensor)(AllReduceComm* comm, Tensor* const* tensors, int n, int mode);
};

/// The in-process table (Communicator).
const AllReduceApi& allreduce_api();

/// The entry points every table shares: free deletes, allreduce_tensor checks n and mode and calls.
void allreduce_api_free(AllReduceComm* comm);
void allreduce_api_call(AllReduceComm* comm, Tensor* const* tensors, int n, int mode);

}  // namespace tessel::npu

// The all-reduce across processes (docs/npu.md, "All-reduce across processes"): one rank per process
// of MPI_COMM_WORLD (OpenMPI; built with -DTESSEL_MPI=ON), each with one stream of any device. A call
// waits for the local stream, reads the local tensor, gathers every rank's copy (MPI_Allgather) and
// sums each element in rank order, ((x0 + x1) + x2) + ..., so every rank stores the same bits, the
// ones the in-process communicator's ALLREDUCE op gives. Behind the same AllReduceApi table:
// NpuDevice::proc("allreduce_comm_mpi").
#pragma once

#include <mpi.h>

#include <cstdint>
#include <span>

#include "npu/host/allreduce.hpp"

namespace tessel::npu {

class MpiCommunicator final : public AllReduceComm, public RowParts {
public:
    /// Joins MPI_COMM_WORLD with `stream` as this process's rank (MPI is initialised on first
    /// use, thread level FUNNELED, and finalised at exit). Throws tessel::Error(InvalidArgument)
    /// unless exactly one stream is given, Error(Device) when MPI cannot start.
    ///
    /// A rank that waits for the others longer than `timeout_ms` (TESSEL_NPU_TIMEOUT_MS: a rank
    /// that stopped taking part, e.g. one given other flags) prints the error and ends the whole job
    /// (MPI_Abort): in a collective there is no other way not to hang. A process whose MPI call failed
    /// ends the job the same way at exit instead of finalising, for the same reason.
    explicit MpiCommunicator(std::span<Backend* const> streams, uint32_t timeout_ms = 10000);
    /// Ranks of MPI_COMM_WORLD.
    size_t size() const override { return static_cast<size_t>(size_); }
    int rank() const override { return rank_; }
    /// RowParts: each rank's rows of every column go to every rank (MPI_Allgatherv).
    void gather_parts(const Tensor& t) override;
    /// Sums this rank's tensor (tensors[0]: F32, contiguous, its shape the same on every rank)
    /// over all ranks in place, after waiting for the stream's queued work; returns when every rank
    /// has contributed (a collective call: every rank must make it, in the same order). Both modes
    /// give the same sums, and `use` changes nothing (the sums always land in the tensors). Throws
    /// tessel::Error(InvalidArgument) naming the rank whose tensor
    /// differs in element count (every rank throws), Error(Device) naming the MPI call and its
    /// error when MPI fails (e.g. a peer that died).
    void allreduce(std::span<Tensor* const> tensors, AllReduceMode mode, AllReduceUse use = AllReduceUse::Tensors) override;

    int n_ranks() const override { return size_; }

private:
    /// Waits for `request` (a non-blocking collective); past the timeout, ends the job.
    void wait(MPI_Request& request, const char* call) const;

    Backend* stream_;
    uint32_t timeout_ms_;
    int rank_ = 0, size_ = 1;
};

/// The table of MpiCommunicator (init takes one stream: this process's).
const AllReduceApi& mpi_allreduce_api();

/// True when this process was started by mpirun with more than one rank (OpenMPI's
/// OMPI_COMM_WORLD_SIZE, or PMI_SIZE), without starting MPI.
bool launched_as_mpi_ranks();

}  // namespace tessel::npu
